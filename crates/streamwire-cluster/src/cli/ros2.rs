//! `topic list|echo|bench --ros2`: the topic tools on ROS 2 topics over rmw_zenoh, found
//! from their liveliness tokens (`streamwire_rmw::topics`) through a zenoh router, each
//! sample measured as it arrives (its CDR size, its latency from `header.stamp`).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use streamwire_core::Timestamp;
use streamwire_rmw::topics::{self, GraphTopic, TopicReader};

use streamwire_cli::topic::{Arrival, Feed, Requested, TopicStats, history_name, qos_text};

/// How long the tool asks the router for the graph's tokens.
const GRAPH_WAIT: Duration = Duration::from_secs(2);
/// How long it looks for a publisher of the topic before it gives up.
const FIND_WAIT: Duration = Duration::from_secs(5);
/// The largest sample it takes (larger ones are counted as dropped).
const MAX_BYTES: u64 = 256 << 20;

fn router(connect: &[String]) -> anyhow::Result<&str> {
    match connect {
        [one] => Ok(one),
        [] => bail!("--ros2 needs a router endpoint"),
        _ => bail!("--ros2 connects to one router; got {}", connect.join(", ")),
    }
}

/// `topic list --ros2`: the topics of `domain`, their types, nodes and QoS.
pub(super) fn list(connect: &[String], domain: u32, out: &mut dyn Write) -> anyhow::Result<()> {
    let router = router(connect)?;
    let session = topics::tool_session(router)?;
    let graph = topics::graph(&session, domain, GRAPH_WAIT)?;
    writeln!(out, "ROS 2 topics of domain {domain} at {router}:")?;
    if graph.is_empty() {
        writeln!(out, "  none (no publisher or subscription token answered)")?;
    } else {
        write!(out, "{}", topics::graph_table(&graph))?;
    }
    Ok(())
}

/// `topic echo|bench --ros2 TOPIC`: subscribes to the topic as its publishers declare it.
pub(super) fn open(
    connect: &[String],
    domain: u32,
    topic: &str,
    requested: Requested,
    stats: bool,
) -> anyhow::Result<(Box<dyn Feed>, Vec<String>)> {
    let router = router(connect)?.to_owned();
    let session = topics::tool_session(&router)?;
    let found = find(&session, domain, topic)?;
    let reader = TopicReader::open(
        &session,
        domain,
        &found.name,
        &found.ros_type,
        &found.type_hash,
        requested.depth(),
        MAX_BYTES,
    )?;
    let mut warnings = Vec::new();
    if stats {
        warnings
            .push("--ros2: no statistics stream is published (the tool joins no run)".to_owned());
    }
    if requested.durability == streamwire_core::Durability::TransientLocal {
        warnings.push(
            "transient_local requested: a --ros2 subscription gets no history (it sees what is published after it subscribed)"
                .to_owned(),
        );
    }
    let header = topics::starts_with_header(&found.ros_type);
    Ok((
        Box::new(Ros2Feed {
            _session: session,
            reader,
            topic: found,
            router,
            requested,
            header,
        }),
        warnings,
    ))
}

/// The topic's entry in the graph, waiting up to `FIND_WAIT` for a publisher to appear.
fn find(session: &zenoh::Session, domain: u32, topic: &str) -> anyhow::Result<GraphTopic> {
    let until = Instant::now() + FIND_WAIT;
    loop {
        let graph = topics::graph(session, domain, GRAPH_WAIT)?;
        let mut of_topic: Vec<GraphTopic> = graph.into_iter().filter(|t| t.name == topic).collect();
        // A type somebody publishes first.
        of_topic.sort_by_key(|t| t.publishers.is_empty());
        if let Some(found) = of_topic.into_iter().next() {
            return Ok(found);
        }
        if Instant::now() >= until {
            bail!(
                "no publisher or subscription of {topic} in ROS domain {domain} ({} s; `topic list --ros2` shows the topics)",
                FIND_WAIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A ROS 2 topic's samples, measured.
struct Ros2Feed {
    _session: zenoh::Session,
    reader: TopicReader,
    topic: GraphTopic,
    router: String,
    requested: Requested,
    /// Whether the type starts with a header (latency from `header.stamp`).
    header: bool,
}

impl Feed for Ros2Feed {
    fn recv(&mut self, timeout: Duration) -> Option<Arrival> {
        let sample = self.reader.recv(timeout)?;
        let stamp = if self.header {
            topics::header_stamp(&sample.cdr)
        } else {
            u64::try_from(sample.attachment.source_timestamp).ok()
        };
        let message = streamwire_ros2::decode_any(&self.topic.ros_type, sample.cdr.clone())
            .and_then(Result::ok)
            .map(Arc::from);
        Some(Arrival {
            arrived: sample.arrived,
            arrived_wall: Timestamp::from_nanos(sample.arrived_wall),
            publish_time: stamp.map_or(Timestamp::ZERO, Timestamp::from_nanos),
            seq: sample.attachment.sequence_number.max(0).unsigned_abs(),
            bytes: sample.cdr.len() as u64,
            type_name: self.topic.ros_type.clone(),
            message,
        })
    }

    fn dropped(&self) -> u64 {
        self.reader.dropped() + self.reader.refused()
    }

    fn ended(&mut self) -> Option<String> {
        None
    }

    fn path(&self) -> String {
        let latency = if self.header {
            "latency from header.stamp"
        } else {
            "no header: latency from the publisher's source timestamp (the attachment's)"
        };
        format!(
            "zenoh subscription of ROS 2 topic {} ({}, published by {}) through the router at {}; {latency}",
            self.topic.name,
            self.topic.type_hash,
            self.topic
                .publishers
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            self.router
        )
    }

    fn size_meaning(&self, type_name: &str) -> String {
        format!(
            "serialized bytes: the {type_name} sample as it travels (CDR with its 4-byte encapsulation header)"
        )
    }

    fn granted(&self) -> String {
        format!(
            "{} (a zenoh subscription: what the router forwards, no history; dropped counts the tool's queue and refused samples)",
            qos_text(
                "best_effort",
                "volatile",
                &history_name(streamwire_core::History::KeepLast(
                    u32::try_from(self.requested.depth()).unwrap_or(u32::MAX)
                ))
            )
        )
    }

    fn cpu_note(&self) -> String {
        "nothing else runs in this process".to_owned()
    }

    fn publish_stats(&mut self, _stats: &TopicStats) {}

    fn stats_stream(&self) -> String {
        "not published (--ros2 joins no run)".to_owned()
    }
}
