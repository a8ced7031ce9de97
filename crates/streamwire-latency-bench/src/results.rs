//! What a phase measured, and the suite's rows: latency percentiles, throughput, the
//! table people read and the CSV of the reference method.

use std::fmt::Write as _;
use std::time::Duration;

use crate::modules;

/// One measurement the pinger (or a baseline) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Phase {
    pub(crate) size: usize,
    pub(crate) kind: PhaseKind,
    /// Round trips, or the burst's messages.
    pub(crate) samples: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PhaseKind {
    Latency,
    Throughput,
}

/// What one phase measured.
#[derive(Clone, Debug)]
pub(crate) struct PhaseResult {
    phase: Phase,
    /// Round trips in nanoseconds (latency phases).
    round_trips: Vec<u64>,
    /// Round trips given up, or burst messages never acknowledged.
    lost: u64,
    /// The phase's wall time (latency), first send to last ack (throughput).
    elapsed: Duration,
    /// Acks received (throughput).
    acks: u64,
}

impl PhaseResult {
    pub(crate) fn latency(
        phase: Phase,
        round_trips: Vec<u64>,
        elapsed: Duration,
        lost: u64,
    ) -> PhaseResult {
        PhaseResult {
            phase,
            round_trips,
            lost,
            elapsed,
            acks: 0,
        }
    }

    pub(crate) fn throughput(phase: Phase, acks: u64, elapsed: Duration) -> PhaseResult {
        PhaseResult {
            phase,
            round_trips: Vec::new(),
            lost: (phase.samples as u64).saturating_sub(acks),
            elapsed,
            acks,
        }
    }
}

/// Latency figures of one row, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub avg: u64,
    /// Median.
    pub p50: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Round trips given up after a second (counted, then sent again).
    pub lost: u64,
}

impl Latency {
    /// The figures of `samples` (nanoseconds), each divided by `divisor` (2: one way of
    /// a round trip). Percentiles by nearest rank. `None` without samples.
    pub fn of(samples: &[u64], divisor: u64, lost: u64) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted: Vec<u64> = samples.iter().map(|s| s / divisor.max(1)).collect();
        sorted.sort_unstable();
        let n = sorted.len();
        let rank = |q: f64| {
            let index = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            sorted[index]
        };
        let sum: u128 = sorted.iter().map(|&s| u128::from(s)).sum();
        Some(Latency {
            n,
            avg: u64::try_from(sum / n as u128).unwrap_or(u64::MAX),
            p50: rank(0.50),
            p95: rank(0.95),
            p99: rank(0.99),
            p999: rank(0.999),
            min: sorted[0],
            max: sorted[n - 1],
            lost,
        })
    }
}

/// Throughput figures of one row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throughput {
    /// Messages acknowledged.
    pub n: u64,
    /// Messages of the burst never acknowledged.
    pub lost: u64,
    /// Acknowledged messages per second.
    pub msg_per_sec: f64,
    /// First send to last ack.
    pub elapsed: Duration,
}

/// What a row's messages cross between the pinger and the echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Link {
    /// Threads of one process.
    InProcess,
    /// Two partitions of one process, through the loopback transport.
    Loopback,
    /// Two processes, TCP on 127.0.0.1, shared memory off.
    Tcp,
    /// TCP, with zenoh's shared memory on at both ends.
    TcpShm,
    /// Two processes, mutual TLS on 127.0.0.1 (a closed run), shared memory off.
    Tls,
    /// Mutual TLS, with shared memory on at both ends.
    TlsShm,
    /// Two processes, shared memory alone: no network stack (iceoryx2).
    Shm,
}

impl Link {
    /// Its name in the table: the link, and `+shm` where shared memory is on.
    pub fn name(self) -> &'static str {
        match self {
            Link::InProcess => "in-process",
            Link::Loopback => "loopback",
            Link::Tcp => "tcp",
            Link::TcpShm => "tcp+shm",
            Link::Tls => "tls",
            Link::TlsShm => "tls+shm",
            Link::Shm => "shm",
        }
    }
}

/// One payload size through one transport.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The transport's label (`zenoh`, `bare-zenoh-fifo`, ...).
    pub label: String,
    /// What its messages cross.
    pub link: Link,
    /// Payload bytes.
    pub size: usize,
    /// Latency (one way, or the chain's whole loop).
    pub latency: Option<Latency>,
    /// Throughput, where measured.
    pub throughput: Option<Throughput>,
}

/// What the suite measured.
#[derive(Clone, Debug, Default)]
pub struct Suite {
    /// Round trips asked for per size.
    pub samples: usize,
    /// One per (label, size), in the order measured.
    pub rows: Vec<Row>,
    /// What was not measured, and why.
    pub notes: Vec<String>,
}

pub(crate) fn rows_of(label: &str, link: Link, results: &[PhaseResult], divisor: u64) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for result in results {
        let index = match rows.iter().position(|r| r.size == result.phase.size) {
            Some(index) => index,
            None => {
                rows.push(Row {
                    label: label.to_owned(),
                    link,
                    size: result.phase.size,
                    latency: None,
                    throughput: None,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[index];
        match result.phase.kind {
            PhaseKind::Latency => {
                row.latency = Latency::of(&result.round_trips, divisor, result.lost);
            }
            PhaseKind::Throughput => {
                let seconds = result.elapsed.as_secs_f64();
                row.throughput = Some(Throughput {
                    n: result.acks,
                    lost: result.lost,
                    msg_per_sec: if seconds > 0.0 {
                        result.acks as f64 / seconds
                    } else {
                        0.0
                    },
                    elapsed: result.elapsed,
                });
            }
        }
    }
    rows
}

fn micros(nanos: u64) -> String {
    format!("{:.1}", nanos as f64 / 1000.0)
}

/// A size for people: `0 B`, `64 B`, `4 KiB`, `2.76 MB` (the image), `4 MiB`.
pub fn size_label(size: usize) -> String {
    match size {
        2_764_800 => "2.76 MB".to_owned(),
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

impl Suite {
    /// The rows as CSV in the format of the reference method: a `latency` line per row
    /// with latency and a `throughput` line per row with throughput.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            if let Some(l) = &row.latency {
                let _ = writeln!(
                    out,
                    "latency,{},{},{},{},{},{},{},{},{},{}",
                    row.size, row.label, l.n, l.avg, l.p50, l.p95, l.p99, l.p999, l.min, l.max
                );
            }
        }
        for row in &self.rows {
            if let Some(t) = &row.throughput {
                let _ = writeln!(
                    out,
                    "throughput,{},{},{},{:.1},{},0,0,0,0,0",
                    row.size,
                    row.label,
                    t.n,
                    t.msg_per_sec,
                    t.elapsed.as_nanos()
                );
            }
        }
        out
    }

    fn find(&self, label: &str, size: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.label == label && r.size == size)
    }

    /// `label`'s p50 over `baseline`'s, per size both measured.
    fn ratios(&self, label: &str, baseline: &str) -> Vec<(usize, f64)> {
        let mut sizes: Vec<usize> = self.rows.iter().map(|r| r.size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
            .into_iter()
            .filter_map(|size| {
                let ours = self.find(label, size)?.latency?.p50;
                let theirs = self.find(baseline, size)?.latency?.p50;
                (theirs > 0).then(|| (size, ours as f64 / theirs as f64))
            })
            .collect()
    }

    fn throughput_ratios(&self, label: &str, baseline: &str) -> Vec<(usize, f64)> {
        let mut out = Vec::new();
        for row in self.rows.iter().filter(|r| r.label == label) {
            let (Some(ours), Some(theirs)) = (
                row.throughput,
                self.find(baseline, row.size).and_then(|r| r.throughput),
            ) else {
                continue;
            };
            if theirs.msg_per_sec > 0.0 {
                out.push((row.size, ours.msg_per_sec / theirs.msg_per_sec));
            }
        }
        out
    }
}

/// The p50 ratios the table states: each streamwire row over the best bare row of its
/// link (TCP over bare zenoh's callback and FIFO; shared memory over the bare loan, which
/// puts what the pinger puts, and the heap put), against iceoryx2 (the physical limit of
/// a hand-off between two processes: shared memory alone), then what TLS, shared memory,
/// the worker path and busy-waiting cost.
const PAIRS: [(&str, &str, &str); 16] = [
    (
        "zenoh-insecure",
        "bare-zenoh-callback",
        "zenoh-insecure / bare zenoh (callback only), both tcp",
    ),
    (
        "zenoh-insecure",
        "bare-zenoh-fifo",
        "zenoh-insecure / bare zenoh (FIFO + recv thread), both tcp",
    ),
    (
        "zenoh-shm-insecure",
        "bare-zenoh-shm-loan",
        "zenoh-shm-insecure / bare zenoh shm loan, both tcp+shm",
    ),
    (
        "zenoh-shm-insecure",
        "bare-zenoh-shm-fifo",
        "zenoh-shm-insecure / bare zenoh shm heap put, both tcp+shm",
    ),
    (
        "zenoh",
        "zenoh-insecure",
        "zenoh / zenoh-insecure (tls / tcp)",
    ),
    (
        "zenoh-shm",
        "zenoh-shm-insecure",
        "zenoh-shm / zenoh-shm-insecure (tls+shm / tcp+shm)",
    ),
    ("zenoh-shm", "zenoh", "zenoh-shm / zenoh (tls+shm / tls)"),
    (
        "zenoh-insecure",
        "zenoh-direct",
        "zenoh-insecure / zenoh-direct (the worker path / the transport alone)",
    ),
    (
        "zenoh-shm-insecure",
        "zenoh-shm-direct",
        "zenoh-shm-insecure / zenoh-shm-direct (the worker path / the transport alone)",
    ),
    (
        "zenoh-shm-insecure",
        "iceoryx2",
        "zenoh-shm-insecure / iceoryx2 (tcp+shm through the workers / shm alone, no network stack)",
    ),
    (
        "zenoh-shm",
        "iceoryx2",
        "zenoh-shm / iceoryx2 (tls+shm through the workers / shm alone)",
    ),
    (
        "bare-zenoh-shm-loan",
        "iceoryx2",
        "bare zenoh shm loan / iceoryx2 (tcp+shm / shm alone)",
    ),
    (
        "iceoryx2-busy",
        "iceoryx2",
        "iceoryx2 busy-wait / iceoryx2 event-driven",
    ),
    ("in-process", "bare-channel", "in-process / bare channel"),
    ("loopback", "in-process", "loopback / in-process"),
    (
        "chain16-zenoh",
        "chain16-in-process",
        "chain16 zenoh / in-process",
    ),
];

/// The throughput ratios the table states.
const THROUGHPUT_PAIRS: [(&str, &str, &str); 5] = [
    (
        "zenoh-insecure",
        "bare-zenoh-fifo",
        "zenoh-insecure / bare zenoh (FIFO), both tcp",
    ),
    (
        "zenoh-shm-insecure",
        "bare-zenoh-shm-loan",
        "zenoh-shm-insecure / bare zenoh shm loan, both tcp+shm",
    ),
    (
        "zenoh-shm-insecure",
        "bare-zenoh-shm-fifo",
        "zenoh-shm-insecure / bare zenoh shm heap put, both tcp+shm",
    ),
    (
        "zenoh-shm-insecure",
        "iceoryx2",
        "zenoh-shm-insecure / iceoryx2 (tcp+shm through the workers / shm alone)",
    ),
    (
        "bare-zenoh-shm-loan",
        "iceoryx2",
        "bare zenoh shm loan / iceoryx2 (tcp+shm / shm alone)",
    ),
];

impl std::fmt::Display for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "latency in us: one way (half a round trip, the payload travelling both ways), \
             chain16: the whole loop (17 links); {} samples per size asked, after {} warm-up \
             round trips",
            self.samples,
            modules::WARMUP
        )?;
        writeln!(
            f,
            "{:>8}  {:<20} {:<10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>5}",
            "size",
            "transport",
            "link",
            "n",
            "avg",
            "p50",
            "p95",
            "p99",
            "p99.9",
            "min",
            "max",
            "msg/s",
            "lost"
        )?;
        for row in &self.rows {
            let (n, cells, lost_rt) = match &row.latency {
                Some(l) => (
                    l.n.to_string(),
                    [l.avg, l.p50, l.p95, l.p99, l.p999, l.min, l.max].map(micros),
                    l.lost,
                ),
                None => ("-".to_owned(), std::array::from_fn(|_| "-".to_owned()), 0),
            };
            let (rate, lost) = match &row.throughput {
                Some(t) => (format!("{:.0}", t.msg_per_sec), t.lost + lost_rt),
                None => ("-".to_owned(), lost_rt),
            };
            writeln!(
                f,
                "{:>8}  {:<20} {:<10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>5}",
                size_label(row.size),
                row.label,
                row.link.name(),
                n,
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                cells[5],
                cells[6],
                rate,
                lost
            )?;
        }
        writeln!(
            f,
            "lost: round trips given up after 1 s (sent again) plus burst messages never acknowledged"
        )?;
        for (label, baseline, title) in PAIRS {
            let ratios = self.ratios(label, baseline);
            if ratios.is_empty() {
                continue;
            }
            let cells: Vec<String> = ratios
                .iter()
                .map(|(size, r)| format!("{} {r:.2}x", size_label(*size)))
                .collect();
            writeln!(f, "p50 {title}: {}", cells.join(", "))?;
        }
        for (label, baseline, title) in THROUGHPUT_PAIRS {
            let ratios = self.throughput_ratios(label, baseline);
            if ratios.is_empty() {
                continue;
            }
            let cells: Vec<String> = ratios
                .iter()
                .map(|(size, r)| format!("{} {r:.2}x", size_label(*size)))
                .collect();
            writeln!(f, "msg/s {title}: {}", cells.join(", "))?;
        }
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SIZES;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<u64> = (1..=1000).map(|i| i * 2).collect();
        let l = Latency::of(&samples, 2, 3).expect("samples");
        assert_eq!((l.n, l.min, l.max, l.lost), (1000, 1, 1000, 3));
        assert_eq!((l.p50, l.p95, l.p99, l.p999), (500, 950, 990, 999));
        assert_eq!(l.avg, 500);
        assert!(Latency::of(&[], 2, 0).is_none());
    }

    #[test]
    fn ten_sizes_from_nothing_to_four_megabytes() {
        assert_eq!(SIZES.len(), 10);
        assert_eq!(SIZES[0], 0);
        assert_eq!(SIZES[9], 4 << 20);
        assert!(SIZES.contains(&2_764_800));
        assert!(SIZES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn csv_lines_have_the_reference_columns() {
        let suite = Suite {
            samples: 3,
            rows: rows_of(
                "zenoh",
                Link::Tcp,
                &[
                    PhaseResult::latency(
                        Phase {
                            size: 64,
                            kind: PhaseKind::Latency,
                            samples: 3,
                        },
                        vec![2000, 4000, 6000],
                        Duration::from_millis(1),
                        0,
                    ),
                    PhaseResult::throughput(
                        Phase {
                            size: 64,
                            kind: PhaseKind::Throughput,
                            samples: 10,
                        },
                        10,
                        Duration::from_millis(2),
                    ),
                ],
                2,
            ),
            notes: Vec::new(),
        };
        assert_eq!(
            suite.to_csv(),
            "latency,64,zenoh,3,2000,2000,3000,3000,3000,1000,3000\n\
             throughput,64,zenoh,10,5000.0,2000000,0,0,0,0,0\n"
        );
    }
}
