//! The statistics of `topic bench`: what arrived when, as rates, bandwidths, sizes and
//! latencies, the live line and the final report.
//!
//! Done as the reference tool does it: arrival times from a monotonic clock; the first
//! message only starts the clock (no interval, no rate from it); average rate is
//! `1/mean(dt)` over a window of the last intervals (never `mean(1/dt)`, which one short
//! interval inflates); the min and max of the windowed averages are tracked only once the
//! window has filled, so the first few noisy intervals cannot set them.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// What one message contributes: when it arrived (monotonic, since any fixed origin), its
/// size in the stream's size unit (see [`SizeMeaning`]), and its latency from the
/// publisher's stamp, when known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) arrived: Duration,
    pub(crate) bytes: u64,
    pub(crate) latency: Option<Duration>,
    /// For a JPEG: its quality (read from its tables) and width.
    pub(crate) jpeg: Option<JpegSeen>,
}

/// What a JPEG message says of how it was encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct JpegSeen {
    /// The quality its luminance table was scaled for.
    pub(crate) quality: u8,
    /// Its width in pixels.
    pub(crate) width: u32,
}

/// The instant and windowed-average figures after the latest message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Live {
    /// Messages received.
    pub(crate) count: u64,
    /// 1/dt of the latest interval (Hz), none before the second message.
    pub(crate) instant_hz: Option<f64>,
    /// 1/mean(dt) over the window (Hz).
    pub(crate) average_hz: Option<f64>,
    /// Bits of the latest message over its interval (bit/s).
    pub(crate) instant_bps: Option<f64>,
    /// Bits of the window's messages over the window's time (bit/s).
    pub(crate) average_bps: Option<f64>,
    /// The latest message's size.
    pub(crate) bytes: u64,
    /// The latest message's latency.
    pub(crate) latency: Option<Duration>,
    /// The latest JPEG's quality and width.
    pub(crate) jpeg: Option<JpegSeen>,
}

/// Smallest, largest, and the running sum for a mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Range {
    pub(crate) min: f64,
    pub(crate) max: f64,
    sum: f64,
    n: u64,
}

impl Range {
    fn add(&mut self, value: f64) {
        if self.n == 0 {
            self.min = value;
            self.max = value;
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.sum += value;
        self.n += 1;
    }

    pub(crate) fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// The statistics engine of one stream.
#[derive(Clone, Debug)]
pub(crate) struct Engine {
    window: usize,
    /// The last `window` intervals and the sizes of the messages that ended them.
    intervals: VecDeque<(Duration, u64)>,
    first: Option<Duration>,
    /// The first message's size: it arrived before any interval, so it is not rated.
    first_bytes: u64,
    last: Option<Duration>,
    count: u64,
    total_bytes: u64,
    size: Range,
    latency: Range,
    /// Windowed averages, once the window has filled.
    average_hz: Range,
    average_bps: Range,
    jpeg: JpegSummary,
}

/// The JPEG settings seen over a run (an encoder under a bit-rate budget changes them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct JpegSummary {
    /// The latest JPEG's.
    pub(crate) last: Option<JpegSeen>,
    pub(crate) quality: Range,
    pub(crate) width: Range,
    /// Messages whose quality or width differed from the one before.
    pub(crate) changes: u64,
}

impl Engine {
    /// An engine averaging over the last `window` intervals (at least 1).
    pub(crate) fn new(window: usize) -> Engine {
        Engine {
            window: window.max(1),
            intervals: VecDeque::new(),
            first: None,
            first_bytes: 0,
            last: None,
            count: 0,
            total_bytes: 0,
            size: Range::default(),
            latency: Range::default(),
            average_hz: Range::default(),
            average_bps: Range::default(),
            jpeg: JpegSummary::default(),
        }
    }

    /// Adds a message. Arrivals must not go back in time (a monotonic clock); one that
    /// does counts as an interval of zero.
    pub(crate) fn record(&mut self, sample: Sample) -> Live {
        self.count += 1;
        self.total_bytes += sample.bytes;
        self.size.add(sample.bytes as f64);
        if let Some(latency) = sample.latency {
            self.latency.add(latency.as_secs_f64());
        }
        if let Some(seen) = sample.jpeg {
            let jpeg = &mut self.jpeg;
            jpeg.changes += u64::from(jpeg.last.is_some_and(|last| last != seen));
            jpeg.last = Some(seen);
            jpeg.quality.add(f64::from(seen.quality));
            jpeg.width.add(f64::from(seen.width));
        }
        let mut live = Live {
            count: self.count,
            bytes: sample.bytes,
            latency: sample.latency,
            jpeg: sample.jpeg,
            ..Live::default()
        };
        match self.last {
            // The first message starts the clock: no interval ends with it.
            None => {
                self.first = Some(sample.arrived);
                self.first_bytes = sample.bytes;
            }
            Some(last) => {
                let dt = sample.arrived.saturating_sub(last);
                if self.intervals.len() == self.window {
                    self.intervals.pop_front();
                }
                self.intervals.push_back((dt, sample.bytes));
                let seconds = dt.as_secs_f64();
                if seconds > 0.0 {
                    live.instant_hz = Some(1.0 / seconds);
                    live.instant_bps = Some(sample.bytes as f64 * 8.0 / seconds);
                }
                let window_time: f64 = self.intervals.iter().map(|(d, _)| d.as_secs_f64()).sum();
                if window_time > 0.0 {
                    // 1/mean(dt) = n / sum(dt).
                    let hz = self.intervals.len() as f64 / window_time;
                    let bits: f64 = self.intervals.iter().map(|(_, b)| *b as f64 * 8.0).sum();
                    let bps = bits / window_time;
                    live.average_hz = Some(hz);
                    live.average_bps = Some(bps);
                    if self.intervals.len() == self.window {
                        self.average_hz.add(hz);
                        self.average_bps.add(bps);
                    }
                }
            }
        }
        self.last = Some(sample.arrived);
        live
    }

    /// Messages received.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// First to last message.
    pub(crate) fn span(&self) -> Duration {
        match (self.first, self.last) {
            (Some(first), Some(last)) => last.saturating_sub(first),
            _ => Duration::ZERO,
        }
    }

    /// When the first message arrived.
    pub(crate) fn first(&self) -> Option<Duration> {
        self.first
    }

    /// The whole run's figures.
    pub(crate) fn summary(&self) -> Summary {
        let span = self.span().as_secs_f64();
        let intervals = self.count.saturating_sub(1);
        // Over the whole run 1/mean(dt) is the intervals over the time they took.
        let rated_bytes = self.total_bytes.saturating_sub(self.first_bytes);
        Summary {
            count: self.count,
            span: self.span(),
            mean_hz: (intervals > 0 && span > 0.0).then(|| intervals as f64 / span),
            mean_bps: (intervals > 0 && span > 0.0).then(|| rated_bytes as f64 * 8.0 / span),
            window: self.window,
            window_filled: self.count > self.window as u64,
            average_hz: self.average_hz,
            average_bps: self.average_bps,
            size: self.size,
            latency: self.latency,
            total_bytes: self.total_bytes,
            jpeg: self.jpeg,
        }
    }
}

/// The whole run's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Summary {
    pub(crate) count: u64,
    pub(crate) span: Duration,
    /// 1/mean(dt) over every interval.
    pub(crate) mean_hz: Option<f64>,
    pub(crate) mean_bps: Option<f64>,
    pub(crate) window: usize,
    /// More than `window` messages: the windowed min/max mean something.
    pub(crate) window_filled: bool,
    pub(crate) average_hz: Range,
    pub(crate) average_bps: Range,
    pub(crate) size: Range,
    /// Seconds.
    pub(crate) latency: Range,
    pub(crate) total_bytes: u64,
    /// The JPEG settings seen (none for other messages).
    pub(crate) jpeg: JpegSummary,
}

/// A size in adaptive decimal units: `812 B`, `42.50 KB`, `2.76 MB`, `1.20 GB`.
pub(crate) fn size_text(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000.0 {
        return format!("{bytes:.0} B");
    }
    let mut value = bytes;
    let mut unit = "B";
    for u in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = u;
    }
    format!("{value:.2} {unit}")
}

/// Bandwidth in Mbit/s, as the reference line shows it.
fn mbps(bps: Option<f64>) -> String {
    bps.map_or_else(|| "-".to_owned(), |b| format!("{:.2}", b / 1e6))
}

fn hz(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |h| format!("{h:.2}"))
}

fn millis(seconds: f64) -> String {
    format!("{:.3} ms", seconds * 1e3)
}

/// The live line, at most 80 columns:
/// `#12 | Freq 62.10/ 64.91 Hz | BW 1746.47/1825.71 Mbps | 3.52 MB | 0.42 ms`
/// (instant/average frequency and bandwidth, the latest size and latency), then for a
/// JPEG its quality, and its width: `| q28 960px`.
pub(crate) fn live_line(live: &Live) -> String {
    let latency = live.latency.map_or_else(
        || "-".to_owned(),
        |l| format!("{:.2} ms", l.as_secs_f64() * 1e3),
    );
    let line = format!(
        "#{} | Freq {:>7}/{:>7} Hz | BW {:>7}/{:>7} Mbps | {:>9} | {}",
        live.count,
        hz(live.instant_hz),
        hz(live.average_hz),
        mbps(live.instant_bps),
        mbps(live.average_bps),
        size_text(live.bytes as f64),
        latency
    );
    // Fixed width: the widest figures still fit; anything wider is cut, never wrapped.
    let mut line: String = line.chars().take(80).collect();
    if let Some(jpeg) = live.jpeg {
        line.push_str(&format!(" | q{} {}px", jpeg.quality, jpeg.width));
    }
    line
}

/// Why `topic bench` stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StopReason {
    /// `--count` messages arrived.
    Count(u64),
    /// `--duration` passed since the first message.
    Duration(Duration),
    /// Ctrl+C.
    Interrupted,
    /// `--wait` passed without a message.
    Silent(Duration),
    /// The stream or the run ended.
    Ended(String),
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Count(n) => write!(f, "--count reached ({n} messages)"),
            StopReason::Duration(d) => write!(
                f,
                "--duration reached ({} s after the first message)",
                d.as_secs_f64()
            ),
            StopReason::Interrupted => f.write_str("interrupted (Ctrl+C)"),
            StopReason::Silent(d) => {
                write!(f, "no message for {} s (--wait)", d.as_secs_f64())
            }
            StopReason::Ended(why) => write!(f, "{why}"),
        }
    }
}

/// Everything the final report says.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) stream: String,
    /// The message type's wire name, when a message said it.
    pub(crate) message_type: Option<String>,
    /// How the tool subscribed.
    pub(crate) subscription: String,
    /// What a message's size counts.
    pub(crate) size_meaning: String,
    pub(crate) qos_requested: String,
    pub(crate) qos_granted: String,
    pub(crate) stop_reason: StopReason,
    pub(crate) summary: Summary,
    /// Messages the tool's own queue dropped (it was behind).
    pub(crate) dropped: u64,
    /// CPU seconds of this process while measuring, and the wall time it was measured over.
    pub(crate) cpu_seconds: f64,
    pub(crate) wall_seconds: f64,
    /// What else runs in this process (its CPU is included).
    pub(crate) cpu_note: String,
    /// Where the statistics stream went.
    pub(crate) stats_stream: String,
    pub(crate) warnings: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let s = &self.summary;
        let _ = writeln!(out, "topic bench: {}", self.stream);
        let row = |out: &mut String, key: &str, value: &str| {
            let _ = writeln!(out, "  {key:<13} {value}");
        };
        row(
            &mut out,
            "type",
            self.message_type
                .as_deref()
                .unwrap_or("(unknown: no message)"),
        );
        row(&mut out, "subscription", &self.subscription);
        row(&mut out, "size means", &self.size_meaning);
        row(&mut out, "QoS requested", &self.qos_requested);
        row(&mut out, "QoS granted", &self.qos_granted);
        row(&mut out, "stopped", &self.stop_reason.to_string());
        if s.count == 0 {
            row(
                &mut out,
                "result",
                "no message received: no statistics (is the stream published, and its name right? `topic list` shows the streams)",
            );
        } else {
            row(
                &mut out,
                "duration",
                &format!("{:.3} s (first to last message)", s.span.as_secs_f64()),
            );
            row(
                &mut out,
                "messages",
                &format!(
                    "{} received, {} dropped by this tool's queue",
                    s.count, self.dropped
                ),
            );
            let windowed = |range: &Range, unit: &dyn Fn(f64) -> String| {
                if !s.window_filled || range.is_empty() {
                    format!("window of {} intervals never filled: no min/max", s.window)
                } else {
                    format!(
                        "min {} / max {} (windowed average, {} intervals)",
                        unit(range.min),
                        unit(range.max),
                        s.window
                    )
                }
            };
            let hz_text = |h: f64| format!("{h:.2} Hz");
            let mbps_text = |b: f64| format!("{:.2} Mbps", b / 1e6);
            row(
                &mut out,
                "frequency",
                &match s.mean_hz {
                    Some(h) => format!(
                        "mean {} (1/mean(dt)); {}",
                        hz_text(h),
                        windowed(&s.average_hz, &hz_text)
                    ),
                    None => "one message: no interval, no rate".to_owned(),
                },
            );
            row(
                &mut out,
                "size",
                &format!(
                    "mean {}, min {}, max {}",
                    size_text(s.size.mean().unwrap_or(0.0)),
                    size_text(s.size.min),
                    size_text(s.size.max)
                ),
            );
            row(
                &mut out,
                "bandwidth",
                &match s.mean_bps {
                    Some(b) => format!(
                        "mean {}; {}",
                        mbps_text(b),
                        windowed(&s.average_bps, &mbps_text)
                    ),
                    None => "one message: no interval, no bandwidth".to_owned(),
                },
            );
            row(
                &mut out,
                "latency",
                &match s.latency.mean() {
                    Some(mean) => format!(
                        "mean {}, min {}, max {} (publisher's stamp to arrival)",
                        millis(mean),
                        millis(s.latency.min),
                        millis(s.latency.max)
                    ),
                    None => "no publisher stamp".to_owned(),
                },
            );
            row(&mut out, "total data", &size_text(s.total_bytes as f64));
            if let Some(last) = s.jpeg.last {
                row(
                    &mut out,
                    "JPEG quality",
                    &format!(
                        "now {} (read from each frame's tables), lowest {}, highest {}; {} changes",
                        last.quality, s.jpeg.quality.min, s.jpeg.quality.max, s.jpeg.changes
                    ),
                );
                row(
                    &mut out,
                    "JPEG width",
                    &format!(
                        "now {} px, narrowest {} px, widest {} px",
                        last.width, s.jpeg.width.min, s.jpeg.width.max
                    ),
                );
            }
        }
        let share = if self.wall_seconds > 0.0 {
            self.cpu_seconds / self.wall_seconds * 100.0
        } else {
            0.0
        };
        row(
            &mut out,
            "CPU",
            &format!(
                "{:.2} s of this process over {:.2} s, {share:.1}% of one core ({})",
                self.cpu_seconds, self.wall_seconds, self.cpu_note
            ),
        );
        row(&mut out, "statistics", &self.stats_stream);
        for warning in &self.warnings {
            row(&mut out, "warning", warning);
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, bytes: u64) -> Sample {
        Sample {
            arrived: Duration::from_millis(ms),
            bytes,
            latency: Some(Duration::from_micros(500)),
            jpeg: None,
        }
    }

    #[test]
    fn the_first_message_only_starts_the_clock() {
        let mut engine = Engine::new(4);
        let live = engine.record(at(1000, 100));
        assert_eq!(live.count, 1);
        assert_eq!(live.instant_hz, None);
        assert_eq!(live.average_hz, None);
        let summary = engine.summary();
        assert_eq!(summary.mean_hz, None);
        assert_eq!(summary.span, Duration::ZERO);
        // The time before the first message (1 s here) never counts.
        let live = engine.record(at(1100, 100));
        assert_eq!(live.instant_hz.map(|h| h.round()), Some(10.0));
        assert_eq!(engine.summary().mean_hz.map(|h| h.round()), Some(10.0));
    }

    #[test]
    fn average_rate_is_one_over_the_mean_interval() {
        // Intervals of 10 ms and 90 ms: 1/mean(dt) = 1/50 ms = 20 Hz, where
        // mean(1/dt) would say (100 + 11.1)/2 = 55.6 Hz.
        let mut engine = Engine::new(2);
        engine.record(at(0, 1));
        engine.record(at(10, 1));
        let live = engine.record(at(100, 1));
        let average = live.average_hz.expect("two intervals");
        assert!((average - 20.0).abs() < 1e-9, "{average}");
        let mean = engine.summary().mean_hz.expect("intervals");
        assert!((mean - 20.0).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn min_and_max_wait_for_the_window_to_fill() {
        let mut engine = Engine::new(3);
        // A burst at the start: intervals of 1 ms, then steady 100 ms.
        engine.record(at(0, 10));
        engine.record(at(1, 10));
        engine.record(at(2, 10));
        // Two intervals in a window of three: not filled, nothing tracked.
        assert!(engine.summary().average_hz.is_empty());
        assert!(!engine.summary().window_filled);
        engine.record(at(102, 10));
        // Filled now: (1 + 1 + 100) ms over 3 intervals.
        let summary = engine.summary();
        assert!(summary.window_filled);
        let first = 3.0 / 0.102;
        assert!((summary.average_hz.max - first).abs() < 1e-6);
        for ms in [202, 302, 402] {
            engine.record(at(ms, 10));
        }
        let summary = engine.summary();
        assert!((summary.average_hz.min - 10.0).abs() < 1e-6);
        assert!((summary.average_hz.max - first).abs() < 1e-6);
        // The 1000 Hz of the burst's own intervals never became a max.
        assert!(summary.average_hz.max < 1000.0);
    }

    #[test]
    fn bandwidth_counts_the_bytes_of_the_messages_that_end_intervals() {
        let mut engine = Engine::new(10);
        engine.record(at(0, 1_000_000));
        let live = engine.record(at(100, 1_000_000));
        // 8 Mbit in 0.1 s.
        assert_eq!(live.instant_bps.map(|b| b.round()), Some(80_000_000.0));
        assert_eq!(live.average_bps.map(|b| b.round()), Some(80_000_000.0));
        assert_eq!(engine.summary().total_bytes, 2_000_000);
    }

    #[test]
    fn sizes_in_adaptive_units() {
        assert_eq!(size_text(0.0), "0 B");
        assert_eq!(size_text(999.0), "999 B");
        assert_eq!(size_text(42_500.0), "42.50 KB");
        assert_eq!(size_text(2_764_800.0), "2.76 MB");
        assert_eq!(size_text(1.2e9), "1.20 GB");
    }

    fn steady_engine() -> (Engine, Live) {
        let mut engine = Engine::new(5);
        let mut live = Live::default();
        for n in 0..12_u64 {
            live = engine.record(Sample {
                arrived: Duration::from_micros(1_000_000 + n * 33_333),
                bytes: 2_764_800,
                latency: Some(Duration::from_micros(400 + n * 10)),
                jpeg: None,
            });
        }
        (engine, live)
    }

    #[test]
    fn jpeg_settings_are_followed_and_their_changes_counted() {
        let mut engine = Engine::new(4);
        let mut live = Live::default();
        for (n, (quality, width)) in [(75, 1280), (75, 1280), (28, 1280), (20, 960), (20, 960)]
            .into_iter()
            .enumerate()
        {
            let mut sample = at(1000 + 50 * n as u64, 20_000);
            sample.jpeg = Some(JpegSeen { quality, width });
            live = engine.record(sample);
        }
        let jpeg = engine.summary().jpeg;
        assert_eq!(jpeg.changes, 2);
        assert_eq!((jpeg.quality.min, jpeg.quality.max), (20.0, 75.0));
        assert_eq!((jpeg.width.min, jpeg.width.max), (960.0, 1280.0));
        assert!(
            live_line(&live).ends_with(" | q20 960px"),
            "{}",
            live_line(&live)
        );
    }

    #[test]
    fn live_line_fits_in_80_columns() {
        let (_, live) = steady_engine();
        let line = live_line(&live);
        insta::assert_snapshot!("live_line", line);
        let widest = Live {
            count: 123_456_789,
            instant_hz: Some(99_999.99),
            average_hz: Some(99_999.99),
            instant_bps: Some(99_999.99e6),
            average_bps: Some(99_999.99e6),
            bytes: 999_990_000_000,
            latency: Some(Duration::from_secs(999)),
            jpeg: None,
        };
        assert!(live_line(&widest).chars().count() <= 80);
        insta::assert_snapshot!(
            "live_line_first",
            live_line(&Live {
                count: 1,
                bytes: 812,
                latency: Some(Duration::from_micros(250)),
                ..Live::default()
            })
        );
    }

    fn report(engine: &Engine, stop: StopReason) -> Report {
        Report {
            stream: "color_image".to_owned(),
            message_type: (engine.count() > 0).then(|| "streamwire/Image".to_owned()),
            subscription: "in-process tap on the producer's hub (zero-copy), run of `demo` in this process".to_owned(),
            size_meaning: "content bytes: the pixel data of an Image (not the serialized message)".to_owned(),
            qos_requested: "reliability=best_effort durability=volatile history=keep_last depth=1".to_owned(),
            qos_granted: "reliability=best_effort durability=volatile history=keep_last depth=1".to_owned(),
            stop_reason: stop,
            summary: engine.summary(),
            dropped: 0,
            cpu_seconds: 0.25,
            wall_seconds: 1.0,
            cpu_note: "the blueprint runs in this process too".to_owned(),
            stats_stream: "published as `color_image_stats` (streamwire/TopicStats) in the run".to_owned(),
            warnings: vec!["--reliability relaible: not a reliability (reliable, best_effort); using best_effort".to_owned()],
        }
    }

    #[test]
    fn report_text() {
        let (engine, _) = steady_engine();
        insta::assert_snapshot!("report", report(&engine, StopReason::Count(12)).to_string());
    }

    #[test]
    fn report_says_plainly_that_nothing_arrived() {
        let text = report(&Engine::new(5), StopReason::Silent(Duration::from_secs(2))).to_string();
        assert!(text.contains("no message received"), "{text}");
        assert!(!text.contains("frequency"), "{text}");
        insta::assert_snapshot!("report_nothing", text);
    }
}
