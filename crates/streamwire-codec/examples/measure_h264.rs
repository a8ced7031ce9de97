//! PSNR against bit rate on the real 1280x720 cockatoo frames (the JPEG frames of the shared
//! data, decoded: a source that favours JPEG, since its blocks are already JPEG's): JPEG at
//! qualities 30..95, our H.264 (OpenH264, complexity low) at 0.5..8 Mbit/s, and, when
//! `tests/h264_interop/.venv` holds PyAV, libx264's `veryfast` preset at the same bit rates
//! (`tests/h264_interop/x264_psnr.py`). Every PSNR is over rgb8 against the decoded source;
//! encode and decode times are CPU time of this thread per frame. Not a test: figures.
//!
//! ```text
//! cargo run --release -p streamwire-codec --features h264 --example measure_h264 [-- FRAMES]
//! ```
//!
//! FRAMES (default 60) consecutive frames at 20 fps, one keyframe every 2 s.

use std::path::Path;
use std::process::Command;

use streamwire_codec::h264::{EncodeSettings, H264Decoder, H264Encoder};
use streamwire_codec::jpeg::{EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, encode, psnr};
use streamwire_testdata as data;

const FPS: f64 = 20.0;

fn cpu_ms() -> f64 {
    cpu_time::ThreadTime::now().as_duration().as_secs_f64() * 1e3
}

fn pixels(frame: &[u8]) -> PixelsRef<'_> {
    PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, frame).expect("a 1280x720 frame")
}

fn jpeg_row(frames: &[Vec<u8>], quality: u8) {
    let decoder = JpegDecoder::default();
    let (mut bytes, mut db) = (0usize, 0.0);
    for frame in frames {
        let options = EncodeOptions {
            quality,
            ..EncodeOptions::default()
        };
        let file = encode(&pixels(frame), &options).expect("encodes").data;
        let back = decoder.decode(&file, PixelFormat::Rgb8).expect("decodes");
        bytes += file.len();
        db += psnr(&back.data, frame).unwrap_or_default();
    }
    let n = frames.len() as f64;
    let mbps = bytes as f64 * 8.0 * FPS / n / 1e6;
    println!(
        "jpeg    q{quality:<3}        {mbps:>7.2} Mbit/s  {:>6.2} dB",
        db / n
    );
}

fn h264_row(frames: &[Vec<u8>], bitrate: u32) {
    let settings = EncodeSettings {
        bitrate,
        frame_rate: FPS as f32,
        ..EncodeSettings::default()
    };
    let mut encoder = H264Encoder::new(settings).expect("valid settings");
    let mut decoder = H264Decoder::default();
    let (mut bytes, mut db, mut encode_ms, mut decode_ms) = (0usize, 0.0, 0.0, 0.0);
    let mut out = Vec::new();
    for (index, frame) in frames.iter().enumerate() {
        let start = cpu_ms();
        let unit = encoder
            .encode(&pixels(frame), (index as f64 * 1e9 / FPS) as u64)
            .expect("encodes");
        let middle = cpu_ms();
        decoder
            .decode_rgb(&unit.data, PixelFormat::Rgb8, None, &mut out)
            .expect("decodes");
        decode_ms += cpu_ms() - middle;
        encode_ms += middle - start;
        bytes += unit.data.len();
        db += psnr(&out, frame).unwrap_or_default();
    }
    let n = frames.len() as f64;
    let mbps = bytes as f64 * 8.0 * FPS / n / 1e6;
    println!(
        "h264    {:>5.1} Mbit/s  {mbps:>7.2} Mbit/s  {:>6.2} dB  encode {:.1} ms  decode {:.1} ms (CPU, incl. colour conversion)",
        f64::from(bitrate) / 1e6,
        db / n,
        encode_ms / n,
        decode_ms / n
    );
}

fn main() {
    if !data::dir().is_dir() {
        println!(
            "skipped: the shared data is not at {}",
            data::dir().display()
        );
        return;
    }
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(60);
    let decoder = JpegDecoder::default();
    let frames: Vec<Vec<u8>> = (0..count.min(data::COCKATOO_FRAMES))
        .map(|index| {
            let mut rgb = Vec::new();
            decoder
                .decode_into(
                    &data::read(&data::cockatoo_frame(index)),
                    PixelFormat::Rgb8,
                    &mut rgb,
                )
                .expect("a real frame decodes");
            rgb
        })
        .collect();
    println!("{} frames of 1280x720 at {FPS} fps", frames.len());
    println!("codec   setting         bit rate        PSNR");
    for quality in [30, 50, 75, 90, 95] {
        jpeg_row(&frames, quality);
    }
    let bitrates = [500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000];
    for bitrate in bitrates {
        h264_row(&frames, bitrate);
    }
    x264_rows(&frames, &bitrates);
}

/// libx264 through PyAV, on the same frames (written raw to a temporary file).
fn x264_rows(frames: &[Vec<u8>], bitrates: &[u32]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h264_interop");
    let python = dir.join(".venv/bin/python");
    if !python.exists() {
        println!("libx264: skipped, {} is absent", python.display());
        return;
    }
    let raw = std::env::temp_dir().join(format!("streamwire-x264-{}.rgb", std::process::id()));
    std::fs::write(&raw, frames.concat()).expect("write frames");
    let rates: Vec<String> = bitrates.iter().map(ToString::to_string).collect();
    let output = Command::new(python)
        .arg(dir.join("x264_psnr.py"))
        .arg(&raw)
        .args(["1280", "720", &FPS.to_string()])
        .args(&rates)
        .output();
    let _ = std::fs::remove_file(&raw);
    match output {
        Ok(output) => print!("{}", String::from_utf8_lossy(&output.stdout)),
        Err(error) => println!("libx264: {error}"),
    }
}
