//! Our access units decoded by another decoder: PyAV 18.1.0 (its own FFmpeg's h264 decoder,
//! from `tests/h264_interop/requirements.txt`, installed by `.ci/run` into the git-ignored
//! `tests/h264_interop/.venv`) gives one frame per access unit, each within 0.1 dB of our
//! own decoder's PSNR against what the encoder was given (both compared as I420).
#![cfg(feature = "h264")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use streamwire_codec::h264::yuv::{self, I420};
use streamwire_codec::h264::{EncodeSettings, H264Decoder, H264Encoder};
use streamwire_codec::jpeg::{PixelFormat, PixelsRef, psnr};

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h264_interop")
}

/// The venv's Python with PyAV, or `None` (a skip; a failure under
/// `STREAMWIRE_REQUIRE=all`).
fn python() -> Option<PathBuf> {
    let python = interop_dir().join(".venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    streamwire_testdata::skip(format!(
        "{} is absent (python3 -m venv tests/h264_interop/.venv && tests/h264_interop/.venv/bin/pip install -r tests/h264_interop/requirements.txt)",
        python.display()
    ));
    None
}

/// A moving pattern with detail, 160x90 (90 is coded as 96 and cropped).
fn frame(width: u32, height: u32, index: u32) -> Vec<u8> {
    (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .flat_map(|(x, y)| {
            let (xs, ys) = (x + 3 * index, y + index);
            [
                (xs * 7 % 256) as u8,
                ((xs * ys) / 37 % 256) as u8,
                ((ys * 5 + xs) % 200) as u8,
            ]
        })
        .collect()
}

fn planes_bytes(planes: &I420) -> Vec<u8> {
    [&planes.y[..], &planes.u[..], &planes.v[..]].concat()
}

#[test]
fn pyav_decodes_every_access_unit_like_our_decoder() {
    let Some(python) = python() else { return };
    let (width, height, count) = (160u32, 90u32, 30u32);
    let settings = EncodeSettings {
        gop_seconds: 0.5,
        bitrate: 300_000,
        ..EncodeSettings::default()
    };
    let mut encoder = H264Encoder::new(settings).expect("valid settings");
    let mut decoder = H264Decoder::default();
    let (mut stream, mut originals, mut ours) = (Vec::new(), Vec::new(), Vec::new());
    for index in 0..count {
        let data = frame(width, height, index);
        let pixels = PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, &data)
            .expect("a valid layout");
        let encoded = encoder
            .encode(&pixels, u64::from(index) * 50_000_000)
            .expect("encodes");
        let mut original = I420::for_size(width, height);
        assert!(yuv::from_rgb(&pixels, &mut original));
        let original = planes_bytes(&original);
        let decoded = planes_bytes(&decoder.decode_i420(&encoded.data).expect("decodes"));
        ours.push(psnr(&decoded, &original).expect("same sizes"));
        originals.extend_from_slice(&original);
        stream.extend_from_slice(&encoded.data);
    }
    let dir = std::env::temp_dir().join(format!("streamwire-h264-pyav-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (stream_path, original_path) = (dir.join("stream.h264"), dir.join("original.yuv"));
    std::fs::write(&stream_path, &stream).expect("write stream");
    std::fs::write(&original_path, &originals).expect("write planes");
    let mut command = Command::new(python);
    command
        .arg(interop_dir().join("pyav_decode.py"))
        .args([&stream_path, &original_path])
        .args([width.to_string(), height.to_string()]);
    let out = streamwire_testdata::process::run_bounded(command, b"", Duration::from_secs(120));
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
    let text = String::from_utf8(out).expect("text");
    let mut lines = text.lines();
    let frames: usize = lines
        .next()
        .and_then(|l| l.parse().ok())
        .expect("frame count");
    let theirs: Vec<f64> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(|v| v.parse().expect("a PSNR"))
        .collect();
    assert_eq!(
        frames, count as usize,
        "PyAV decoded {frames} of {count} access units"
    );
    for (index, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert!(
            (a - b).abs() <= 0.1,
            "frame {index}: ours {a:.3} dB, PyAV {b:.3} dB"
        );
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "{count} access units ({} bytes): PyAV decoded {frames}, mean PSNR ours {:.2} dB, PyAV {:.2} dB",
        stream.len(),
        mean(&ours),
        mean(&theirs)
    );
}
