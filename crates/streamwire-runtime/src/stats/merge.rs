//! Putting the reports of a run's processes together: [`RunStats::merge`] appends another
//! process's rows, [`RunStats::add_wire_terms`] puts what a sender counted before the wire
//! on its consumers' rows, and [`RunReport::merge`] makes one report of a distributed
//! run. Apart from the snapshot types because only a distributed run needs it.

use streamwire_core::DropReason;

use super::{EndReason, InputStats, RunReport, RunStats, WireDirection, WireStats};

impl RunStats {
    /// Adds the counters of `other` (another process's share of the same run): the longer
    /// elapsed time, every other row appended. Every field is named here, so a field added
    /// to `RunStats` does not compile until it is merged too.
    pub fn merge(&mut self, other: RunStats) {
        let RunStats {
            elapsed,
            instances,
            outputs,
            inputs,
            links,
            codecs,
            taps,
            wire,
            buffers,
            threads,
        } = other;
        self.elapsed = self.elapsed.max(elapsed);
        self.instances.extend(instances);
        self.outputs.extend(outputs);
        self.inputs.extend(inputs);
        self.links.extend(links);
        self.codecs.extend(codecs);
        self.taps.extend(taps);
        self.wire.extend(wire);
        self.buffers.extend(buffers);
        self.threads.extend(threads);
    }
}

impl RunStats {
    /// Adds to every input whose messages crossed between processes the terms its
    /// sender counted before the wire (`sender_dropped`, the drops relayed from codec
    /// nodes there, messages it could not serialize as `deserialize_failed`, not sent,
    /// unprocessed at stop), once, where the sender's row is in
    /// these stats: a message lost anywhere on a consumer's path is on its row.
    pub fn add_wire_terms(&mut self) {
        let RunStats { inputs, wire, .. } = self;
        for input in inputs.iter_mut().filter(|i| !i.wire_terms_added) {
            let Some(key) = input.via_wire.clone() else {
                continue;
            };
            // Handed on inside its host (`@host/<host>/<stream>`): what the stream's own
            // sender lost before the wire was lost to this input too.
            let upstream = upstream_of_forwarded(&key);
            for key in std::iter::once(key.as_str()).chain(upstream) {
                if let Some(sender) = wire
                    .iter()
                    .find(|w| w.direction == WireDirection::Out && w.key == key)
                {
                    add_sender_terms(input, sender);
                    input.wire_terms_added = true;
                }
            }
        }
    }
}

/// The stream of a forwarded key (`@host/<host>/<stream>` gives `<stream>`).
fn upstream_of_forwarded(key: &str) -> Option<&str> {
    let rest = key
        .strip_prefix(streamwire_graph::FORWARDED_PREFIX)?
        .strip_prefix('/')?;
    Some(rest.split_once('/')?.1)
}

/// Adds to `input` the terms `sender` counted before the wire.
fn add_sender_terms(input: &mut InputStats, sender: &WireStats) {
    let dropped = &mut input.dropped;
    dropped.sender_dropped += sender.sender_dropped;
    for reason in DropReason::ALL {
        let n = dropped.get(reason) + sender.dropped_upstream.get(reason);
        dropped.set(reason, n);
    }
    // A message the sender could not serialize never reached the wire.
    dropped.deserialize_failed += sender
        .rejected
        .iter()
        .filter(|(kind, _)| kind == "undecodable")
        .map(|(_, n)| n)
        .sum::<u64>();
    // What it recovered from the stream's history is on the sender's not-sent
    // count (published while nobody listened), but was delivered.
    input.unmatched += sender.unmatched.saturating_sub(input.recovered);
    input.unprocessed_at_stop += sender.unprocessed_at_stop;
}

impl RunReport {
    /// One report of a run whose processes each reported apart (a distributed run's
    /// workers), given as (process, report): it ended for `reason` with `failure`; its
    /// stragglers are `stragglers` followed by each process's own, suffixed
    /// ` (in {process})`; its counters are every process's, merged by
    /// [`RunStats::merge`]. The processes' own reasons and failures are not read: the
    /// caller, who saw the whole run, decides those.
    pub fn merge(
        reason: EndReason,
        failure: Option<String>,
        mut stragglers: Vec<String>,
        reports: impl IntoIterator<Item = (String, RunReport)>,
    ) -> RunReport {
        let mut stats = RunStats::default();
        for (process, report) in reports {
            stats.merge(report.stats);
            stragglers.extend(
                report
                    .stragglers
                    .into_iter()
                    .map(|thread| format!("{thread} (in {process})")),
            );
        }
        stats.add_wire_terms();
        RunReport::new(reason, failure, stragglers, stats)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::stats::*;

    /// The counters of one process, every field non-zero and marked with `n` (each
    /// struct is written out whole: a new field must be given a value here).
    fn stats_of(n: u64, process: &str) -> RunStats {
        let d = |k: u64| Duration::from_millis(n * 10 + k);
        RunStats {
            elapsed: d(0),
            instances: vec![InstanceStats {
                name: format!("camera{n}"),
                module_type: "Camera".to_owned(),
                steps: n,
                cpu: d(1),
                longest_step: d(2),
                stalled: true,
                finished: true,
                failed: true,
                process: process.to_owned(),
                host: format!("host{n}"),
                rate: Some(RateStats {
                    configured_hz: n as f64,
                    reached_hz: n as f64 / 2.0,
                }),
                counters: vec![("frames".to_owned(), n)],
            }],
            outputs: vec![OutputStats {
                port: format!("camera{n}.image"),
                stream: format!("image{n}"),
                published: n,
            }],
            inputs: vec![InputStats {
                port: format!("viewer{n}.image"),
                stream: format!("image{n}"),
                delivered: n,
                dropped: DropCounts {
                    queue_full: n,
                    unpaired: n + 1,
                    decode_failed: n + 2,
                    deserialize_failed: n + 3,
                    codec_queue_full: n + 4,
                    sender_dropped: n + 5,
                    lost_on_wire: n + 6,
                },
                unmatched: n + 7,
                unprocessed_at_stop: n + 8,
                in_flight_at_stop: n + 9,
                recovered: n + 10,
                via_wire: Some(format!("image{n}/compressed")),
                wire_terms_added: true,
                latency: LatencySummary {
                    count: n,
                    p50: d(3),
                    p99: d(4),
                    max: d(5),
                    clock_skew: n,
                },
            }],
            links: vec![LinkStats {
                from: format!("camera{n}.image"),
                to: format!("viewer{n}.image"),
                stream: format!("image{n}"),
                messages: n,
                content_bytes: n * 100,
                crosses_processes: true,
            }],
            codecs: vec![CodecStats {
                role: CodecRole::Decode,
                codec: "jpeg".to_owned(),
                stream: format!("image{n}"),
                placement: process.to_owned(),
                done: n,
                skipped: n + 1,
                dropped: n + 2,
                passed_through: n + 3,
                failed: n + 4,
                bytes_in: n + 5,
                bytes_out: n + 6,
                busy: d(6),
                adaptation: None,
            }],
            taps: vec![TapStats {
                stream: format!("image{n}"),
                attached: true,
                delivered: n,
                dropped: n + 1,
            }],
            wire: vec![WireStats {
                partition: process.to_owned(),
                key: format!("image{n}"),
                direction: WireDirection::In,
                frames: n,
                wire_bytes: n + 1,
                unmatched: n + 2,
                sender_dropped: n + 3,
                lost: n + 4,
                resets: n + 9,
                foreign: n + 10,
                dropped_upstream: DropCounts {
                    codec_queue_full: n + 5,
                    ..DropCounts::default()
                },
                unprocessed_at_stop: n + 6,
                in_flight_at_stop: n + 7,
                rejected: vec![("garbage".to_owned(), n)],
                receive_copies: n + 8,
                shared_memory: n + 11,
                sent_by_producer: true,
                batches: n + 9,
                batched: n + 10,
                tap: Some(TapWire {
                    id: n,
                    attached: true,
                }),
                resubscribed: n + 12,
            }],
            buffers: vec![BufferStats {
                name: format!("camera{n}.image"),
                shared: n,
                pooled: n + 1,
                loan_fallback: n + 2,
                hits: n + 3,
                misses: n + 4,
                bytes: n + 5,
            }],
            threads: vec![ThreadStats {
                name: format!("camera{n}"),
                kind: ThreadKind::Codec,
                process: process.to_owned(),
                woken: n,
            }],
        }
    }

    #[test]
    fn merging_reports_keeps_every_field_of_every_process() {
        let (a, b) = (stats_of(1, "host/a"), stats_of(2, "host/b"));
        let report = |stats: &RunStats, straggler: &str| {
            RunReport::new(
                EndReason::Finished,
                Some(format!("{straggler} failed")),
                vec![straggler.to_owned()],
                stats.clone(),
            )
        };
        let merged = RunReport::merge(
            EndReason::Failed,
            Some("worker host/b died".to_owned()),
            vec!["host/c".to_owned()],
            [
                ("host/a".to_owned(), report(&a, "camera1")),
                ("host/b".to_owned(), report(&b, "camera2")),
            ],
        );
        let RunReport {
            reason,
            failure,
            stragglers,
            stats,
            silent_links,
        } = merged;
        assert!(silent_links.is_empty(), "the coordinator adds them");
        // The caller's verdict, not the workers'.
        assert_eq!(reason, EndReason::Failed);
        assert_eq!(failure.as_deref(), Some("worker host/b died"));
        assert_eq!(
            stragglers,
            ["host/c", "camera1 (in host/a)", "camera2 (in host/b)"]
        );
        // Every field, named: a new one must be checked here to compile.
        let RunStats {
            elapsed,
            instances,
            outputs,
            inputs,
            links,
            codecs,
            taps,
            wire,
            buffers,
            threads,
        } = stats;
        // The longer of the two (process b's).
        assert_eq!(elapsed, Duration::from_millis(20));
        assert_eq!(instances, [a.instances, b.instances].concat());
        assert_eq!(outputs, [a.outputs, b.outputs].concat());
        assert_eq!(inputs, [a.inputs, b.inputs].concat());
        assert_eq!(links, [a.links, b.links].concat());
        assert_eq!(codecs, [a.codecs, b.codecs].concat());
        assert_eq!(taps, [a.taps, b.taps].concat());
        assert_eq!(wire, [a.wire, b.wire].concat());
        assert_eq!(buffers, [a.buffers, b.buffers].concat());
        assert_eq!(threads, [a.threads, b.threads].concat());
    }

    #[test]
    fn merging_stats_into_a_snapshot_keeps_its_rows_first() {
        let mut merged = stats_of(3, "host/a");
        merged.merge(stats_of(1, "host/b"));
        assert_eq!(merged.elapsed, Duration::from_millis(30));
        assert_eq!(merged.instances[0].name, "camera3");
        assert_eq!(merged.instances[1].name, "camera1");
        assert_eq!(merged.wire[1].partition, "host/b");
    }
}
