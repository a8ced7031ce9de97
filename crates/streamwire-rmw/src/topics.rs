//! The ROS 2 graph and a topic's raw samples, for the topic tools (`topic list|echo|bench
//! --ros2`): topics found from the liveliness tokens of their publishers and
//! subscriptions, and a topic's samples as they arrive (CDR, the attachment, the arrival
//! time), read without being published anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamwire_core::Counter;
use streamwire_ros2::schema::{BaseType, RosSchema};
use zenoh::Wait as _;

use crate::bridge::session_config;
use crate::liveliness::{ADMIN_SPACE, Entity, EntityKind};
use crate::qos::RosQos;
use crate::source::{Inbox, payload_bytes};
use crate::{ATTACHMENT_LEN, Attachment, Ros2OutError, topic_key};

/// A topic of the ROS 2 graph, as its endpoints' tokens say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphTopic {
    /// The topic (`/camera/compressed`).
    pub name: String,
    /// Its ROS 2 type.
    pub ros_type: String,
    /// The type's hash.
    pub type_hash: String,
    /// The nodes publishing it (`/namespace/node`), once each.
    pub publishers: BTreeSet<String>,
    /// The nodes subscribing to it.
    pub subscribers: BTreeSet<String>,
    /// Its publishers' QoS profiles.
    pub qos: BTreeSet<String>,
}

/// A session for a tool: a client of the router at `connect`, no scouting.
pub fn tool_session(connect: &str) -> Result<zenoh::Session, Ros2OutError> {
    zenoh::open(session_config(connect)?)
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("opening a session to {connect}: {e}")))
}

/// The topics of `domain`: every publisher and subscription token alive, asked of the
/// router (waiting up to `timeout` for the answers), grouped by topic, type and hash.
/// Tokens that do not parse are skipped (they are no rmw_zenoh endpoint).
pub fn graph(
    session: &zenoh::Session,
    domain: u32,
    timeout: Duration,
) -> Result<Vec<GraphTopic>, Ros2OutError> {
    let key = format!("{ADMIN_SPACE}/{domain}/**");
    let replies = session
        .liveliness()
        .get(key.clone())
        .timeout(timeout)
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("asking for {key}: {e}")))?;
    let mut topics: BTreeMap<(String, String, String), GraphTopic> = BTreeMap::new();
    while let Ok(reply) = replies.recv() {
        let Ok(sample) = reply.result() else { continue };
        let Ok(entity) = Entity::parse(sample.key_expr().as_str()) else {
            continue;
        };
        let Some(topic) = entity.topic else { continue };
        let node = format!(
            "{}/{}",
            entity.node.namespace.trim_end_matches('/'),
            entity.node.name
        );
        let entry = topics
            .entry((
                topic.name.clone(),
                topic.ros_type.clone(),
                topic.type_hash.clone(),
            ))
            .or_insert_with(|| GraphTopic {
                name: topic.name.clone(),
                ros_type: topic.ros_type.clone(),
                type_hash: topic.type_hash.clone(),
                publishers: BTreeSet::new(),
                subscribers: BTreeSet::new(),
                qos: BTreeSet::new(),
            });
        match entity.kind {
            EntityKind::Publisher => {
                entry.publishers.insert(node);
                entry.qos.insert(qos_words(&topic.qos));
            }
            EntityKind::Subscription => {
                entry.subscribers.insert(node);
            }
            _ => {}
        }
    }
    Ok(topics.into_values().collect())
}

/// A QoS profile as a person reads it: `reliable, volatile, keep_last(42)`.
pub fn qos_words(qos: &RosQos) -> String {
    use crate::qos::{Durability, History, Reliability};
    let reliability = match qos.reliability {
        Reliability::BestEffort => "best_effort",
        Reliability::Reliable => "reliable",
        _ => "system_default",
    };
    let durability = match qos.durability {
        Durability::TransientLocal => "transient_local",
        Durability::Volatile => "volatile",
        _ => "system_default",
    };
    let history = match qos.history {
        History::KeepAll => "keep_all".to_owned(),
        _ => format!("keep_last({})", qos.depth),
    };
    format!("{reliability}, {durability}, {history}")
}

/// The graph as `topic list --ros2` prints it: a row per topic and type, its publishing
/// and subscribing nodes and its publishers' QoS.
pub fn graph_table(topics: &[GraphTopic]) -> String {
    let names = |set: &BTreeSet<String>| {
        if set.is_empty() {
            "nobody".to_owned()
        } else {
            set.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    let rows: Vec<[String; 5]> = topics
        .iter()
        .map(|t| {
            [
                t.name.clone(),
                t.ros_type.clone(),
                names(&t.publishers),
                names(&t.subscribers),
                t.qos.iter().cloned().collect::<Vec<_>>().join("; "),
            ]
        })
        .collect();
    let header = ["topic", "type", "published by", "subscribed by", "qos"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0) // infallible: the header is always there
    };
    let widths = [width(0), width(1), width(2), width(3)];
    let line = |cells: [&str; 5]| {
        let mut text = String::from(" ");
        for (cell, w) in cells.iter().zip(widths) {
            text.push_str(&format!(" {cell:w$} "));
        }
        text.push_str(&format!(" {}", cells[4]));
        text.trim_end().to_owned() + "\n"
    };
    let mut text = line(header);
    for row in &rows {
        text.push_str(&line([&row[0], &row[1], &row[2], &row[3], &row[4]]));
    }
    text
}

/// One sample of a topic as it arrived.
#[derive(Clone, Debug)]
pub struct TopicSample {
    /// When it arrived (monotonic).
    pub arrived: Instant,
    /// When it arrived, ns since the epoch.
    pub arrived_wall: u64,
    /// Its attachment (sequence number, source time, GID).
    pub attachment: Attachment,
    /// Its CDR, encapsulation header included.
    pub cdr: Bytes,
}

/// A topic's samples, subscribed on its data key into a keep-last queue.
pub struct TopicReader {
    _subscriber: zenoh::pubsub::Subscriber<()>,
    inbox: Arc<Inbox<TopicSample>>,
    refused: Counter,
}

impl std::fmt::Debug for TopicReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopicReader").finish_non_exhaustive()
    }
}

impl TopicReader {
    /// Subscribes to `topic` of type `ros_type` (hash `type_hash`) in `domain`, keeping
    /// the last `depth` samples; a sample without rmw_zenoh's attachment or larger than
    /// `max_bytes` is refused and counted ([`refused`](Self::refused)).
    pub fn open(
        session: &zenoh::Session,
        domain: u32,
        topic: &str,
        ros_type: &str,
        type_hash: &str,
        depth: usize,
        max_bytes: u64,
    ) -> Result<TopicReader, Ros2OutError> {
        let key = topic_key(domain, topic, ros_type, type_hash).map_err(|source| {
            Ros2OutError::Contract {
                stream: topic.to_owned(),
                source,
            }
        })?;
        let inbox = Arc::new(Inbox::new(depth.max(1), Counter::new()));
        let refused = Counter::new();
        let subscriber = session
            .declare_subscriber(key.clone())
            .callback({
                let inbox = inbox.clone();
                let refused = refused.clone();
                move |sample| match read_sample(&sample, max_bytes) {
                    Some(sample) => inbox.push(sample),
                    None => refused.increment(),
                }
            })
            .wait()
            .map_err(|e| Ros2OutError::Zenoh(format!("subscriber on {key}: {e}")))?;
        Ok(TopicReader {
            _subscriber: subscriber,
            inbox,
            refused,
        })
    }

    /// The next sample, waiting up to `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<TopicSample> {
        self.inbox.pop(timeout)
    }

    /// Samples the queue replaced before they were read.
    pub fn dropped(&self) -> u64 {
        self.inbox.dropped()
    }

    /// Samples refused (no attachment, or larger than `max_bytes`).
    pub fn refused(&self) -> u64 {
        self.refused.get()
    }
}

fn read_sample(sample: &zenoh::sample::Sample, max_bytes: u64) -> Option<TopicSample> {
    let arrived = Instant::now();
    let arrived_wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let attachment = sample.attachment()?;
    if attachment.len() != ATTACHMENT_LEN || sample.payload().len() as u64 > max_bytes {
        return None;
    }
    let attachment = Attachment::decode(&attachment.to_bytes()).ok()?;
    Some(TopicSample {
        arrived,
        arrived_wall,
        attachment,
        cdr: payload_bytes(sample.payload()),
    })
}

/// Whether messages of `ros_type` start with a `std_msgs/Header` (so their `header.stamp`
/// is the first 8 bytes after the encapsulation), as far as this crate knows the type.
pub fn starts_with_header(ros_type: &str) -> bool {
    RosSchema::resolve(ros_type, &[]).is_ok_and(|schema| {
        schema.root().fields.first().is_some_and(|field| {
            matches!(&field.ty.base, BaseType::Nested(name) if name == "std_msgs/msg/Header" || name == "std_msgs/Header")
        })
    })
}

/// `header.stamp` of a sample whose type starts with a header, ns since the epoch; `None`
/// when the bytes are too short or the stamp is before the epoch.
pub fn header_stamp(cdr: &[u8]) -> Option<u64> {
    let sec = i32::from_le_bytes(cdr.get(4..8)?.try_into().ok()?);
    let nanosec = u32::from_le_bytes(cdr.get(8..12)?.try_into().ok()?);
    let sec = u64::try_from(sec).ok()?;
    (nanosec < 1_000_000_000).then(|| sec * 1_000_000_000 + u64::from(nanosec))
}
