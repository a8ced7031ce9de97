//! `Ros2Out`: a run's streams published as ROS 2 topics the way rmw_zenoh publishes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{
    Context, Counter, Envelope, Message as _, Node, NodeResult, StreamTap, Taps,
};
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image};
use streamwire_ros2::schema::RosSchema;
use zenoh::Wait as _;

use crate::liveliness::{Entity, EntityKind, NodeInfo, TopicInfo};
use crate::qos::RosQos;
use crate::{Attachment, ContractError, GID_LEN, topic_key};

/// rmw_zenoh's default router endpoint (`DEFAULT_RMW_ZENOH_SESSION_CONFIG.json5`).
pub const DEFAULT_CONNECT: &str = "tcp/127.0.0.1:7447";

/// How long a publishing thread waits for a message before it looks whether to stop.
const POLL: Duration = Duration::from_millis(100);

/// Why `Ros2Out` cannot start or publish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Ros2OutError {
    /// Started outside a run (the Harness): no taps.
    #[error("Ros2Out needs a run's taps (it does not run in the Harness)")]
    NoTaps,
    /// A `topics` entry names no stream of the run.
    #[error("`{stream}` is no stream of this run (streams: {known})")]
    UnknownStream {
        /// The entry's stream.
        stream: String,
        /// The run's streams.
        known: String,
    },
    /// A stream whose message has no ROS 2 type.
    #[error("`{stream}` carries {message}, which has no ROS 2 type")]
    NoRosType {
        /// The stream.
        stream: String,
        /// Its message type.
        message: &'static str,
    },
    /// A name, type or hash the contract refuses.
    #[error("`{stream}`: {source}")]
    Contract {
        /// The stream.
        stream: String,
        /// What the contract refused.
        source: ContractError,
    },
    /// The ROS 2 type's definition is missing (a type hash cannot be made).
    #[error("{ros_type}: {reason}")]
    Schema {
        /// The type.
        ros_type: &'static str,
        /// Why.
        reason: String,
    },
    /// `ROS_DOMAIN_ID` is set but not a number.
    #[error("ROS_DOMAIN_ID={0:?} is not a number")]
    Domain(String),
    /// The zenoh session could not be configured or opened, or an entity declared.
    #[error("zenoh: {0}")]
    Zenoh(String),
    /// No randomness for a GID, or no thread.
    #[error("{0}")]
    System(String),
}

/// Publishes streams of the run as ROS 2 topics over rmw_zenoh's contract, so that ROS 2
/// nodes on `rmw_zenoh_cpp` (and `ros2 topic list|echo`) see them.
///
/// One zenoh session per instance (a client of the router at `connect`: no multicast or
/// gossip scouting, no listening port), one ROS 2 node per instance (`node`, in
/// `namespace`), with its liveliness token and one publisher token per topic. Each topic
/// has its own thread (`sw ros2<i> <stream>`) reading a tap (a keep-last queue: a slow
/// ROS side drops there, never a producer) and putting CDR (with its encapsulation
/// header) on the topic's key with rmw_zenoh's attachment: a sequence number from 1, the
/// message's publish time, and a random GID per publisher. Per stream it counts
/// `published:<stream>` and `dropped:<stream>` (the tap's drops, gaps in the stream's
/// sequence numbers, a message that could not be encoded or put).
///
/// An image stream that travels compressed is published as `<topic>/compressed`
/// (`sensor_msgs/msg/CompressedImage`, the encoded bytes as they are, never re-encoded)
/// and as `<topic>` (`sensor_msgs/msg/Image`) only while a ROS subscriber matches: its
/// tap (and any decoding for it) exists only then; counted as `<stream>/raw`.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Ros2Out {
    /// The streams ROS 2 sees: `stream` (topic `/<stream>`) or `stream=/topic`.
    #[config]
    pub topics: Vec<String>,
    /// The ROS domain (default: `ROS_DOMAIN_ID`, else 0).
    #[config]
    pub domain: Option<u32>,
    /// The zenoh router (or peer) to connect to (default rmw_zenoh's `tcp/127.0.0.1:7447`).
    #[config]
    pub connect: String,
    /// The ROS 2 node's name.
    #[config]
    pub node: String,
    /// The ROS 2 node's namespace (empty: the root).
    #[config]
    pub namespace: String,
    /// The session and threads while running.
    #[state]
    pub running: Option<Publishing>,
}

impl Default for Ros2Out {
    fn default() -> Self {
        Ros2Out {
            topics: Vec::new(),
            domain: None,
            connect: DEFAULT_CONNECT.to_owned(),
            node: "streamwire".to_owned(),
            namespace: String::new(),
            running: None,
        }
    }
}

impl std::fmt::Debug for Ros2Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ros2Out")
            .field("topics", &self.topics)
            .field("domain", &self.domain)
            .field("connect", &self.connect)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// One topic `Ros2Out` publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicPlan {
    /// The stream, as counted (`color_image`).
    pub stream: String,
    /// The stream tapped (`color_image/compressed` for the bytes that travel).
    pub tapped: String,
    /// The message type asked of the tap (`None`: what the stream carries).
    pub message: Option<&'static str>,
    /// The ROS 2 topic (`/camera/compressed`).
    pub topic: String,
    /// Its ROS 2 type.
    pub ros_type: &'static str,
    /// Published only while a ROS subscriber matches (raw frames): the tap is opened
    /// then and closed when the last one leaves.
    pub on_demand: bool,
}

/// What `Ros2Out` publishes, given the run's streams (`(name, message type)`, encoded
/// forms included) and its `topics` entries.
///
/// ```
/// use streamwire_rmw::plan_topics;
/// let streams = vec![
///     ("color_image".to_owned(), "streamwire/Image"),
///     ("color_image/compressed".to_owned(), "streamwire/CompressedImage"),
///     ("odometry".to_owned(), "streamwire/Odometry"),
/// ];
/// let plan = plan_topics(&streams, &["color_image=/camera".into(), "odometry=/odom".into()])?;
/// let topics: Vec<&str> = plan.iter().map(|p| p.topic.as_str()).collect();
/// assert_eq!(topics, ["/camera/compressed", "/camera", "/odom"]);
/// assert_eq!(plan[0].tapped, "color_image/compressed");
/// // The raw frames, on demand only, counted as `color_image/raw`.
/// assert!(plan[1].on_demand && plan[1].stream == "color_image/raw");
/// assert!(plan_topics(&streams, &["lidar".into()]).is_err());
/// # Ok::<(), streamwire_rmw::Ros2OutError>(())
/// ```
pub fn plan_topics(
    available: &[(String, &'static str)],
    topics: &[String],
) -> Result<Vec<TopicPlan>, Ros2OutError> {
    let carries = |name: &str| {
        available
            .iter()
            .find(|(stream, _)| stream == name)
            .map(|(_, message)| *message)
    };
    let mut plan = Vec::new();
    for entry in topics {
        let (stream, topic) = match entry.split_once('=') {
            Some((stream, topic)) => (stream.trim().to_owned(), topic.trim().to_owned()),
            None => (entry.trim().to_owned(), format!("/{}", entry.trim())),
        };
        let Some(message) = carries(&stream) else {
            let known: Vec<&str> = available.iter().map(|(s, _)| s.as_str()).collect();
            return Err(Ros2OutError::UnknownStream {
                stream,
                known: known.join(", "),
            });
        };
        let compressed = format!("{stream}/compressed");
        let entries = if message == Image::TYPE_NAME
            && carries(&compressed) == Some(CompressedImage::TYPE_NAME)
        {
            // image_transport's names: the bytes as they travel on `<topic>/compressed`,
            // pixels on `<topic>` (decoded only while somebody reads them).
            vec![
                TopicPlan {
                    tapped: compressed,
                    message: Some(CompressedImage::TYPE_NAME),
                    topic: format!("{}/compressed", topic.trim_end_matches('/')),
                    ros_type: <CompressedImage as streamwire_ros2::RosMessage>::ROS_TYPE,
                    stream: stream.clone(),
                    on_demand: false,
                },
                TopicPlan {
                    tapped: stream.clone(),
                    message: Some(Image::TYPE_NAME),
                    topic,
                    ros_type: <Image as streamwire_ros2::RosMessage>::ROS_TYPE,
                    stream: format!("{stream}/raw"),
                    on_demand: true,
                },
            ]
        } else {
            let ros_type =
                streamwire_ros2::ros_type_of(message).ok_or_else(|| Ros2OutError::NoRosType {
                    stream: stream.clone(),
                    message,
                })?;
            vec![TopicPlan {
                tapped: stream.clone(),
                message: None,
                topic,
                ros_type,
                stream,
                on_demand: false,
            }]
        };
        for entry in entries {
            crate::keys::check_topic(&entry.topic).map_err(|source| Ros2OutError::Contract {
                stream: entry.stream.clone(),
                source,
            })?;
            plan.push(entry);
        }
    }
    Ok(plan)
}

/// The domain: the setting, else `ROS_DOMAIN_ID`, else 0.
pub(crate) fn resolve_domain(setting: Option<u32>) -> Result<u32, Ros2OutError> {
    if let Some(domain) = setting {
        return Ok(domain);
    }
    match std::env::var("ROS_DOMAIN_ID") {
        Ok(text) if !text.trim().is_empty() => {
            text.trim().parse().map_err(|_| Ros2OutError::Domain(text))
        }
        _ => Ok(0),
    }
}

/// A client session of the router at `connect`: no scouting, no listening port. A client,
/// not a peer: rmw_zenoh's peers expect direct links to each other (gossip), and a router
/// does not forward between two peers; it forwards a client's puts to every peer.
fn open_session(connect: &str) -> Result<zenoh::Session, Ros2OutError> {
    zenoh::open(session_config(connect)?)
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("opening a session to {connect}: {e}")))
}

/// The configuration of [`open_session`]'s session.
pub(crate) fn session_config(connect: &str) -> Result<zenoh::Config, Ros2OutError> {
    if connect.contains(['"', '\\']) {
        return Err(Ros2OutError::Zenoh(format!(
            "endpoint {connect:?} holds a quote"
        )));
    }
    let mut config = zenoh::Config::default();
    let settings = [
        ("mode", "\"client\"".to_owned()),
        ("connect/endpoints", format!("[\"{connect}\"]")),
        ("listen/endpoints", "[]".to_owned()),
        ("scouting/multicast/enabled", "false".to_owned()),
        ("scouting/gossip/enabled", "false".to_owned()),
    ];
    for (key, value) in settings {
        config
            .insert_json5(key, &value)
            .map_err(|e| Ros2OutError::Zenoh(format!("{key} = {value}: {e}")))?;
    }
    Ok(config)
}

/// The session, tokens and threads of a running `Ros2Out`.
pub struct Publishing {
    session: zenoh::Session,
    /// Kept to keep the node and its publishers in the ROS graph.
    tokens: Vec<zenoh::liveliness::LivelinessToken>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Node for Ros2Out {
    fn trigger(&self) -> streamwire_core::Trigger {
        // Only looks whether every published stream ended; publishing is on its threads.
        streamwire_core::Trigger::rate(10.0)
    }

    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let _span = tracing::info_span!("ros2_out", instance = %cx.instance_name()).entered();
        let taps = cx.taps().ok_or(Ros2OutError::NoTaps)?;
        let plan = plan_topics(&taps.streams(), &self.topics)?;
        let domain = resolve_domain(self.domain)?;
        let session = open_session(&self.connect)?;
        let node = NodeInfo {
            domain,
            zid: session.zid().to_string(),
            node_id: 0,
            enclave: "/".to_owned(),
            namespace: if self.namespace.is_empty() {
                "/".to_owned()
            } else {
                self.namespace.clone()
            },
            name: self.node.clone(),
        };
        let mut publishing = Publishing {
            tokens: vec![declare_token(
                &session,
                &Entity::node(node.clone()),
                "node",
            )?],
            session,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        for (index, entry) in plan.into_iter().enumerate() {
            let worker = publishing.declare(cx, &node, index, entry, &taps)?;
            let name = format!("sw ros2{index} {}", worker.plan.stream);
            let thread = std::thread::Builder::new()
                .name(name)
                .spawn(move || worker.run())
                .map_err(|e| Ros2OutError::System(format!("no thread: {e}")))?;
            publishing.threads.push(thread);
        }
        self.running = Some(publishing);
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let ended = self
            .running
            .as_ref()
            .is_some_and(|p| p.threads.iter().all(|t| t.is_finished()));
        if ended {
            cx.finish();
        }
        Ok(())
    }

    /// The streams it publishes: declared so that a closed run of several processes lets
    /// its process subscribe to them where they are produced.
    fn taps(&self) -> Taps {
        let streams: Vec<String> = self
            .topics
            .iter()
            .map(|entry| {
                entry
                    .split_once('=')
                    .map_or(entry.as_str(), |(s, _)| s)
                    .trim()
                    .to_owned()
            })
            .collect();
        if streams.is_empty() {
            Taps::None
        } else {
            Taps::Streams(streams)
        }
    }

    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(publishing) = self.running.take() {
            publishing.finish();
        }
        Ok(())
    }
}

pub(crate) fn declare_token(
    session: &zenoh::Session,
    entity: &Entity,
    what: &str,
) -> Result<zenoh::liveliness::LivelinessToken, Ros2OutError> {
    let key = entity
        .to_keyexpr()
        .map_err(|source| Ros2OutError::Contract {
            stream: what.to_owned(),
            source,
        })?;
    session
        .liveliness()
        .declare_token(key.clone())
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("liveliness token {key}: {e}")))
}

impl Publishing {
    /// Declares one topic's publisher and token and makes its worker.
    fn declare(
        &mut self,
        cx: &mut Context<'_>,
        node: &NodeInfo,
        index: usize,
        plan: TopicPlan,
        taps: &Arc<dyn streamwire_core::TapService>,
    ) -> Result<TopicWorker, Ros2OutError> {
        let contract = |source| Ros2OutError::Contract {
            stream: plan.stream.clone(),
            source,
        };
        let schema = RosSchema::resolve(plan.ros_type, &[]).map_err(|e| Ros2OutError::Schema {
            ros_type: plan.ros_type,
            reason: e.to_string(),
        })?;
        let type_hash = schema.rihs01();
        let key =
            topic_key(node.domain, &plan.topic, plan.ros_type, &type_hash).map_err(contract)?;
        let entity = Entity {
            node: node.clone(),
            entity_id: index as u64 + 1,
            kind: EntityKind::Publisher,
            topic: Some(TopicInfo {
                name: plan.topic.clone(),
                ros_type: plan.ros_type.to_owned(),
                type_hash,
                // rmw_zenoh's default profile: reliable, volatile, keep last.
                qos: RosQos::default(),
            }),
        };
        self.tokens
            .push(declare_token(&self.session, &entity, &plan.stream)?);
        let publisher = self
            .session
            .declare_publisher(key.clone())
            .wait()
            .map_err(|e| Ros2OutError::Zenoh(format!("publisher on {key}: {e}")))?;
        let (tap, demand) = if plan.on_demand {
            (None, Some(Demand::watch(&publisher, taps.clone(), &key)?))
        } else {
            let tap = taps
                .tap(&plan.tapped, plan.message)
                .map_err(|e| Ros2OutError::Zenoh(format!("tap {}: {e}", plan.tapped)))?;
            (Some(tap), None)
        };
        let mut gid = [0; GID_LEN];
        getrandom::fill(&mut gid).map_err(|e| Ros2OutError::System(format!("no GID: {e}")))?;
        Ok(TopicWorker {
            instance: cx.instance_name().to_owned(),
            published: cx.counter(&format!("published:{}", plan.stream)),
            dropped: cx.counter(&format!("dropped:{}", plan.stream)),
            plan,
            tap,
            demand,
            resync: false,
            publisher,
            gid,
            sequence_number: 0,
            next_seq: 0,
            stop: self.stop.clone(),
            failures: BurstLog::default(),
        })
    }

    /// Stops the threads, then leaves the graph (tokens) and closes the session.
    fn finish(self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            if thread.join().is_err() {
                tracing::error!("a ROS 2 publishing thread panicked");
            }
        }
        drop(self.tokens);
        if let Err(e) = self.session.close().wait() {
            tracing::warn!(error = %e, "the ROS 2 zenoh session did not close cleanly");
        }
    }
}

/// Whether a ROS subscriber matches an on-demand topic's publisher (zenoh's matching
/// status, kept by a listener that lives as long as the publisher).
struct Demand {
    matched: Arc<AtomicBool>,
    taps: Arc<dyn streamwire_core::TapService>,
}

impl Demand {
    fn watch(
        publisher: &zenoh::pubsub::Publisher<'static>,
        taps: Arc<dyn streamwire_core::TapService>,
        key: &str,
    ) -> Result<Demand, Ros2OutError> {
        let matched = Arc::new(AtomicBool::new(false));
        let zenoh_error =
            |e: zenoh::Error| Ros2OutError::Zenoh(format!("the subscribers of {key}: {e}"));
        {
            let matched = matched.clone();
            publisher
                .matching_listener()
                .callback(move |status| matched.store(status.matching(), Ordering::SeqCst))
                .background()
                .wait()
                .map_err(zenoh_error)?;
        }
        // The listener reports changes; the status now is asked once.
        let now = publisher.matching_status().wait().map_err(zenoh_error)?;
        matched.store(now.matching(), Ordering::SeqCst);
        Ok(Demand { matched, taps })
    }
}

/// One topic's thread.
struct TopicWorker {
    instance: String,
    plan: TopicPlan,
    /// The tap (an on-demand topic's only while a subscriber matches).
    tap: Option<Box<dyn StreamTap>>,
    /// An on-demand topic's subscribers, and the taps to open when one comes.
    demand: Option<Demand>,
    /// The next message starts the count of gaps again (a tap just opened).
    resync: bool,
    publisher: zenoh::pubsub::Publisher<'static>,
    gid: [u8; GID_LEN],
    /// The last sequence number put (rmw_zenoh's first is 1).
    sequence_number: i64,
    /// The stream's sequence number expected next: a jump is messages never seen.
    next_seq: u64,
    stop: Arc<AtomicBool>,
    published: Counter,
    dropped: Counter,
    failures: BurstLog,
}

impl TopicWorker {
    fn run(mut self) {
        let span =
            tracing::info_span!("ros2_out", instance = %self.instance, stream = %self.plan.stream);
        let _entered = span.enter();
        while !self.stop.load(Ordering::SeqCst) {
            if !self.follow_demand() {
                std::thread::sleep(POLL);
                continue;
            }
            let Some(tap) = &self.tap else { break };
            match tap.recv_timeout(POLL) {
                Some(envelope) => self.publish(&envelope),
                None if tap.is_closed() => break,
                None => {}
            }
        }
        if let Some(tap) = &self.tap {
            self.dropped.add(tap.in_flight_at_stop());
        }
    }

    /// For an on-demand topic, opens the tap when a subscriber matches and closes it
    /// when none does; false while there is nothing to publish.
    fn follow_demand(&mut self) -> bool {
        let Some(demand) = &self.demand else {
            return true;
        };
        if !demand.matched.load(Ordering::SeqCst) {
            self.tap = None;
            return false;
        }
        if self.tap.is_none() {
            match demand.taps.tap(&self.plan.tapped, self.plan.message) {
                Ok(tap) => {
                    self.tap = Some(tap);
                    self.resync = true;
                }
                Err(e) => {
                    self.fail(&format!("tap {}: {e}", self.plan.tapped));
                    return false;
                }
            }
        }
        true
    }

    fn publish(&mut self, envelope: &Envelope) {
        let seq = envelope.header.seq;
        if std::mem::take(&mut self.resync) {
            // What was published while nobody subscribed was never asked for.
            self.next_seq = seq;
        }
        if seq > self.next_seq {
            self.dropped.add(seq - self.next_seq);
        }
        self.next_seq = self.next_seq.max(seq + 1);
        let cdr = match streamwire_ros2::encode_any(envelope.message.as_ref()) {
            Some(Ok((ros_type, cdr))) if ros_type == self.plan.ros_type => cdr,
            Some(Ok((ros_type, _))) => {
                return self.fail(&format!(
                    "encoded as {ros_type}, not {}",
                    self.plan.ros_type
                ));
            }
            Some(Err(e)) => return self.fail(&chain(&e).to_string()),
            None => return self.fail("no ROS 2 type"),
        };
        self.sequence_number += 1;
        let attachment = Attachment {
            sequence_number: self.sequence_number,
            source_timestamp: i64::try_from(envelope.header.publish_time.as_nanos())
                .unwrap_or(i64::MAX),
            gid: self.gid,
        };
        let put = self
            .publisher
            .put(cdr)
            .attachment(attachment.encode().to_vec())
            .wait();
        match put {
            Ok(()) => self.published.increment(),
            Err(e) => self.fail(&format!("put: {e}")),
        }
    }

    /// Counts a message not published, logging the first of a burst.
    fn fail(&mut self, why: &str) {
        self.dropped.increment();
        if let Some(unsaid) = self.failures.note() {
            tracing::error!(
                stream = %self.plan.stream,
                "a message was not published to ROS 2 (counted in dropped): {why}{}",
                more_since(unsaid)
            );
        }
    }
}
