//! The live status line of `run`: per stream, rate, bandwidth and drops since the last
//! line, and the quality an encoder under a bit-rate budget has chosen.

use std::collections::BTreeMap;

use streamwire_runtime::RunStats;

/// One line, from two snapshots of the same run (`before`, then `now`): the elapsed time,
/// then per stream its message rate, its in-process bandwidth (payload bytes over its
/// links) and the messages its inputs dropped so far; for a stream whose encoder keeps a
/// bit-rate budget, the quality it encodes at now (`q28`, with the width when it narrowed
/// the frames: `q20@960px`).
///
/// ```
/// # use streamwire_runtime::RunStats;
/// let line = streamwire_cli::status_line(&RunStats::default(), &RunStats::default());
/// assert_eq!(line, "0.0 s | no streams yet");
/// ```
pub fn status_line(before: &RunStats, now: &RunStats) -> String {
    let dt = now.elapsed.saturating_sub(before.elapsed).as_secs_f64();
    let mut streams: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for o in &now.outputs {
        let old = before
            .outputs
            .iter()
            .find(|b| b.port == o.port)
            .map_or(0, |b| b.published);
        streams.entry(&o.stream).or_default().0 += o.published.saturating_sub(old);
    }
    for l in &now.links {
        let old = before
            .links
            .iter()
            .find(|b| b.from == l.from && b.to == l.to)
            .map_or(0, |b| b.content_bytes);
        if let Some(entry) = streams.get_mut(l.stream.as_str()) {
            entry.1 += l.content_bytes.saturating_sub(old);
        }
    }
    for i in &now.inputs {
        if let Some(entry) = streams.get_mut(i.stream.as_str()) {
            entry.2 += i.dropped.total();
        }
    }
    let mut line = format!("{:.1} s", now.elapsed.as_secs_f64());
    if streams.is_empty() {
        line.push_str(" | no streams yet");
        return line;
    }
    for (stream, (messages, bytes, drops)) in streams {
        let (rate, bandwidth) = if dt > 0.0 {
            (messages as f64 / dt, bytes as f64 / dt)
        } else {
            (0.0, 0.0)
        };
        line.push_str(&format!(
            " | {stream} {rate:.1}/s {}/s drops {drops}",
            human_bytes(bandwidth)
        ));
        let adaptations = now
            .codecs
            .iter()
            .filter(|c| c.stream == stream)
            .filter_map(|c| c.adaptation.as_ref());
        for adaptation in adaptations {
            line.push_str(&format!(" q{}", adaptation.quality));
            if let Some(width) = adaptation.width {
                line.push_str(&format!("@{width}px"));
            }
        }
    }
    line
}

fn human_bytes(value: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = value;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
