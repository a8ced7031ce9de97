//! The live status line of `run`, as a terminal shows it (indicatif's in-memory terminal).

use std::time::Duration;

use streamwire_cli::status_line;
use streamwire_core::Adaptation;
use streamwire_runtime::{CodecStats, InputStats, LinkStats, OutputStats, RunStats};

fn output(port: &str, stream: &str, published: u64) -> OutputStats {
    let mut o = OutputStats::default();
    o.port = port.to_owned();
    o.stream = stream.to_owned();
    o.published = published;
    o
}

fn link(from: &str, to: &str, stream: &str, bytes: u64) -> LinkStats {
    let mut l = LinkStats::default();
    l.from = from.to_owned();
    l.to = to.to_owned();
    l.stream = stream.to_owned();
    l.content_bytes = bytes;
    l
}

fn snapshot(elapsed_ms: u64, frames: u64, bytes: u64, dropped: u64) -> RunStats {
    let mut s = RunStats::default();
    s.elapsed = Duration::from_millis(elapsed_ms);
    s.outputs = vec![
        output("camera.color_image", "color_image", frames),
        output("detector.detections", "detections", frames / 2),
    ];
    s.links = vec![link(
        "camera.color_image",
        "viewer.frames",
        "color_image",
        bytes,
    )];
    let mut input = InputStats::default();
    input.port = "viewer.frames".to_owned();
    input.stream = "color_image".to_owned();
    input.dropped.queue_full = dropped;
    s.inputs = vec![input];
    s
}

#[test]
fn status_line_per_stream() {
    let before = snapshot(1_000, 20, 55_000_000, 0);
    let now = snapshot(2_000, 50, 137_800_000, 3);
    insta::assert_snapshot!(status_line(&before, &now), @"2.0 s | color_image 30.0/s 82.8 MB/s drops 3 | detections 15.0/s 0 B/s drops 0");
}

#[test]
fn status_line_shows_the_quality_a_budget_chose() {
    let before = snapshot(1_000, 20, 55_000_000, 0);
    let mut now = snapshot(2_000, 50, 137_800_000, 3);
    let mut encoder = CodecStats::default();
    encoder.stream = "color_image".to_owned();
    encoder.adaptation = Some(Adaptation {
        quality: 28,
        budget_bitrate: 6_400_000,
        ..Adaptation::default()
    });
    now.codecs = vec![encoder.clone()];
    insta::assert_snapshot!(status_line(&before, &now), @"2.0 s | color_image 30.0/s 82.8 MB/s drops 3 q28 | detections 15.0/s 0 B/s drops 0");
    encoder.adaptation = Some(Adaptation {
        quality: 20,
        width: Some(960),
        ..Adaptation::default()
    });
    now.codecs = vec![encoder];
    insta::assert_snapshot!(status_line(&before, &now), @"2.0 s | color_image 30.0/s 82.8 MB/s drops 3 q20@960px | detections 15.0/s 0 B/s drops 0");
}

#[test]
fn status_line_on_a_terminal() {
    let term = indicatif::InMemoryTerm::new(2, 120);
    let bar = indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::term_like(Box::new(term.clone())),
    );
    bar.set_style(indicatif::ProgressStyle::with_template("{msg}").unwrap());
    let before = snapshot(1_000, 20, 1_000, 0);
    bar.set_message(status_line(&before, &snapshot(1_500, 35, 2_000, 0)));
    bar.tick();
    bar.set_message(status_line(&before, &snapshot(2_000, 50, 3_000, 1)));
    bar.tick();
    // The line is redrawn in place: one line on the screen, the latest.
    insta::assert_snapshot!(term.contents(), @"2.0 s | color_image 30.0/s 2.0 KB/s drops 1 | detections 15.0/s 0 B/s drops 0");
    bar.finish_and_clear();
}
