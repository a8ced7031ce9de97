//! The replay source, on frames the tests write into temporary folders, timed with the
//! harness's manual clock.

use std::path::Path;
use std::time::Duration;

use streamwire::engines::jpeg::{self, EncodeOptions, PixelFormat, PixelsRef};
use streamwire::prelude::*;
use streamwire_modules::replay::{ReplayError, ReplaySource};

/// Frame `i`'s solid grey level: the frame's identity, readable after a JPEG round trip.
fn level(i: usize) -> u8 {
    (20 + i * 7 % 200) as u8
}

#[expect(clippy::unwrap_used, reason = "test helper")]
fn jpeg_bytes(width: u32, height: u32, value: u8) -> Vec<u8> {
    let data = vec![value; width as usize * height as usize * 3];
    let pixels =
        PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, &data).unwrap();
    jpeg::encode(&pixels, &EncodeOptions::default())
        .unwrap()
        .data
}

#[expect(clippy::unwrap_used, reason = "test helper")]
fn write_jpegs(dir: &Path, n: usize, width: u32, height: u32) {
    for i in 0..n {
        std::fs::write(
            dir.join(format!("{i:06}.jpg")),
            jpeg_bytes(width, height, level(i)),
        )
        .unwrap();
    }
}

#[expect(clippy::unwrap_used, reason = "test helper")]
fn write_timestamps(dir: &Path, times: &[f64]) {
    let mut text = String::from("# frame_index filename t_seconds\n");
    for (i, t) in times.iter().enumerate() {
        text.push_str(&format!("{i} {i:06}.jpg {t:.3}\n"));
    }
    std::fs::write(dir.join("timestamps.txt"), text).unwrap();
}

fn source(dir: &Path) -> ReplaySource {
    ReplaySource {
        dir: dir.to_owned(),
        ..ReplaySource::default()
    }
}

/// Steps the harness every `step_ms` up to `until_ms` after its start; returns the frames
/// published with their grey levels.
#[expect(clippy::unwrap_used, reason = "test helper")]
fn play(harness: &mut Harness<ReplaySource>, step_ms: u64, until_ms: u64) -> Vec<Delivered<Image>> {
    let ports = harness.ports();
    let mut out = Vec::new();
    let mut t = 0;
    loop {
        harness.run_until_idle().unwrap();
        out.extend(harness.take(ports.color_image));
        if t >= until_ms || harness.is_finished() {
            break;
        }
        harness.clock().advance(Duration::from_millis(step_ms));
        t += step_ms;
    }
    out
}

fn levels(frames: &[Delivered<Image>]) -> Vec<u8> {
    frames.iter().map(|f| f.message.data()[0]).collect()
}

const START: u64 = 1_000_000_000;

#[test]
fn frames_play_in_order_at_their_recorded_times() {
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 5, 32, 24);
    let times = [0.0, 0.1, 0.2, 0.35, 0.5];
    write_timestamps(dir.path(), &times);
    let mut harness = Harness::new(source(dir.path()));
    let frames = play(&mut harness, 10, 1000);
    assert_eq!(frames.len(), 5);
    let expected: Vec<u8> = (0..5).map(level).collect();
    for (got, want) in levels(&frames).iter().zip(&expected) {
        assert!(got.abs_diff(*want) <= 2, "{got} vs {want}");
    }
    for (frame, t) in frames.iter().zip(times) {
        let due = START + (t * 1e9).round() as u64;
        // Published on the first poll at or after its time, stamped with that time.
        assert_eq!(frame.header.publish_time.as_nanos(), due);
        assert_eq!(frame.message.stamp().as_nanos(), due);
        assert_eq!((frame.message.width(), frame.message.height()), (32, 24));
    }
    assert!(harness.is_finished(), "a replay without loop finishes");
    assert_eq!(harness.counter("published"), 5);
    assert_eq!(harness.counter("skipped_late"), 0);
}

#[test]
fn without_timestamps_the_fps_is_required_and_used() {
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 3, 16, 16);
    let err = source(dir.path()).scan().unwrap_err();
    assert!(matches!(err, ReplayError::NoRate { .. }));
    let text = err.to_string();
    assert!(
        text.contains("fps") && text.contains("timestamps.txt"),
        "{text}"
    );
    let mut harness = Harness::new(ReplaySource {
        fps: Some(10.0),
        ..source(dir.path())
    });
    let frames = play(&mut harness, 50, 1000);
    let times: Vec<u64> = frames
        .iter()
        .map(|f| f.header.publish_time.as_nanos() - START)
        .collect();
    assert_eq!(times, [0, 100_000_000, 200_000_000]);
}

#[test]
fn loop_rate_offset_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 4, 16, 16);
    write_timestamps(dir.path(), &[0.0, 0.1, 0.2, 0.3]);
    let mut harness = Harness::new(ReplaySource {
        looping: true,
        rate: 2.0,
        start_offset_s: 0.1,
        limit: Some(7),
        ..source(dir.path())
    });
    let frames = play(&mut harness, 10, 2000);
    // Frames 1, 2, 3 then again 1, 2, 3, 1: every 50 ms at twice the speed.
    let want: Vec<u8> = [1, 2, 3, 1, 2, 3, 1].into_iter().map(level).collect();
    let got = levels(&frames);
    assert_eq!(got.len(), 7);
    for (g, w) in got.iter().zip(&want) {
        assert!(g.abs_diff(*w) <= 2, "{got:?} vs {want:?}");
    }
    let times: Vec<u64> = frames
        .iter()
        .map(|f| (f.header.publish_time.as_nanos() - START) / 1_000_000)
        .collect();
    assert_eq!(times, [0, 50, 100, 150, 200, 250, 300]);
}

#[test]
fn the_ring_stays_under_its_memory_cap_on_a_larger_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (64u32, 48u32);
    let frame_bytes = (w * h * 3) as u64;
    write_jpegs(dir.path(), 30, w, h);
    let cap = 3 * frame_bytes;
    let mut harness = Harness::new(ReplaySource {
        fps: Some(20.0),
        memory_cap_bytes: cap,
        ..source(dir.path())
    });
    harness.start().unwrap();
    // Give the decoder every chance to overfill before playback starts.
    std::thread::sleep(Duration::from_millis(200));
    let frames = play(&mut harness, 50, 5000);
    assert_eq!(frames.len(), 30, "every frame played");
    let peak = harness
        .module()
        .playback
        .as_ref()
        .unwrap()
        .peak_buffered_bytes() as u64;
    assert!(peak <= cap, "peak {peak} over the cap {cap}");
    assert!(peak >= frame_bytes);
    assert!(
        30 * frame_bytes > 3 * cap,
        "the folder is larger than the cap"
    );
    assert_eq!(harness.counter("ring_peak_bytes"), peak);
}

#[test]
fn falling_behind_skips_to_the_clock_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 10, 16, 16);
    let mut harness = Harness::new(ReplaySource {
        fps: Some(10.0),
        ..source(dir.path())
    });
    let ports = harness.ports();
    harness.run_until_idle().unwrap();
    assert_eq!(levels(&harness.take(ports.color_image)).len(), 1);
    // A 450 ms stall: frames 1-3 are late (their successors are due too); 4 is on time.
    harness.clock().advance(Duration::from_millis(450));
    harness.run_until_idle().unwrap();
    let frames = harness.take(ports.color_image);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].message.data()[0].abs_diff(level(4)) <= 2);
    assert_eq!(harness.counter("skipped_late"), 3);
    let rest = play(&mut harness, 50, 2000);
    assert_eq!(rest.len(), 5, "frames 5-9");
    assert_eq!(harness.counter("published"), 7);
}

#[test]
fn a_corrupt_frame_is_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 5, 16, 16);
    std::fs::write(dir.path().join("000002.jpg"), b"\xFF\xD8 not a jpeg at all").unwrap();
    let mut harness = Harness::new(ReplaySource {
        fps: Some(10.0),
        ..source(dir.path())
    });
    let frames = play(&mut harness, 50, 2000);
    let got = levels(&frames);
    let want: Vec<u8> = [0, 1, 3, 4].into_iter().map(level).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!(g.abs_diff(*w) <= 2);
    }
    assert_eq!(harness.counter("unreadable"), 1);
    assert_eq!(harness.counter("published"), 4);
}

#[test]
fn odd_sized_jpeg_and_png_folders_replay() {
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 3, 720, 405);
    let mut harness = Harness::new(ReplaySource {
        fps: Some(20.0),
        ..source(dir.path())
    });
    let frames = play(&mut harness, 50, 1000);
    assert_eq!(frames.len(), 3);
    for f in &frames {
        assert_eq!((f.message.width(), f.message.height()), (720, 405));
    }

    let dir = tempfile::tempdir().unwrap();
    for i in 0..2u8 {
        let file = std::fs::File::create(dir.path().join(format!("frame_{i}.png"))).unwrap();
        let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), 33, 17);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(&vec![i * 50; 33 * 17 * 3]).unwrap();
    }
    let mut harness = Harness::new(ReplaySource {
        fps: Some(20.0),
        ..source(dir.path())
    });
    let frames = play(&mut harness, 50, 1000);
    assert_eq!(frames.len(), 2);
    assert_eq!(
        (frames[1].message.width(), frames[1].message.height()),
        (33, 17)
    );
    assert_eq!(frames[1].message.data()[0], 50, "PNG is exact");
}

#[test]
fn pass_through_publishes_the_files_bytes() {
    // In a blueprint, so that the bytes reach an input that asked for them.
    use streamwire_modules::sinks::ByteConsumer;
    let dir = tempfile::tempdir().unwrap();
    write_jpegs(dir.path(), 4, 40, 30);
    let total: u64 = (0..4)
        .map(|i| {
            std::fs::metadata(dir.path().join(format!("{i:06}.jpg")))
                .unwrap()
                .len()
        })
        .sum();
    let png_dir = tempfile::tempdir().unwrap();
    std::fs::write(png_dir.path().join("0.png"), b"x").unwrap();
    let err = ReplaySource {
        pass_through: true,
        fps: Some(1.0),
        ..source(png_dir.path())
    }
    .scan()
    .unwrap_err();
    assert!(
        matches!(err, ReplayError::PassThroughNeedsJpeg { .. }),
        "{err}"
    );

    let mut bp = Blueprint::new();
    bp.add(
        "replay",
        ReplaySource {
            fps: Some(20.0),
            pass_through: true,
            ..source(dir.path())
        },
    );
    bp.add("bytes", ByteConsumer::default());
    bp.autoconnect();
    let report = bp
        .run(RunOptions::default())
        .unwrap()
        .wait_timeout(Duration::from_secs(2));
    let text = report.to_string();
    assert!(text.contains(&format!("bytes={total}")), "{text}");
    assert!(text.contains("decoded=4"), "{text}");
    assert!(text.contains("published=4"), "{text}");
}

#[test]
fn the_real_frames_replay_at_their_recorded_rate() {
    let data = streamwire_testdata::dir();
    let frames_dir = data.join("cockatoo_720p/frames");
    if !frames_dir.is_dir() {
        streamwire_testdata::skip(format!(
            "the real data is not at {} (set STREAMWIRE_DATA)",
            data.display()
        ));
        return;
    }
    let replay = ReplaySource {
        limit: Some(4),
        ..source(&frames_dir)
    };
    let schedule = replay.scan().unwrap();
    assert!(schedule.recorded, "timestamps.txt of the parent folder");
    assert_eq!(schedule.frames.len(), streamwire_testdata::COCKATOO_FRAMES);
    let mut harness = Harness::new(replay);
    let frames = play(&mut harness, 10, 1000);
    assert_eq!(frames.len(), 4);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(
            f.header.publish_time.as_nanos(),
            START + i as u64 * 50_000_000
        );
        assert_eq!((f.message.width(), f.message.height()), (1280, 720));
    }
}

/// Steps the harness every 50 ms of its clock, for at most `until_ms`, until a step fails:
/// that failure.
#[expect(clippy::unwrap_used, reason = "test helper")]
fn play_until_error(harness: &mut Harness<ReplaySource>, until_ms: u64) -> Option<String> {
    harness.start().unwrap();
    let mut t = 0;
    while t <= until_ms && !harness.is_finished() {
        if let Err(error) = harness.run_until_idle() {
            return Some(streamwire::log::chain(&error).to_string());
        }
        harness.clock().advance(Duration::from_millis(50));
        t += 50;
    }
    None
}

/// A looping replay of a folder whose every frame is unreadable ends with its error after
/// `max_consecutive_failures` of them in a row, instead of counting forever (and growing
/// its ring by an entry per failure).
#[test]
fn an_all_unreadable_replay_ends_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        std::fs::write(
            dir.path().join(format!("{i:06}.jpg")),
            b"\xFF\xD8 not a jpeg",
        )
        .unwrap();
    }
    let mut harness = Harness::new(ReplaySource {
        fps: Some(10.0),
        looping: true,
        max_consecutive_failures: 12,
        ..source(dir.path())
    });
    // 60 s of the run clock: 600 frame slots, far more than the 12 allowed.
    let error = play_until_error(&mut harness, 60_000).expect("the replay ended with an error");
    assert!(
        error.contains("12 frames in a row were unreadable (`max_consecutive_failures`)"),
        "{error}"
    );
    // The failures before the last were counted as usual, one per slot.
    assert_eq!(harness.counter("unreadable"), 11);
    assert_eq!(harness.counter("published"), 0);
}

/// A FIFO among the frames is refused without being opened: its writer's bytes are all
/// still in it afterwards (a read would have taken them, an open would have waited for
/// this writer), and the replay ends with the reason.
#[cfg(target_os = "linux")]
#[test]
fn a_fifo_frame_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("000000.jpg");
    let mut held = streamwire_testdata::fifo::Fifo::holding(&fifo, b"frame bytes").unwrap();

    let mut harness = Harness::new(ReplaySource {
        fps: Some(10.0),
        max_consecutive_failures: 1,
        ..source(dir.path())
    });
    let error = play_until_error(&mut harness, 10_000).expect("the replay ended with an error");
    assert!(
        error.contains("is a FIFO, not a regular file: refused without reading it"),
        "{error}"
    );
    assert_eq!(held.left(), b"frame bytes", "the replay read from the FIFO");
}
