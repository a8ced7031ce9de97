//! Each point's blueprint, written as a blueprint file (the format users write, read by
//! `run` as theirs is): the stock binary's modules only, so any binary built with them
//! runs it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Sweep, SweepOptions};
use crate::ScaleError;

/// The consumer sinks of a streams point that record their arrivals (latency): enough
/// for percentiles, few enough that the sweep measures streams and not file writes.
pub const STREAMS_RECORDED: u32 = 16;

/// The name of the process holding the producer(s).
pub const PRODUCER: &str = "producer";

/// Writes the blueprint of point (`series`, `size`) of `options`' sweep as
/// `dir/blueprint.yaml` (creating `dir`); its path.
pub fn write(
    options: &SweepOptions,
    series: &str,
    size: u32,
    dir: &Path,
) -> Result<PathBuf, ScaleError> {
    std::fs::create_dir_all(dir).map_err(|e| ScaleError::io(dir, e))?;
    let text = match options.sweep {
        Sweep::Consumers => consumers(series, size, options.consumer_processes, dir),
        Sweep::Streams => streams(size, dir),
        Sweep::Processes => processes(size),
    };
    let path = dir.join("blueprint.yaml");
    std::fs::write(&path, text).map_err(|e| ScaleError::io(&path, e))?;
    Ok(path)
}

/// A sink's arrivals file, as a YAML value.
fn record(dir: &Path, name: &str) -> String {
    // Debug-quoted: a path with spaces or colons stays one YAML string.
    format!(
        "{:?}",
        dir.join(format!("{name}.jsonl")).display().to_string()
    )
}

/// One 720p camera to `n` recording sinks over at most `processes` consumer processes;
/// `jpeg` compresses the links (one encode, a decode per consumer process).
pub fn consumers(series: &str, n: u32, processes: u32, dir: &Path) -> String {
    let mut text = String::new();
    if series == "jpeg" {
        text.push_str("compression: on\njpeg_quality: 75\nlossy_pixels: ignore\n");
    } else {
        text.push_str("compression: off\n");
    }
    text.push_str("instances:\n  camera: { type: SimCamera, width: 1280, height: 720, fps: 20 }\n");
    for i in 0..n {
        let _ = writeln!(
            text,
            "  sink_{i}: {{ type: RecordingSink, path: {} }}",
            record(dir, &format!("sink_{i}"))
        );
    }
    let _ = writeln!(text, "placement:\n  camera: {PRODUCER}");
    for i in 0..n {
        let _ = writeln!(text, "  sink_{i}: consumers_{}", i % processes.max(1));
    }
    text
}

/// `n` cameras of 5x4 rgb8 (60 B of pixels) at 100 Hz in the producer, each its own
/// stream `s_<i>` to one sink in `consumer`; the first [`STREAMS_RECORDED`] sinks record.
pub fn streams(n: u32, dir: &Path) -> String {
    let mut text = String::from("compression: off\ninstances:\n");
    for i in 0..n {
        let _ = writeln!(
            text,
            "  cam_{i}: {{ type: SimCamera, width: 5, height: 4, fps: 100 }}"
        );
        if i < STREAMS_RECORDED {
            let _ = writeln!(
                text,
                "  sink_{i}: {{ type: RecordingSink, path: {} }}",
                record(dir, &format!("sink_{i}"))
            );
        } else {
            let _ = writeln!(text, "  sink_{i}: {{ type: RecordingSink }}");
        }
    }
    text.push_str("placement:\n");
    for i in 0..n {
        let _ = writeln!(text, "  cam_{i}: {PRODUCER}\n  sink_{i}: consumer");
    }
    text.push_str("remap:\n");
    for i in 0..n {
        let _ = writeln!(
            text,
            "  cam_{i}: {{ color_image: s_{i} }}\n  sink_{i}: {{ color_image: s_{i} }}"
        );
    }
    text
}

/// `n` workers: a 32x24 camera at 10 fps in the producer and a sink in each of the
/// `n - 1` others (light traffic).
pub fn processes(n: u32) -> String {
    let mut text = String::from(
        "compression: off\ninstances:\n  camera: { type: SimCamera, width: 32, height: 24, fps: 10 }\n",
    );
    for i in 1..n {
        let _ = writeln!(text, "  sink_{i}: {{ type: RecordingSink }}");
    }
    let _ = writeln!(text, "placement:\n  camera: {PRODUCER}");
    for i in 1..n {
        let _ = writeln!(text, "  sink_{i}: worker_{i}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_spread_round_robin_and_jpeg_compresses() {
        let raw = consumers("raw", 3, 2, Path::new("/o"));
        assert!(raw.starts_with("compression: off\n"), "{raw}");
        assert!(raw.contains("  sink_2: consumers_0\n"), "{raw}");
        assert!(raw.contains("path: \"/o/sink_1.jsonl\""), "{raw}");
        let jpeg = consumers("jpeg", 1, 8, Path::new("/o"));
        assert!(jpeg.starts_with("compression: on\n"), "{jpeg}");
    }

    #[test]
    fn streams_are_remapped_one_to_one_and_only_some_record() {
        let text = streams(20, Path::new("/o"));
        assert!(text.contains("  cam_19: { color_image: s_19 }\n"), "{text}");
        assert!(
            text.contains("  sink_19: { color_image: s_19 }\n"),
            "{text}"
        );
        assert!(
            text.contains("  sink_19: { type: RecordingSink }\n"),
            "{text}"
        );
        assert_eq!(text.matches(".jsonl").count(), STREAMS_RECORDED as usize);
    }

    #[test]
    fn processes_have_one_producer_and_a_sink_each() {
        let text = processes(3);
        assert_eq!(text.matches("worker_").count(), 2, "{text}");
        assert!(text.contains("  camera: producer\n"), "{text}");
    }
}
