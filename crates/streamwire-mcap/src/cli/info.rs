//! `info`: what an MCAP file holds (topics, types, counts, rates) and what a replay of it
//! plays on which output.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use streamwire_cli::{Cli, CommandContext};

/// `info` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// An MCAP file: a streamwire recording or a rosbag2 bag's `.mcap`.
    file: PathBuf,
    /// The replay's remap table, as `run --replay-map` takes it
    /// (`/camera/color/image_raw/compressed=color_image`, comma separated or repeated).
    #[arg(long, value_name = "TOPIC=OUTPUT")]
    replay_map: Vec<String>,
}

/// Prints what `args.file` holds.
pub(crate) fn run(
    _cli: &Cli,
    args: &Args,
    cx: &mut CommandContext<'_>,
) -> anyhow::Result<ExitCode> {
    let source = crate::McapSource {
        path: args.file.clone(),
        topic_map: crate::parse_topic_map(&args.replay_map.join(","))?,
        ..crate::McapSource::default()
    };
    let (inventory, map) = source
        .prepare()
        .with_context(|| format!("cannot inspect {}", args.file.display()))?;
    write!(
        cx.out,
        "{}",
        render(&args.file.display().to_string(), &inventory, &map)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The file's summary, one row per topic, then what is cut short.
fn render(name: &str, inventory: &crate::Inventory, map: &crate::TopicMap) -> String {
    use std::fmt::Write as _;
    let first = inventory.topics.iter().map(|t| t.span.0).min().unwrap_or(0);
    let last = inventory.topics.iter().map(|t| t.span.1).max().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: profile `{}`, {} topics, {} messages over {:.2} s",
        inventory.profile,
        inventory.topics.len(),
        inventory.messages,
        (last - first) as f64 / 1e9
    );
    let rows: Vec<[String; 6]> = inventory
        .topics
        .iter()
        .map(|t| {
            let app = t.encodings.1 == crate::app::MESSAGE_ENCODING;
            let replay = match (map.mapped.get(&t.topic), map.skipped.get(&t.topic)) {
                (Some(output), _) => format!("-> {}", output.name()),
                // An application's message: its own program replays it (`AppReplay`).
                (None, Some(_)) if app => "its application's type (AppReplay)".to_owned(),
                (None, Some(reason)) => format!("skipped ({reason})"),
                (None, None) => "skipped".to_owned(),
            };
            [
                t.topic.clone(),
                t.ros_type.clone(),
                format!("{}/{}", t.encodings.0, t.encodings.1),
                t.count.to_string(),
                t.rate_hz()
                    .map_or_else(|| "-".to_owned(), |hz| format!("{hz:.1}")),
                replay,
            ]
        })
        .collect();
    let header = ["topic", "type", "encoding", "messages", "rate Hz", "replay"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut line = |cells: [&str; 6]| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            // Counts and rates right-aligned, the rest left; the last column unpadded.
            let _ = match i {
                3 | 4 => write!(text, "{cell:>width$}  "),
                5 => write!(text, "{cell}"),
                _ => write!(text, "{cell:<width$}  "),
            };
        }
        let _ = writeln!(out, "  {}", text.trim_end());
    };
    line(header);
    for row in &rows {
        line(row.each_ref().map(String::as_str));
    }
    if let Some(reason) = &inventory.cut_short {
        let _ = writeln!(
            out,
            "cut short: read up to the last complete chunk ({reason})"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{Inventory, TopicStats, map_topics};

    use super::render;

    #[test]
    fn info_lists_topics_and_what_replays_them() {
        let topic = |topic: &str, ros_type: &str, count: u64, span: (u64, u64)| TopicStats {
            topic: topic.to_owned(),
            ros_type: ros_type.to_owned(),
            encodings: ("ros2msg".to_owned(), "cdr".to_owned()),
            count,
            span,
        };
        let s = 1_000_000_000;
        let inventory = Inventory {
            profile: "ros2".to_owned(),
            topics: vec![
                topic(
                    "/camera/color/image_raw/compressed",
                    "sensor_msgs/msg/CompressedImage",
                    201,
                    (0, 10 * s),
                ),
                topic("/odom", "nav_msgs/msg/Odometry", 501, (0, 10 * s)),
                topic("/tf", "tf2_msgs/msg/TFMessage", 1, (s, s)),
                topic("/chatter", "std_msgs/msg/String", 11, (0, 10 * s)),
                TopicStats {
                    encodings: ("jsonschema".to_owned(), "json".to_owned()),
                    ..topic("/stereo", "acme/StereoPair", 100, (0, 10 * s))
                },
            ],
            messages: 814,
            cut_short: Some("unexpected end of file".to_owned()),
        };
        let topics: Vec<(String, String)> = inventory
            .topics
            .iter()
            .map(|t| (t.topic.clone(), t.ros_type.clone()))
            .collect();
        let map = map_topics(&topics, &BTreeMap::new()).expect("map");
        insta::assert_snapshot!(render("bag.mcap", &inventory, &map));
    }
}
