//! The snapshot and the report as tables a person reads (`Display` of
//! [`RunStats`](super::RunStats) and [`RunReport`](super::RunReport)): one method per
//! table, over the shared column layout of `table`. Apart from the types so that their
//! fields read without the printing around them.

use std::fmt::{self, Write as _};
use std::time::Duration;

use super::{RateStats, RunReport, RunStats, WireDirection, WireStats};

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "run {} after {}", self.reason, ms(self.stats.elapsed))?;
        if let Some(failure) = &self.failure {
            writeln!(f, "failure: {failure}")?;
        }
        if let Some(overrun) = self.stop_overrun() {
            writeln!(f, "{overrun}")?;
        }
        write!(f, "{}", self.stats)
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

/// Bits per second, in Mbit/s.
fn bitrate(bits: u64) -> String {
    format!("{:.2} Mbit/s", bits as f64 / 1e6)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Writes rows as left-aligned columns under a title.
fn table(out: &mut String, title: &str, header: &[&str], rows: &[Vec<String>]) {
    if rows.is_empty() {
        return;
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::from("  ");
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<w$}  ");
            }
        }
        text.trim_end().to_owned()
    };
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "{}", line(header.to_vec()));
    for row in rows {
        let _ = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
    }
}

impl RunStats {
    /// The instances table.
    fn write_instances(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .instances
            .iter()
            .map(|i| {
                let mut state = match (i.failed, i.finished) {
                    (true, _) => "failed",
                    (false, true) => "finished",
                    (false, false) => "running",
                }
                .to_owned();
                if i.stalled {
                    state.push_str(", STALLED");
                }
                if let Some(rate) = i.rate.filter(RateStats::is_below) {
                    let _ = write!(
                        state,
                        ", BELOW RATE {:.1} of {:.1} Hz",
                        rate.reached_hz, rate.configured_hz
                    );
                }
                let counters = i
                    .counters
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                vec![
                    i.name.clone(),
                    i.module_type.clone(),
                    i.process.clone(),
                    i.host.clone(),
                    i.steps.to_string(),
                    ms(i.cpu),
                    ms(i.longest_step),
                    state,
                    counters,
                ]
            })
            .collect();
        table(
            out,
            "instances",
            &[
                "instance",
                "module",
                "process",
                "host",
                "steps",
                "cpu",
                "longest step",
                "state",
                "counters",
            ],
            &rows,
        );
    }

    /// The outputs table.
    fn write_outputs(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .outputs
            .iter()
            .map(|o| vec![o.port.clone(), o.stream.clone(), o.published.to_string()])
            .collect();
        table(out, "outputs", &["output", "stream", "published"], &rows);
    }

    /// The inputs table.
    fn write_inputs(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .inputs
            .iter()
            .map(|i| {
                vec![
                    i.port.clone(),
                    i.stream.clone(),
                    i.delivered.to_string(),
                    i.dropped.to_string(),
                    i.unmatched.to_string(),
                    i.unprocessed_at_stop.to_string(),
                    i.in_flight_at_stop.to_string(),
                    ms(i.latency.p50),
                    ms(i.latency.p99),
                    i.latency.clock_skew.to_string(),
                ]
            })
            .collect();
        table(
            out,
            "inputs",
            &[
                "input",
                "stream",
                "delivered",
                "dropped",
                "not sent",
                "unprocessed at stop",
                "in flight at stop",
                "latency p50",
                "p99",
                "clock skew",
            ],
            &rows,
        );
    }

    /// The links table: content bytes, each row saying whether it crosses processes
    /// (the wire bytes of a crossing are in the wire table).
    fn write_links(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .links
            .iter()
            .map(|l| {
                vec![
                    format!("{} -> {}", l.from, l.to),
                    l.stream.clone(),
                    l.messages.to_string(),
                    format!("{} content", bytes(l.content_bytes)),
                    if l.crosses_processes {
                        "across processes"
                    } else {
                        "in process"
                    }
                    .to_owned(),
                ]
            })
            .collect();
        table(
            out,
            "links",
            &["link", "stream", "messages", "bytes", "path"],
            &rows,
        );
    }

    /// The codec nodes table.
    fn write_codecs(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .codecs
            .iter()
            .map(|c| {
                vec![
                    format!("{} {}", c.role, c.codec),
                    c.stream.clone(),
                    c.placement.clone(),
                    c.done.to_string(),
                    c.skipped.to_string(),
                    c.dropped.to_string(),
                    c.passed_through.to_string(),
                    c.failed.to_string(),
                    bytes(c.bytes_in),
                    bytes(c.bytes_out),
                    ms(c.time_per_message()),
                ]
            })
            .collect();
        table(
            out,
            "codec nodes",
            &[
                "node", "stream", "where", "done", "skipped", "dropped", "passed", "failed", "in",
                "out", "per msg",
            ],
            &rows,
        );
    }

    /// The bit-rate budgets: where each adaptive encoder stands (listed only when one
    /// has a budget).
    fn write_budgets(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .codecs
            .iter()
            .filter_map(|c| Some((c, c.adaptation.as_ref()?)))
            .map(|(c, a)| {
                vec![
                    c.stream.clone(),
                    c.placement.clone(),
                    bitrate(a.budget_bitrate),
                    a.quality.to_string(),
                    a.width.map_or_else(|| "full".to_owned(), |w| w.to_string()),
                    a.changes.to_string(),
                    bitrate(a.window_bitrate),
                    a.worst_window_bitrate
                        .map_or_else(|| "-".to_owned(), bitrate),
                ]
            })
            .collect();
        table(
            out,
            "bit-rate budgets (quality and width now; windows of 2 s on the frames' stamps, the worst after the first)",
            &[
                "stream",
                "where",
                "budget",
                "quality",
                "width",
                "changes",
                "last window",
                "worst window",
            ],
            &rows,
        );
    }

    /// The taps table.
    fn write_taps(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .taps
            .iter()
            .map(|t| {
                vec![
                    t.stream.clone(),
                    if t.attached { "attached" } else { "detached" }.to_owned(),
                    t.delivered.to_string(),
                    t.dropped.to_string(),
                ]
            })
            .collect();
        table(
            out,
            "taps",
            &["stream", "state", "delivered", "dropped"],
            &rows,
        );
    }

    /// The wire table (between partitions).
    fn write_buffers(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .buffers
            .iter()
            .map(|b| {
                vec![
                    b.name.clone(),
                    b.shared.to_string(),
                    b.pooled.to_string(),
                    b.loan_fallback.to_string(),
                    b.hits.to_string(),
                    b.misses.to_string(),
                    bytes(b.bytes),
                ]
            })
            .collect();
        table(
            out,
            "buffers (loans of large messages, pools)",
            &[
                "output or pool",
                "shared",
                "pooled",
                "loan fallback",
                "pool hits",
                "pool misses",
                "pool bytes",
            ],
            &rows,
        );
    }

    fn write_wire(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .wire
            .iter()
            .map(|w| {
                let problems = w
                    .rejected
                    .iter()
                    .map(|(k, n)| (k.as_str(), *n))
                    .chain([("reset", w.resets), ("foreign", w.foreign)])
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| format!("{k}={n}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                vec![
                    w.partition.clone(),
                    match (w.direction, w.tap) {
                        (WireDirection::Out, _) => "out".to_owned(),
                        (WireDirection::In, None) => "in".to_owned(),
                        // A tap's own ingress (the taps table's row of that number).
                        (WireDirection::In, Some(tap)) => format!(
                            "in (tap {}{})",
                            tap.id,
                            if tap.attached { "" } else { ", detached" }
                        ),
                    },
                    w.key.clone(),
                    w.frames.to_string(),
                    bytes(w.wire_bytes),
                    w.unmatched.to_string(),
                    w.sender_dropped.to_string(),
                    w.dropped_upstream.total().to_string(),
                    w.unprocessed_at_stop.to_string(),
                    w.lost.to_string(),
                    w.in_flight_at_stop.to_string(),
                    if problems.is_empty() {
                        "-".to_owned()
                    } else {
                        problems
                    },
                ]
            })
            .collect();
        table(
            out,
            "wire (between partitions: frames, wire bytes)",
            &[
                "partition",
                "dir",
                "key",
                "frames",
                "bytes",
                "unmatched",
                "sender dropped",
                "dropped upstream",
                "unprocessed at stop",
                "lost",
                "in flight at stop",
                "rejected, reset, foreign",
            ],
            &rows,
        );
        // Lines under the table, each naming the rows it is about (none: no line).
        let mut note = |title: &str, describe: &dyn Fn(&WireStats) -> Option<String>| {
            let items: Vec<String> = self.wire.iter().filter_map(describe).collect();
            if !items.is_empty() {
                let _ = writeln!(out, "{title}: {}", items.join(", "));
            }
        };
        note(
            "subscribed again (a tap's ingress the coordinator found silent)",
            &|w| {
                (w.resubscribed > 0).then(|| {
                    let tap = w
                        .tap
                        .map(|t| format!(" (tap {})", t.id))
                        // infallible: a planned link's row has no tap to name
                        .unwrap_or_default();
                    format!("{} {}{tap} {}", w.partition, w.key, w.resubscribed)
                })
            },
        );
        note(
            "copied once on receipt (spread over several received slices)",
            &|w| {
                (w.receive_copies > 0)
                    .then(|| format!("{} {} {}", w.partition, w.key, w.receive_copies))
            },
        );
        note(
            "received through shared memory (by reference, from this host)",
            &|w| {
                (w.direction == WireDirection::In && w.shared_memory > 0)
                    .then(|| format!("{} {} {}", w.partition, w.key, w.shared_memory))
            },
        );
        note(
            "sent by reference (put from shared memory, no copy)",
            &|w| {
                (w.direction == WireDirection::Out && w.shared_memory > 0)
                    .then(|| format!("{} {} {}", w.partition, w.key, w.shared_memory))
            },
        );
        note("sent in batches (small messages waiting together)", &|w| {
            (w.batches > 0).then(|| {
                format!(
                    "{} {} {} frames in {} batches",
                    w.partition, w.key, w.batched, w.batches
                )
            })
        });
        note(
            "put on the wire by the producer's thread (keep-last, no sender thread)",
            &|w| {
                w.sent_by_producer
                    .then(|| format!("{} {}", w.partition, w.key))
            },
        );
    }

    fn write_threads(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .threads
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.kind.to_string(),
                    t.process.clone(),
                    t.woken.to_string(),
                ]
            })
            .collect();
        table(
            out,
            "threads (woken: times an idle thread was woken to look for work)",
            &["thread", "kind", "process", "woken"],
            &rows,
        );
    }
}

impl fmt::Display for RunStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_instances(&mut out);
        self.write_outputs(&mut out);
        self.write_inputs(&mut out);
        self.write_links(&mut out);
        self.write_codecs(&mut out);
        self.write_budgets(&mut out);
        self.write_taps(&mut out);
        self.write_wire(&mut out);
        self.write_buffers(&mut out);
        self.write_threads(&mut out);
        f.write_str(&out)
    }
}
