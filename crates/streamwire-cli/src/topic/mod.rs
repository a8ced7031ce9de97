//! `topic bench`, `topic list` and `topic echo`: tools that join a running blueprint
//! through a tap, in this process (`--blueprint`, run here) or through the [`Feed`] a
//! plugin registered for runs of other processes (`--connect`, a distributed run's
//! coordinator: [`crate::RemoteFeed`]).

pub(crate) mod stats;

use parking_lot::Mutex;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use streamwire_codec::jpeg::{JpegDecoder, estimate_quality};
use streamwire_core::{
    AnyMessage, Context, Durability, History, Node, NodeResult, Out, Reliability, Timestamp,
    Trigger,
};
use streamwire_graph::Blueprint;
use streamwire_macros::{Message, Module};
use streamwire_msgs::{CompressedImage, ImageCompression};
use streamwire_runtime::{AnyTap, RunHandle, RunOptions, Runtime};

use crate::{Remote, RemoteFeed};
use stats::{Engine, Report, Sample, StopReason, live_line};

/// `topic` and its subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum TopicCommand {
    /// Rate, bandwidth, size and latency of one stream, live and in a final report.
    Bench {
        /// The stream (`color_image`, `color_image/compressed`).
        stream: String,
        #[command(flatten)]
        join: Join,
        /// Stop this many seconds after the first message.
        #[arg(long, value_name = "S")]
        duration: Option<f64>,
        /// Stop after this many messages.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
        /// Stop when no message arrived for this many seconds (default: wait).
        #[arg(long, value_name = "S")]
        wait: Option<f64>,
        /// Also write the report to FILE (JSON if it ends in .json, else the text).
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        #[command(flatten)]
        qos: QosArgs,
        /// Intervals in the windowed averages.
        #[arg(long, value_name = "N", default_value_t = 30)]
        window: usize,
    },
    /// The streams a tool can join.
    List {
        #[command(flatten)]
        join: Join,
    },
    /// Print each message of a stream.
    Echo {
        /// The stream.
        stream: String,
        #[command(flatten)]
        join: Join,
        /// Stop after this many messages.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
        /// Stop when no message arrived for this many seconds (default: wait).
        #[arg(long, value_name = "S")]
        wait: Option<f64>,
    },
}

/// Where a topic tool joins.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct Join {
    /// Run this blueprint (registered name or file) in this process and tap it.
    #[arg(long, value_name = "BLUEPRINT", conflicts_with = "connect")]
    blueprint: Option<String>,
    /// With --blueprint: a setting, `key=value` (repeatable).
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Join a distributed run over zenoh at this endpoint (the coordinator's, as `run`
    /// prints it; repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    connect: Vec<String>,
    /// The run to join (`run` prints it; `--run-id` of `run`).
    #[arg(long, value_name = "ID", requires = "connect")]
    run_id: Option<String>,
    #[command(flatten)]
    membership: Membership,
    /// Join ROS 2 topics over rmw_zenoh instead (a STREAM is a topic, `/odom`), through
    /// the zenoh router at --connect (default rmw_zenoh's tcp/127.0.0.1:7447).
    #[arg(long, conflicts_with_all = ["blueprint", "run_id"])]
    ros2: bool,
    /// With --ros2: the ROS domain (default ROS_DOMAIN_ID, else 0).
    #[arg(long, value_name = "N", requires = "ros2")]
    domain: Option<u32>,
}

/// rmw_zenoh's default router, where `--ros2` connects without `--connect`.
const ROS2_ROUTER: &str = "tcp/127.0.0.1:7447";

/// The ROS domain: `--domain`, else `ROS_DOMAIN_ID`, else 0.
fn ros2_domain(flag: Option<u32>) -> anyhow::Result<u32> {
    if let Some(domain) = flag {
        return Ok(domain);
    }
    match std::env::var("ROS_DOMAIN_ID") {
        Ok(text) if !text.trim().is_empty() => text
            .trim()
            .parse()
            .with_context(|| format!("ROS_DOMAIN_ID={text:?} is not a number")),
        _ => Ok(0),
    }
}

/// How a tool joins a closed run, or an insecure one.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Membership {
    /// A closed run's tool credential (read-only). Default on the coordinator's host:
    /// the run's own file, found by --run-id.
    #[arg(
        long,
        value_name = "FILE",
        requires = "connect",
        conflicts_with = "insecure"
    )]
    pub secret_file: Option<std::path::PathBuf>,
    /// Join a run started with `run --insecure` (no credential).
    #[arg(long, requires = "connect")]
    pub insecure: bool,
}

/// Subscriber QoS as given: text, so that an invalid value is warned about and not
/// applied.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct QosArgs {
    /// reliable | best_effort (default best_effort).
    #[arg(long, value_name = "R")]
    reliability: Option<String>,
    /// volatile | transient_local (default volatile).
    #[arg(long, value_name = "D")]
    durability: Option<String>,
    /// keep_last | keep_all (default keep_last).
    #[arg(long, value_name = "H")]
    history: Option<String>,
    /// Queue depth of keep_last (default 1: measure what arrives in time, don't hide loss
    /// behind a buffer).
    #[arg(long, value_name = "N")]
    depth: Option<String>,
}

/// The QoS a tool asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requested {
    /// Reliable or best effort.
    pub reliability: Reliability,
    /// Volatile or transient local.
    pub durability: Durability,
    /// Keep last (a depth) or keep all.
    pub history: History,
}

impl Requested {
    /// The depth of the tool's own queue (keep all: bounded all the same).
    pub fn depth(&self) -> usize {
        match self.history {
            History::KeepLast(n) => usize::try_from(n).unwrap_or(usize::MAX).max(1),
            History::KeepAll => KEEP_ALL_BOUND,
        }
    }

    /// As a subscription's QoS.
    pub fn qos(&self) -> streamwire_core::Qos {
        streamwire_core::Qos {
            reliability: self.reliability,
            durability: self.durability,
            history: self.history,
        }
    }
}

/// What a tool's "keep all" queue holds at most: memory is bounded, drops beyond it are
/// counted.
pub const KEEP_ALL_BOUND: usize = 10_000;

/// The QoS as the report says it.
pub fn qos_text(reliability: &str, durability: &str, history: &str) -> String {
    format!("reliability={reliability} durability={durability} history={history}")
}

fn reliability_name(r: Reliability) -> &'static str {
    match r {
        Reliability::Reliable => "reliable",
        _ => "best_effort",
    }
}

fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::TransientLocal => "transient_local",
        _ => "volatile",
    }
}

/// A history as the report says it (`keep_last depth=1`).
pub fn history_name(h: History) -> String {
    match h {
        History::KeepLast(n) => format!("keep_last depth={n}"),
        History::KeepAll => "keep_all".to_owned(),
    }
}

impl std::fmt::Display for Requested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&qos_text(
            reliability_name(self.reliability),
            durability_name(self.durability),
            &history_name(self.history),
        ))
    }
}

/// Reads the QoS flags; an invalid value is a warning and the default is used.
pub(crate) fn parse_qos(args: &QosArgs) -> (Requested, Vec<String>) {
    let mut warnings = Vec::new();
    let reliability = match args.reliability.as_deref() {
        None | Some("best_effort") => Reliability::BestEffort,
        Some("reliable") => Reliability::Reliable,
        Some(other) => {
            warnings.push(format!(
                "--reliability {other}: not a reliability (reliable, best_effort); using best_effort"
            ));
            Reliability::BestEffort
        }
    };
    let durability = match args.durability.as_deref() {
        None | Some("volatile") => Durability::Volatile,
        Some("transient_local") => Durability::TransientLocal,
        Some(other) => {
            warnings.push(format!(
                "--durability {other}: not a durability (volatile, transient_local); using volatile"
            ));
            Durability::Volatile
        }
    };
    let depth = match args.depth.as_deref() {
        None => 1,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                warnings.push(format!(
                    "--depth {text}: not a depth (a whole number >= 1); using 1"
                ));
                1
            }
        },
    };
    let history = match args.history.as_deref() {
        None | Some("keep_last") => History::KeepLast(depth),
        Some("keep_all") => {
            if args.depth.is_some() {
                warnings.push("--depth is ignored with --history keep_all".to_owned());
            }
            History::KeepAll
        }
        Some(other) => {
            warnings.push(format!(
                "--history {other}: not a history (keep_last, keep_all); using keep_last"
            ));
            History::KeepLast(depth)
        }
    };
    (
        Requested {
            reliability,
            durability,
            history,
        },
        warnings,
    )
}

/// One message as a tool received it.
pub struct Arrival {
    /// Monotonic arrival time.
    pub arrived: Instant,
    /// Wall-clock arrival, for the latency from the publisher's stamp.
    pub arrived_wall: Timestamp,
    /// The publisher's stamp.
    pub publish_time: Timestamp,
    /// The link's sequence number.
    pub seq: u64,
    /// Its size, as [`Feed::size_meaning`] says.
    pub bytes: u64,
    /// The message's type name.
    pub type_name: String,
    /// The message, when the feed has it decoded (in-process always; over zenoh for
    /// `echo`).
    pub message: Option<Arc<dyn AnyMessage>>,
}

/// What a tool reads: one stream, joined somehow.
pub trait Feed {
    /// The next message, waiting up to `timeout`.
    fn recv(&mut self, timeout: Duration) -> Option<Arrival>;
    /// Messages the feed's own queue dropped.
    fn dropped(&self) -> u64;
    /// `Some(why)` once nothing more can come (the run or the stream ended).
    fn ended(&mut self) -> Option<String>;
    /// How it subscribed, for the report.
    fn path(&self) -> String;
    /// What its sizes count, once `type_name` is known.
    fn size_meaning(&self, type_name: &str) -> String;
    /// The QoS it was granted.
    fn granted(&self) -> String;
    /// What else uses this process's CPU.
    fn cpu_note(&self) -> String;
    /// Publishes the statistics stream; returns where it went, for the report.
    fn publish_stats(&mut self, stats: &TopicStats);
    /// Where the statistics stream goes.
    fn stats_stream(&self) -> String;
}

/// `<stream>_stats`: what `topic bench` publishes once a second while it measures, for
/// plotting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/TopicStats", crate = streamwire_core)]
pub struct TopicStats {
    /// The stream measured.
    pub stream: String,
    /// Messages received so far.
    pub count: u64,
    /// 1/dt of the latest interval, Hz (0 before two messages).
    pub instant_hz: f64,
    /// 1/mean(dt) over the window, Hz.
    pub average_hz: f64,
    /// Bit/s of the latest message over its interval.
    pub instant_bps: f64,
    /// Bit/s over the window.
    pub average_bps: f64,
    /// The latest message's size in bytes.
    pub bytes: u64,
    /// The latest message's latency from its publisher's stamp, seconds.
    pub latency_s: f64,
    /// Messages the tool's queue dropped so far.
    pub dropped: u64,
}

/// In a blueprint run here: publishes what `topic bench` hands it on `<stream>_stats`.
#[derive(Module)]
#[module(crate = streamwire_core, internal)]
pub(crate) struct StatsSource {
    pub(crate) stats: Out<TopicStats>,
    #[state]
    pub(crate) next: Arc<Mutex<Option<TopicStats>>>,
}

impl Node for StatsSource {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(100))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let next = self.next.lock().take();
        if let Some(stats) = next {
            self.stats.publish(stats)?;
        }
        Ok(())
    }
}

/// The payload bytes of a built-in message with a payload (pixels, JPEG bytes, depth,
/// points), `None` for any other message.
fn content_bytes(message: &dyn AnyMessage) -> Option<u64> {
    use streamwire_msgs::{CompressedImage, DepthImage, Image, PointCloud};
    let any = message.as_any();
    let len = if let Some(m) = any.downcast_ref::<Image>() {
        m.data().len()
    } else if let Some(m) = any.downcast_ref::<CompressedImage>() {
        m.data().len()
    } else if let Some(m) = any.downcast_ref::<DepthImage>() {
        m.data().len()
    } else if let Some(m) = any.downcast_ref::<PointCloud>() {
        m.data().len()
    } else {
        return None;
    };
    Some(len as u64)
}

/// A blueprint run in this process, tapped where its stream is produced.
struct InProcess {
    handle: RunHandle,
    tap: AnyTap,
    target: String,
    requested: Requested,
    stats: Arc<Mutex<Option<TopicStats>>>,
    stats_name: String,
    /// Content bytes (known payload) or serialized bytes, chosen at the first message.
    content: Option<bool>,
}

impl InProcess {
    /// Starts `blueprint` here with a statistics source on `<stream>_stats` when
    /// `stats_for` is given, and taps `stream`.
    fn start(
        mut blueprint: Blueprint,
        target: &str,
        stream: &str,
        requested: Requested,
        stats_for: bool,
    ) -> anyhow::Result<InProcess> {
        let stats = Arc::new(Mutex::new(None));
        let stats_name = format!("{}_stats", stream.trim_start_matches('/'));
        if stats_for {
            let source = blueprint.add(
                "topic_bench_stats",
                StatsSource {
                    stats: Out::new(),
                    next: stats.clone(),
                },
            );
            blueprint.remap(source.ports().stats, &stats_name);
        }
        let runnable = blueprint.into_runnable()?;
        let handle = Runtime::start(
            runnable,
            RunOptions {
                partitions: streamwire_runtime::Partitions::PerProcess,
                tap_depth: requested.depth(),
                ..RunOptions::default()
            },
        )?;
        let tap = match handle.tap_any(stream) {
            Ok(tap) => tap,
            Err(e) => {
                handle.stop();
                let _ = handle.wait_timeout(Duration::from_secs(5));
                return Err(e.into());
            }
        };
        Ok(InProcess {
            handle,
            tap,
            target: target.to_owned(),
            requested,
            stats,
            stats_name,
            content: None,
        })
    }
}

impl Feed for InProcess {
    fn recv(&mut self, timeout: Duration) -> Option<Arrival> {
        let envelope = self.tap.recv_timeout(timeout)?;
        let arrived = Instant::now();
        let arrived_wall = Timestamp::now();
        let message = envelope.message;
        let known = content_bytes(message.as_ref());
        let content = *self.content.get_or_insert(known.is_some());
        let bytes = if content {
            known.unwrap_or(0)
        } else {
            streamwire_transport::payload::encode_into(message.as_ref(), Vec::new())
                .map_or(0, |b| b.len() as u64)
        };
        Some(Arrival {
            arrived,
            arrived_wall,
            publish_time: envelope.header.publish_time,
            seq: envelope.header.seq,
            bytes,
            type_name: message.type_name().to_owned(),
            message: Some(message),
        })
    }

    fn dropped(&self) -> u64 {
        self.tap.dropped()
    }

    fn ended(&mut self) -> Option<String> {
        self.handle
            .poll_end()
            .map(|reason| format!("the run ended ({reason:?})"))
    }

    fn path(&self) -> String {
        format!(
            "in-process tap on the producer's hub (zero-copy; no wire), run of `{}` in this process",
            self.target
        )
    }

    fn size_meaning(&self, type_name: &str) -> String {
        match self.content {
            Some(true) => format!(
                "content bytes: the payload of a {type_name} (pixels, JPEG bytes, depth or points), not the serialized message"
            ),
            _ => format!(
                "serialized bytes: the {type_name} as CBOR, as it would travel (serialized here per message; it has no payload field of known meaning)"
            ),
        }
    }

    fn granted(&self) -> String {
        // A tap never holds its producer back, and attaches to a hub that keeps no
        // history: keep-last, best effort, volatile, whatever was asked.
        format!(
            "{} (a tap's keep-last queue: it never holds back the producer; no history)",
            qos_text(
                "best_effort",
                "volatile",
                &history_name(History::KeepLast(self.requested.depth() as u32))
            )
        )
    }

    fn cpu_note(&self) -> String {
        format!("the blueprint `{}` runs in this process too", self.target)
    }

    fn publish_stats(&mut self, stats: &TopicStats) {
        *self.stats.lock() = Some(stats.clone());
    }

    fn stats_stream(&self) -> String {
        format!(
            "published as `{}` (streamwire/TopicStats) in the run, once a second",
            self.stats_name
        )
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.handle.stop();
    }
}

/// What the in-process feed's QoS cannot honour, said as warnings.
fn in_process_warnings(requested: &Requested) -> Vec<String> {
    let mut warnings = Vec::new();
    if requested.reliability == Reliability::Reliable {
        warnings.push(
            "reliable requested: an in-process tap is best effort (its queue drops the oldest, counted, rather than hold back the producer)".to_owned(),
        );
    }
    if requested.durability == Durability::TransientLocal {
        warnings.push(
            "transient_local requested: an in-process tap gets no history (it sees messages published after it attached)".to_owned(),
        );
    }
    if requested.history == History::KeepAll {
        warnings.push(format!(
            "keep_all requested: a tap's queue is keep-last; granted depth {KEEP_ALL_BOUND}"
        ));
    }
    warnings
}

/// Where a tool joins, resolved.
pub(crate) enum Target<'a> {
    /// A blueprint run here.
    Here { name: String, blueprint: Blueprint },
    /// A run of other processes, through the feed a plugin registered.
    Remote {
        feed: &'a dyn RemoteFeed,
        remote: Remote,
    },
}

impl Join {
    /// The blueprint named by `--blueprint`, if any; `--connect` through `feed` otherwise
    /// (an error naming what is missing without one).
    pub(crate) fn target<'a>(
        &self,
        resolve: &dyn Fn(&str, &[String]) -> anyhow::Result<Blueprint>,
        feed: Option<&'a dyn RemoteFeed>,
    ) -> anyhow::Result<Target<'a>> {
        if self.ros2 {
            let Some(feed) = feed else {
                bail!(
                    "--ros2: this binary reads no ROS 2 topics (no plugin registered a feed: \
                     `Cli::add_plugin(streamwire_cluster::cli::Distributed)` does)"
                );
            };
            let connect = if self.connect.is_empty() {
                vec![ROS2_ROUTER.to_owned()]
            } else {
                self.connect.clone()
            };
            return Ok(Target::Remote {
                feed,
                remote: Remote {
                    connect,
                    run_id: None,
                    membership: self.membership.clone(),
                    ros2_domain: Some(ros2_domain(self.domain)?),
                },
            });
        }
        match (&self.blueprint, self.connect.is_empty()) {
            (Some(name), _) => Ok(Target::Here {
                name: name.clone(),
                blueprint: resolve(name, &self.set)?,
            }),
            (None, false) => match feed {
                Some(feed) => Ok(Target::Remote {
                    feed,
                    remote: Remote {
                        connect: self.connect.clone(),
                        run_id: self.run_id.clone(),
                        membership: self.membership.clone(),
                        ros2_domain: None,
                    },
                }),
                None => bail!(
                    "--connect {}: this binary joins no run of other processes (no plugin \
                     registered a feed for it: `Cli::add_plugin(streamwire_cluster::cli::Distributed)` \
                     does)",
                    self.connect.join(", ")
                ),
            },
            (None, true) => bail!(
                "say where to join: --blueprint NAME (run it here and tap it) or --connect ENDPOINT --run-id ID (a distributed run over zenoh)"
            ),
        }
    }
}

fn open_feed(
    target: Target<'_>,
    stream: &str,
    requested: Requested,
    stats: bool,
) -> anyhow::Result<(Box<dyn Feed>, Vec<String>)> {
    match target {
        Target::Here { name, blueprint } => {
            let feed = InProcess::start(blueprint, &name, stream, requested, stats)?;
            Ok((Box::new(feed), in_process_warnings(&requested)))
        }
        Target::Remote { feed, remote } => feed.open(&remote, stream, requested, stats),
    }
}

/// `topic bench`'s settings.
pub(crate) struct BenchSettings {
    pub(crate) stream: String,
    pub(crate) duration: Option<Duration>,
    pub(crate) count: Option<u64>,
    pub(crate) wait: Option<Duration>,
    pub(crate) report: Option<PathBuf>,
    pub(crate) qos: QosArgs,
    pub(crate) window: usize,
}

/// `topic bench`: measures until a stop condition, then prints (and writes) the report.
pub(crate) fn bench(
    target: Target<'_>,
    settings: &BenchSettings,
    stop: &Arc<AtomicBool>,
    out: &mut dyn Write,
) -> anyhow::Result<Report> {
    let (requested, mut warnings) = parse_qos(&settings.qos);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let (mut feed, feed_warnings) = open_feed(target, &settings.stream, requested, true)?;
    for w in &feed_warnings {
        eprintln!("warning: {w}");
    }
    warnings.extend(feed_warnings);
    let ctrl_c = stop.clone();
    crate::on_ctrl_c(move || ctrl_c.store(true, Ordering::SeqCst));
    let terminal = std::io::stderr().is_terminal();
    let origin = Instant::now();
    let cpu_start = cpu_time::ProcessTime::try_now().ok();
    let mut engine = Engine::new(settings.window);
    let mut type_name: Option<String> = None;
    let mut last_message = Instant::now();
    let mut last_line = Instant::now();
    let mut last_stats = Instant::now();
    let reason = loop {
        if stop.load(Ordering::SeqCst) {
            break StopReason::Interrupted;
        }
        if let (Some(d), Some(first)) = (settings.duration, engine.first())
            && origin + first + d <= Instant::now()
        {
            break StopReason::Duration(d);
        }
        if let Some(wait) = settings.wait
            && last_message.elapsed() >= wait
        {
            break StopReason::Silent(wait);
        }
        let asked = Instant::now();
        let Some(arrival) = feed.recv(Duration::from_millis(100)) else {
            if let Some(why) = feed.ended() {
                break StopReason::Ended(why);
            }
            idle_after(asked);
            continue;
        };
        last_message = Instant::now();
        type_name.get_or_insert_with(|| arrival.type_name.clone());
        let latency = (arrival.publish_time != Timestamp::ZERO)
            .then(|| arrival.arrived_wall.saturating_since(arrival.publish_time));
        let live = engine.record(Sample {
            arrived: arrival.arrived.saturating_duration_since(origin),
            bytes: arrival.bytes,
            latency,
            jpeg: arrival.message.as_deref().and_then(jpeg_seen),
        });
        if terminal {
            eprint!("\r{:<80}", live_line(&live));
            let _ = std::io::stderr().flush();
        } else if last_line.elapsed() >= Duration::from_secs(1) {
            eprintln!("{}", live_line(&live));
            last_line = Instant::now();
        }
        if last_stats.elapsed() >= Duration::from_secs(1) {
            feed.publish_stats(&topic_stats(&settings.stream, &live, feed.dropped()));
            last_stats = Instant::now();
        }
        if settings.count.is_some_and(|n| engine.count() >= n) {
            break StopReason::Count(engine.count());
        }
    };
    if terminal {
        eprintln!();
    }
    let wall = origin.elapsed();
    let cpu = cpu_start.map_or(Duration::ZERO, |start| start.elapsed());
    let size_meaning = match &type_name {
        Some(t) => feed.size_meaning(t),
        None => "(no message: nothing was measured)".to_owned(),
    };
    let report = Report {
        stream: settings.stream.clone(),
        message_type: type_name,
        subscription: feed.path(),
        size_meaning,
        qos_requested: requested.to_string(),
        qos_granted: feed.granted(),
        stop_reason: reason,
        summary: engine.summary(),
        dropped: feed.dropped(),
        cpu_seconds: cpu.as_secs_f64(),
        wall_seconds: wall.as_secs_f64(),
        cpu_note: feed.cpu_note(),
        stats_stream: feed.stats_stream(),
        warnings,
    };
    write!(out, "{report}")?;
    if let Some(path) = &settings.report {
        let text = if path.extension().is_some_and(|e| e == "json") {
            serde_json::to_string_pretty(&report)? + "\n"
        } else {
            report.to_string()
        };
        std::fs::write(path, text)
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
    }
    Ok(report)
}

/// A JPEG message's quality (read back from its quantization table) and width: what an
/// encoder under a bit-rate budget chose for it.
fn jpeg_seen(message: &dyn AnyMessage) -> Option<stats::JpegSeen> {
    let image = message.as_any().downcast_ref::<CompressedImage>()?;
    let format = image.format_info().ok()?;
    if format.compression != ImageCompression::Jpeg {
        return None;
    }
    let header = JpegDecoder::default().read_header(image.data()).ok()?;
    Some(stats::JpegSeen {
        quality: estimate_quality(image.data())?,
        width: header.width,
    })
}

/// A tap whose stream closed answers at once: wait out the rest of the poll instead of
/// spinning until the run ends.
fn idle_after(asked: Instant) {
    let poll = Duration::from_millis(100);
    let waited = asked.elapsed();
    if waited < poll {
        std::thread::sleep(poll - waited);
    }
}

fn topic_stats(stream: &str, live: &stats::Live, dropped: u64) -> TopicStats {
    TopicStats {
        stream: stream.to_owned(),
        count: live.count,
        instant_hz: live.instant_hz.unwrap_or(0.0),
        average_hz: live.average_hz.unwrap_or(0.0),
        instant_bps: live.instant_bps.unwrap_or(0.0),
        average_bps: live.average_bps.unwrap_or(0.0),
        bytes: live.bytes,
        latency_s: live.latency.map_or(0.0, |l| l.as_secs_f64()),
        dropped,
    }
}

/// `topic echo`: each message on a line (its header and its `Debug` form, cut at 300
/// characters).
pub(crate) fn echo(
    target: Target<'_>,
    stream: &str,
    count: Option<u64>,
    wait: Option<Duration>,
    stop: &Arc<AtomicBool>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let requested = parse_qos(&QosArgs::default()).0;
    let (mut feed, warnings) = open_feed(target, stream, requested, false)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let ctrl_c = stop.clone();
    crate::on_ctrl_c(move || ctrl_c.store(true, Ordering::SeqCst));
    let mut seen = 0_u64;
    let mut last = Instant::now();
    while !stop.load(Ordering::SeqCst) && count.is_none_or(|n| seen < n) {
        if wait.is_some_and(|w| last.elapsed() >= w) {
            eprintln!("no message for {} s", wait.map_or(0.0, |w| w.as_secs_f64()));
            break;
        }
        let asked = Instant::now();
        let Some(arrival) = feed.recv(Duration::from_millis(100)) else {
            if let Some(why) = feed.ended() {
                eprintln!("{why}");
                break;
            }
            idle_after(asked);
            continue;
        };
        last = Instant::now();
        seen += 1;
        let body = match &arrival.message {
            Some(message) => {
                let text = format!("{message:?}");
                if text.chars().count() > 300 {
                    format!("{}...", text.chars().take(300).collect::<String>())
                } else {
                    text
                }
            }
            None => "(not decoded)".to_owned(),
        };
        writeln!(
            out,
            "#{} seq {} published {} {} ({}): {body}",
            seen,
            arrival.seq,
            arrival.publish_time,
            arrival.type_name,
            stats::size_text(arrival.bytes as f64)
        )?;
    }
    Ok(())
}

/// Every stream of a plan, its encoded forms included: its message type, the output
/// ports and encode nodes that produce it and the input ports and decode nodes that
/// consume it, with where each runs; `nobody` where no one does (a tap still can).
fn stream_table(summary: &streamwire_graph::PlanSummary) -> String {
    use std::collections::BTreeMap;
    #[derive(Default)]
    struct Row {
        message: String,
        producers: Vec<String>,
        consumers: Vec<String>,
    }
    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    // What travels on each stream, as its links carry it (an encoded stream's bytes).
    for link in &summary.links {
        let row = rows.entry(link.stream.as_str()).or_default();
        if row.message.is_empty() {
            row.message.clone_from(&link.message);
        }
    }
    for instance in &summary.instances {
        for port in &instance.ports {
            let row = rows.entry(port.stream.as_str()).or_default();
            if row.message.is_empty() {
                row.message.clone_from(&port.message);
            }
            let end = format!("{}.{} @ {}", instance.name, port.field, instance.placement);
            match port.direction {
                streamwire_core::Direction::Output => row.producers.push(end),
                _ => row.consumers.push(end),
            }
        }
    }
    // Encode nodes produce an encoded stream, decode nodes consume one.
    for node in &summary.codec_nodes {
        let row = rows.entry(node.encoded_stream.as_str()).or_default();
        let end = format!("{} {} @ {}", node.kind, node.codec, node.placement);
        match node.kind {
            streamwire_graph::CodecKind::Encode => row.producers.push(end),
            _ => row.consumers.push(end),
        }
    }
    let names = |ends: &[String]| {
        if ends.is_empty() {
            "nobody".to_owned()
        } else {
            ends.join(", ")
        }
    };
    let table: Vec<[String; 4]> = rows
        .iter()
        .map(|(stream, row)| {
            [
                (*stream).to_owned(),
                row.message.clone(),
                names(&row.producers),
                names(&row.consumers),
            ]
        })
        .collect();
    let width = |i: usize| table.iter().map(|r| r[i].len()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0).max(6), width(1).max(7), width(2).max(11));
    let mut text = format!(
        "  {:w0$}  {:w1$}  {:w2$}  consumed by\n",
        "stream", "message", "produced by"
    );
    for [stream, message, producers, consumers] in &table {
        text.push_str(&format!(
            "  {stream:w0$}  {message:w1$}  {producers:w2$}  {consumers}\n"
        ));
    }
    text
}

/// `topic list` of a blueprint: every stream of its plan, with its message type and who
/// produces and consumes it.
pub(crate) fn list(target: Target<'_>, out: &mut dyn Write) -> anyhow::Result<()> {
    match target {
        Target::Here { name, blueprint } => {
            let plan = blueprint.build()?;
            writeln!(
                out,
                "streams of `{name}` (tap any of them with --blueprint {name}):"
            )?;
            write!(out, "{}", stream_table(&plan.summary()))?;
            Ok(())
        }
        Target::Remote { feed, remote } => feed.list(&remote, out),
    }
}
