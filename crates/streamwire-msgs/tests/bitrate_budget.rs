//! The JPEG codec's bit-rate budget (`max_bitrate`) on the 280 real 1280x720 camera
//! frames, stamped by a manual clock at the recording's 20 fps: the encoded bits over
//! every two-second window after the first stay under the budget, the quality stays
//! within its bounds, and every change of setting is counted.
//!
//! These tests FAIL (never skip) when the data is missing; see `streamwire_testdata`.

#![expect(clippy::unwrap_used, reason = "test helpers")]

use std::time::Duration;

use streamwire::runtime::{Clock, ManualClock};
use streamwire_codec::jpeg::{JpegDecoder, PixelFormat};
use streamwire_core::{Codec, CodecParams, Timestamp};
use streamwire_msgs::{Image, ImageEncoding, Jpeg};
use streamwire_testdata as data;

const WINDOW: Duration = Duration::from_secs(2);

/// The recording's frame interval, from its timestamps file (a constant 50 ms).
fn frame_interval() -> Duration {
    let text =
        std::fs::read_to_string(data::require_dir().join("cockatoo_720p/timestamps.txt")).unwrap();
    let seconds: Vec<f64> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(seconds.len(), data::COCKATOO_FRAMES);
    Duration::from_secs_f64(seconds[seconds.len() - 1] / (seconds.len() - 1) as f64)
}

fn frames() -> Vec<Image> {
    let decoder = JpegDecoder::default();
    (0..data::COCKATOO_FRAMES)
        .map(|index| {
            let mut pixels = Vec::new();
            decoder
                .decode_into(
                    &data::read(&data::cockatoo_frame(index)),
                    PixelFormat::Rgb8,
                    &mut pixels,
                )
                .unwrap();
            Image::from_packed(1280, 720, ImageEncoding::Rgb8, pixels).unwrap()
        })
        .collect()
}

/// One encoded frame: its stamp, its size, the setting it was encoded with and the
/// width of the JPEG itself.
struct Sent {
    stamp: Timestamp,
    bytes: usize,
    setting: (u8, Option<u32>),
    jpeg_width: u32,
}

/// Encodes `rounds` passes over the frames, the clock advancing one frame interval each.
fn encode_all(jpeg: &Jpeg, frames: &[Image], rounds: usize) -> Vec<Sent> {
    let clock = ManualClock::new(Timestamp::from_nanos(1_000_000_000));
    let interval = frame_interval();
    let decoder = JpegDecoder::default();
    let mut sent = Vec::new();
    for image in frames.iter().cycle().take(frames.len() * rounds) {
        let stamp = clock.now();
        let compressed = Codec::<Image>::encode(jpeg, &image.clone().with_stamp(stamp)).unwrap();
        let adaptation = jpeg.adaptation().unwrap();
        let header = decoder.read_header(compressed.data()).unwrap();
        sent.push(Sent {
            stamp,
            bytes: compressed.data().len(),
            setting: (adaptation.quality, adaptation.width),
            jpeg_width: header.width,
        });
        clock.advance(interval);
    }
    sent
}

/// Bits per second over the window ending at each frame, for the frames after the first
/// window: every window the budget is judged by.
fn window_bitrates(sent: &[Sent]) -> Vec<u64> {
    let window = u64::try_from(WINDOW.as_nanos()).unwrap();
    let first = sent[0].stamp.as_nanos();
    sent.iter()
        .filter(|s| s.stamp.as_nanos() >= first + window)
        .map(|end| {
            let start = end.stamp.as_nanos() - window;
            let bytes: usize = sent
                .iter()
                .filter(|s| s.stamp.as_nanos() > start && s.stamp <= end.stamp)
                .map(|s| s.bytes)
                .sum();
            (bytes as u64) * 8 * 1_000_000_000 / window
        })
        .collect()
}

fn jpeg_with(params: &str) -> Jpeg {
    Jpeg::from_params(&params.parse::<CodecParams>().unwrap()).unwrap()
}

/// What every budgeted run must show: windows under the budget, the controller's own
/// worst window equal to the one measured here, qualities within bounds, every change
/// of setting counted.
fn assert_budget_held(jpeg: &Jpeg, sent: &[Sent], budget: u64, (min_q, max_q): (u8, u8)) {
    let windows = window_bitrates(sent);
    let worst = windows.iter().copied().max().unwrap();
    assert!(
        worst <= budget,
        "worst 2 s window {worst} bit/s over the budget {budget}"
    );
    let adaptation = jpeg.adaptation().unwrap();
    assert_eq!(adaptation.worst_window_bitrate, Some(worst));
    assert!(
        sent.iter().all(|s| (min_q..=max_q).contains(&s.setting.0)),
        "a quality outside {min_q}..={max_q}"
    );
    let mut previous = (max_q, None);
    let mut observed_changes = 0;
    for s in sent {
        observed_changes += u64::from(s.setting != previous);
        previous = s.setting;
    }
    assert!(observed_changes > 0);
    assert_eq!(adaptation.changes, observed_changes);
    assert_eq!(adaptation.history.len() as u64, observed_changes + 1);
}

#[test]
fn the_quality_adapts_to_keep_the_real_camera_under_its_budget() {
    let frames = frames();
    // At q75 these frames average 42.4 KB, 6.8 Mbit/s at 20 fps; 6 Mbit/s needs q45 or
    // so (the size falls slowly with quality on these frames: q20 is still 23 KB).
    let jpeg = jpeg_with("jpeg_quality=75, max_bitrate=6M, min_quality=20");
    let sent = encode_all(&jpeg, &frames, 2);
    assert_budget_held(&jpeg, &sent, 6_000_000, (20, 75));
    // Quality does most of the work: most frames keep their full width.
    let full = sent.iter().filter(|s| s.jpeg_width == 1280).count();
    assert!(
        full > sent.len() * 3 / 4,
        "{full} of {} frames at full width",
        sent.len()
    );
    let after_first_window = &sent[sent.len() / 4..];
    let mean = after_first_window
        .iter()
        .map(|s| f64::from(s.setting.0))
        .sum::<f64>()
        / after_first_window.len() as f64;
    println!(
        "6 Mbit/s: mean quality {mean:.1} after the first quarter, {} changes, worst window {:?} bit/s",
        jpeg.adaptation().unwrap().changes,
        jpeg.adaptation().unwrap().worst_window_bitrate,
    );
    // Not starved either: the budget is used, not wasted.
    let windows = window_bitrates(&sent);
    let median = {
        let mut sorted = windows.clone();
        sorted.sort_unstable();
        sorted[sorted.len() / 2]
    };
    assert!(
        median >= 3_500_000,
        "median window {median} bit/s: the budget is wasted"
    );
}

#[test]
fn under_the_quality_floor_the_width_narrows() {
    let frames = frames();
    // 1 Mbit/s is 6 KB a frame: under q20 at 1280 pixels (23 KB), so narrower.
    let jpeg = jpeg_with("jpeg_quality=60, max_bitrate=1Mbit/s, min_quality=20");
    let sent = encode_all(&jpeg, &frames, 1);
    assert_budget_held(&jpeg, &sent, 1_000_000, (20, 60));
    let narrowed = sent.iter().filter(|s| s.jpeg_width < 1280).count();
    assert!(
        narrowed > sent.len() / 2,
        "{narrowed} of {} frames narrowed",
        sent.len()
    );
    for s in &sent {
        assert_eq!(Some(s.jpeg_width).filter(|&w| w < 1280), s.setting.1);
    }
}

#[test]
fn a_budget_the_stream_fits_changes_nothing() {
    let frames = frames();
    let jpeg = jpeg_with("max_bitrate=50M");
    let sent = encode_all(&jpeg, &frames[..60], 1);
    assert!(sent.iter().all(|s| s.setting == (75, None)));
    assert_eq!(jpeg.adaptation().unwrap().changes, 0);
}
