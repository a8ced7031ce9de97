//! ROS 2 topics into a run: source modules subscribing to a topic the way an rmw_zenoh
//! subscription does (the data key, a node and a subscription token), each publishing
//! the built-in message its ROS 2 type maps to.
//!
//! Every sample is bounded and range-checked before anything is made of it: its size
//! against `max_bytes` (and zenoh's own message limit a little above it, so the session
//! never reassembles more), the 33-byte attachment rmw_zenoh requires, then the CDR by
//! `streamwire_ros2`'s reader (lengths checked against the bytes left, no allocation
//! larger than the sample). A refused sample is counted on the instance's row by its
//! reason and logged once per burst; nothing panics.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{Context, Counter, PortError};
use streamwire_msgs::ImageCompression;
use streamwire_ros2::schema::RosSchema;
use zenoh::Wait as _;
use zenoh::sample::{Sample, SampleKind};

use crate::bridge::{declare_token, resolve_domain, session_config};
use crate::keys::mangle;
use crate::liveliness::{Entity, EntityKind, NodeInfo, TopicInfo};
use crate::qos::{Durability, Reliability, RosQos};
use crate::{ATTACHMENT_LEN, Attachment, ContractError, Ros2OutError, topic_key};

/// The largest sample a `Ros2*In` takes by default: 64 MiB (a 4K rgb8 frame is 25 MB).
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// Samples queued between zenoh's thread and the module's by default (keep-last).
pub const DEFAULT_QUEUE: u32 = 8;

/// How long a step waits for a sample before it returns (so that a stop is seen).
const POLL: Duration = Duration::from_millis(100);

/// What zenoh may reassemble beyond `max_bytes`: a sample a little larger is refused and
/// counted here; one larger still never leaves zenoh's defragmentation (zenoh logs it).
const ZENOH_SLACK: u64 = 1 << 20;

/// Why a `Ros2*In` cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Ros2InError {
    /// A setting out of its range.
    #[error("setting `{setting}`: {why}")]
    Setting {
        /// The setting.
        setting: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A ROS 2 type this module does not read.
    #[error("`{ros_type}` is not a type this module reads (it reads {accepted})")]
    RosType {
        /// The type asked.
        ros_type: String,
        /// The types it reads.
        accepted: String,
    },
    /// A topic name the contract refuses.
    #[error("topic {topic:?}")]
    Contract {
        /// The topic.
        topic: String,
        /// What the contract refused.
        #[source]
        source: ContractError,
    },
    /// The session, a token or the subscription could not be made.
    #[error("subscribing to {topic}")]
    Setup {
        /// The topic.
        topic: String,
        /// Why.
        #[source]
        source: Ros2OutError,
    },
}

/// Why one sample was not published: each reason is a counter on the instance's row.
#[derive(Debug)]
pub enum Refusal {
    /// Larger than `max_bytes` (`refused:size`).
    Size(u64),
    /// No attachment, or not rmw_zenoh's 33 bytes (`refused:attachment`): rmw_zenoh
    /// drops such a sample too.
    Attachment(String),
    /// Bytes that are not CDR of the type (`refused:cdr`).
    Cdr(streamwire_ros2::DecodeError),
    /// A valid message the run's message cannot carry, e.g. a PNG or a depth image on an
    /// image topic (`refused:content`).
    Content(String),
    /// The output refused it (not a sample's fault: ends the step with this error).
    Publish(PortError),
}

impl Refusal {
    fn counter(&self) -> &'static str {
        match self {
            Refusal::Size(_) => "refused:size",
            Refusal::Attachment(_) => "refused:attachment",
            Refusal::Cdr(_) => "refused:cdr",
            Refusal::Content(_) => "refused:content",
            Refusal::Publish(_) => "refused:publish",
        }
    }

    fn reason(&self) -> String {
        match self {
            Refusal::Size(len) => format!("{len} bytes, more than max_bytes"),
            Refusal::Attachment(why) | Refusal::Content(why) => why.clone(),
            Refusal::Cdr(e) => chain(e).to_string(),
            Refusal::Publish(e) => chain(e).to_string(),
        }
    }
}

impl From<streamwire_ros2::DecodeError> for Refusal {
    fn from(e: streamwire_ros2::DecodeError) -> Refusal {
        Refusal::Cdr(e)
    }
}

impl From<PortError> for Refusal {
    fn from(e: PortError) -> Refusal {
        Refusal::Publish(e)
    }
}

/// The settings every `Ros2*In` shares, as its fields say.
#[derive(Clone, Debug)]
pub struct InSettings {
    /// The topic (`/camera/compressed`).
    pub topic: String,
    /// Its ROS 2 type.
    pub ros_type: String,
    /// The domain (else `ROS_DOMAIN_ID`, else 0).
    pub domain: Option<u32>,
    /// The router.
    pub connect: String,
    /// The node's name (empty: the instance's name).
    pub node: String,
    /// The node's namespace.
    pub namespace: String,
    /// `reliable` or `best_effort`.
    pub reliability: String,
    /// `volatile` (the only durability read so far).
    pub durability: String,
    /// Samples queued between zenoh and the module (keep-last).
    pub queue: u32,
    /// The largest sample taken.
    pub max_bytes: u64,
}

impl InSettings {
    /// The subscription's QoS, refusing a policy it cannot keep.
    pub fn qos(&self) -> Result<RosQos, Ros2InError> {
        let setting = |setting, why: &str| Ros2InError::Setting {
            setting,
            why: why.to_owned(),
        };
        let reliability = match self.reliability.as_str() {
            "reliable" => Reliability::Reliable,
            "best_effort" => Reliability::BestEffort,
            _ => return Err(setting("reliability", "reliable or best_effort")),
        };
        if self.durability != "volatile" {
            return Err(setting(
                "durability",
                "volatile (a transient_local subscription, served from the publishers' caches, is not read yet)",
            ));
        }
        if self.queue == 0 {
            return Err(setting("queue", "at least 1"));
        }
        Ok(RosQos {
            reliability,
            depth: u64::from(self.queue),
            ..RosQos::default()
        })
    }
}

/// Why a publisher of the topic does not match the subscription, or `None` when it does:
/// its type (another type or type hash puts on another key, so nothing arrives), or its
/// QoS as DDS and rmw_zenoh's compatibility check say (a best-effort publisher for a
/// reliable subscription, a volatile one for a transient-local subscription).
///
/// ```
/// use streamwire_rmw::liveliness::TopicInfo;
/// use streamwire_rmw::qos::{Reliability, RosQos};
/// use streamwire_rmw::publisher_mismatch;
/// let ours = TopicInfo {
///     name: "/odom".into(),
///     ros_type: "nav_msgs/msg/Odometry".into(),
///     type_hash: format!("RIHS01_{}", "0".repeat(64)),
///     qos: RosQos::default(),
/// };
/// assert_eq!(publisher_mismatch(&ours, &ours), None);
/// let best_effort = TopicInfo {
///     qos: RosQos { reliability: Reliability::BestEffort, ..RosQos::default() },
///     ..ours.clone()
/// };
/// assert!(publisher_mismatch(&ours, &best_effort).is_some_and(|why| why.contains("best effort")));
/// ```
pub fn publisher_mismatch(ours: &TopicInfo, theirs: &TopicInfo) -> Option<String> {
    if theirs.ros_type != ours.ros_type || theirs.type_hash != ours.type_hash {
        return Some(format!(
            "it publishes {} ({}), this subscription reads {} ({})",
            theirs.ros_type, theirs.type_hash, ours.ros_type, ours.type_hash
        ));
    }
    if ours.qos.reliability == Reliability::Reliable
        && theirs.qos.reliability == Reliability::BestEffort
    {
        return Some("a best effort publisher for a reliable subscription".to_owned());
    }
    if ours.qos.durability == Durability::TransientLocal
        && theirs.qos.durability == Durability::Volatile
    {
        return Some("a volatile publisher for a transient local subscription".to_owned());
    }
    None
}

/// Samples between zenoh's callback and the reader: keep-last `depth`, every sample it
/// replaces counted.
pub(crate) struct Inbox<T> {
    queue: Mutex<VecDeque<T>>,
    ready: Condvar,
    depth: usize,
    dropped: Counter,
}

impl<T> Inbox<T> {
    pub(crate) fn new(depth: usize, dropped: Counter) -> Inbox<T> {
        Inbox {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            depth,
            dropped,
        }
    }

    pub(crate) fn push(&self, sample: T) {
        let mut queue = self.queue.lock();
        if queue.len() >= self.depth {
            queue.pop_front();
            self.dropped.increment();
        }
        queue.push_back(sample);
        self.ready.notify_one();
    }

    pub(crate) fn pop(&self, wait: Duration) -> Option<T> {
        let mut queue = self.queue.lock();
        if queue.is_empty() {
            self.ready.wait_for(&mut queue, wait);
        }
        queue.pop_front()
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.get()
    }
}

/// The counters of a `Ros2*In`, and the log of refusals.
#[derive(Clone)]
struct InCounters {
    received: Counter,
    published: Counter,
    refused: [(&'static str, Counter); 5],
    incompatible: Counter,
    log: Arc<BurstLog>,
    topic: Arc<str>,
}

impl InCounters {
    fn new(cx: &Context<'_>, topic: &str) -> InCounters {
        let refused = [
            "refused:size",
            "refused:attachment",
            "refused:cdr",
            "refused:content",
            "refused:publish",
        ]
        .map(|name| (name, cx.counter(name)));
        InCounters {
            received: cx.counter("received"),
            published: cx.counter("published"),
            refused,
            incompatible: cx.counter("incompatible_publishers"),
            log: Arc::new(BurstLog::default()),
            topic: topic.into(),
        }
    }

    fn refuse(&self, refusal: &Refusal) {
        let name = refusal.counter();
        if let Some((_, counter)) = self.refused.iter().find(|(n, _)| *n == name) {
            counter.increment();
        }
        if let Some(unsaid) = self.log.note() {
            tracing::warn!(
                topic = %self.topic,
                "a ROS 2 sample was refused (counted in {name}): {}{}",
                refusal.reason(),
                more_since(unsaid)
            );
        }
    }
}

/// The payload as one `Bytes`: a payload of one zenoh slice (what a sample received whole
/// is) is kept as that slice, without a copy; one of several slices is joined.
pub(crate) fn payload_bytes(payload: &zenoh::bytes::ZBytes) -> Bytes {
    let buffer = zenoh_buffers::ZBuf::from(payload.clone());
    let mut slices = zenoh_buffers::buffer::SplitBuffer::slices(&buffer);
    match (slices.next(), slices.next()) {
        (Some(_), None) => match buffer.zslices().next() {
            Some(slice) => Bytes::from_owner(ZenohSlice(slice.clone())),
            None => Bytes::new(),
        },
        _ => Bytes::from(payload.to_bytes().into_owned()),
    }
}

/// A zenoh slice owning the bytes a `Bytes` points into.
struct ZenohSlice(zenoh_buffers::ZSlice);

impl AsRef<[u8]> for ZenohSlice {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref()
    }
}

/// Checks what rmw_zenoh checks before a sample is read: the attachment, and our size
/// limit, both before a byte of the payload is touched.
fn admit(sample: &Sample, max_bytes: u64, gaps: &Gaps) -> Result<Bytes, Refusal> {
    let Some(attachment) = sample.attachment() else {
        return Err(Refusal::Attachment("no attachment".to_owned()));
    };
    if attachment.len() != ATTACHMENT_LEN {
        return Err(Refusal::Attachment(format!(
            "an attachment of {} bytes, not {ATTACHMENT_LEN}",
            attachment.len()
        )));
    }
    let attachment = Attachment::decode(&attachment.to_bytes())
        .map_err(|e| Refusal::Attachment(e.to_string()))?;
    gaps.note(&attachment);
    let len = sample.payload().len() as u64;
    if len > max_bytes {
        return Err(Refusal::Size(len));
    }
    Ok(payload_bytes(sample.payload()))
}

/// The last sequence number of each publisher (by GID), so that a sample that never
/// arrived (lost on the way, or dropped inside zenoh for exceeding its message limit) is
/// counted in `lost`. At most `MAX_PUBLISHERS` are followed: past that the table starts
/// again (a flood of made-up GIDs costs memory no longer than that).
struct Gaps {
    last: Mutex<std::collections::HashMap<[u8; crate::GID_LEN], i64>>,
    lost: Counter,
}

/// Publishers followed by [`Gaps`] at most.
const MAX_PUBLISHERS: usize = 256;

impl Gaps {
    fn note(&self, attachment: &Attachment) {
        let mut last = self.last.lock();
        if last.len() >= MAX_PUBLISHERS && !last.contains_key(&attachment.gid) {
            last.clear();
        }
        let seq = attachment.sequence_number;
        if let Some(previous) = last.insert(attachment.gid, seq)
            && seq > previous
        {
            let missing = seq.saturating_sub(previous).saturating_sub(1);
            // Not negative: seq > previous.
            self.lost.add(missing.unsigned_abs());
        }
    }
}

/// A running subscription: its session, tokens, subscribers and inbox.
pub struct Subscribed {
    session: zenoh::Session,
    /// Kept to keep the node and its subscription in the ROS graph.
    tokens: Vec<zenoh::liveliness::LivelinessToken>,
    /// Kept to keep receiving (data, and the topic's publisher tokens).
    subscribers: Vec<zenoh::pubsub::Subscriber<()>>,
    inbox: Arc<Inbox<Bytes>>,
    counters: InCounters,
    /// The ROS 2 type read, as the module's `ros_type` names it.
    pub ros_type: &'static str,
}

impl std::fmt::Debug for Subscribed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribed")
            .field("ros_type", &self.ros_type)
            .finish_non_exhaustive()
    }
}

impl Subscribed {
    /// Subscribes: the session, the node's and the subscription's tokens, the data
    /// subscriber and the watch of the topic's publishers.
    pub fn start(
        cx: &Context<'_>,
        settings: &InSettings,
        accepted: &[&'static str],
    ) -> Result<Subscribed, Ros2InError> {
        let topic = settings.topic.clone();
        let setup = |source| Ros2InError::Setup {
            topic: topic.clone(),
            source,
        };
        let ros_type = accepted
            .iter()
            .copied()
            .find(|t| *t == settings.ros_type)
            .ok_or_else(|| Ros2InError::RosType {
                ros_type: settings.ros_type.clone(),
                accepted: accepted.join(", "),
            })?;
        let qos = settings.qos()?;
        if settings.max_bytes == 0 {
            return Err(Ros2InError::Setting {
                setting: "max_bytes",
                why: "at least 1".to_owned(),
            });
        }
        let domain = resolve_domain(settings.domain).map_err(setup)?;
        let type_hash = RosSchema::resolve(ros_type, &[])
            .map_err(|e| {
                setup(Ros2OutError::Schema {
                    ros_type,
                    reason: e.to_string(),
                })
            })?
            .rihs01();
        let contract = |source| Ros2InError::Contract {
            topic: topic.clone(),
            source,
        };
        let key = topic_key(domain, &topic, ros_type, &type_hash).map_err(contract)?;
        let session = open(settings).map_err(setup)?;
        let node = node_info(cx, settings, domain, &session);
        let ours = TopicInfo {
            name: topic.clone(),
            ros_type: ros_type.to_owned(),
            type_hash,
            qos,
        };
        let subscription = Entity {
            node: node.clone(),
            entity_id: 1,
            kind: EntityKind::Subscription,
            topic: Some(ours.clone()),
        };
        let tokens = vec![
            declare_token(&session, &Entity::node(node.clone()), "node").map_err(setup)?,
            declare_token(&session, &subscription, &topic).map_err(setup)?,
        ];
        let counters = InCounters::new(cx, &topic);
        let inbox = Arc::new(Inbox::new(settings.queue as usize, cx.counter("dropped")));
        let gaps = Gaps {
            last: Mutex::new(std::collections::HashMap::new()),
            lost: cx.counter("lost"),
        };
        let data = subscribe_data(&session, &key, settings.max_bytes, gaps, &inbox, &counters)
            .map_err(setup)?;
        let graph = watch_publishers(&session, domain, ours, &counters).map_err(setup)?;
        Ok(Subscribed {
            session,
            tokens,
            subscribers: vec![data, graph],
            inbox,
            counters,
            ros_type,
        })
    }

    /// Takes the next sample (waiting up to a poll period) and hands it to `deliver`,
    /// counting what it publishes and what it refuses. Only an output's error is
    /// returned.
    pub fn step(
        &self,
        deliver: impl FnOnce(&'static str, Bytes) -> Result<(), Refusal>,
    ) -> Result<(), PortError> {
        let Some(sample) = self.inbox.pop(POLL) else {
            return Ok(());
        };
        self.counters.received.increment();
        match deliver(self.ros_type, sample) {
            Ok(()) => {
                self.counters.published.increment();
                Ok(())
            }
            Err(refusal) => {
                self.counters.refuse(&refusal);
                match refusal {
                    Refusal::Publish(e) => Err(e),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Leaves the graph and closes the session.
    pub fn finish(self) {
        drop(self.subscribers);
        drop(self.tokens);
        if let Err(e) = self.session.close().wait() {
            tracing::warn!(error = %e, "the ROS 2 zenoh session did not close cleanly");
        }
    }
}

/// The session, whose zenoh limit on a reassembled message is `max_bytes` and a slack.
fn open(settings: &InSettings) -> Result<zenoh::Session, Ros2OutError> {
    let mut config = session_config(&settings.connect)?;
    let limit = settings.max_bytes.saturating_add(ZENOH_SLACK);
    config
        .insert_json5("transport/link/rx/max_message_size", &limit.to_string())
        .map_err(|e| Ros2OutError::Zenoh(format!("max_message_size = {limit}: {e}")))?;
    zenoh::open(config)
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("opening a session to {}: {e}", settings.connect)))
}

/// The node: the `node` setting, else the instance's name with what a ROS 2 name cannot
/// hold as `_`.
fn node_info(
    cx: &Context<'_>,
    settings: &InSettings,
    domain: u32,
    session: &zenoh::Session,
) -> NodeInfo {
    let name = if settings.node.is_empty() {
        cx.instance_name()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    } else {
        settings.node.clone()
    };
    NodeInfo {
        domain,
        zid: session.zid().to_string(),
        node_id: 0,
        enclave: "/".to_owned(),
        namespace: if settings.namespace.is_empty() {
            "/".to_owned()
        } else {
            settings.namespace.clone()
        },
        name,
    }
}

fn subscribe_data(
    session: &zenoh::Session,
    key: &str,
    max_bytes: u64,
    gaps: Gaps,
    inbox: &Arc<Inbox<Bytes>>,
    counters: &InCounters,
) -> Result<zenoh::pubsub::Subscriber<()>, Ros2OutError> {
    let inbox = inbox.clone();
    let counters = counters.clone();
    session
        .declare_subscriber(key.to_owned())
        .callback(move |sample| match admit(&sample, max_bytes, &gaps) {
            Ok(bytes) => inbox.push(bytes),
            Err(refusal) => counters.refuse(&refusal),
        })
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("subscriber on {key}: {e}")))
}

/// Watches the publisher tokens of the topic (those present and those to come), counting
/// and logging each that does not match ([`publisher_mismatch`]).
fn watch_publishers(
    session: &zenoh::Session,
    domain: u32,
    ours: TopicInfo,
    counters: &InCounters,
) -> Result<zenoh::pubsub::Subscriber<()>, Ros2OutError> {
    let key = format!("@ros2_lv/{domain}/*/*/*/MP/*/*/*/{}/**", mangle(&ours.name));
    let counters = counters.clone();
    session
        .liveliness()
        .declare_subscriber(key.clone())
        .history(true)
        .callback(move |sample| {
            if sample.kind() != SampleKind::Put {
                return;
            }
            let Ok(entity) = Entity::parse(sample.key_expr().as_str()) else {
                return;
            };
            let Some(theirs) = entity.topic else { return };
            if let Some(why) = publisher_mismatch(&ours, &theirs) {
                counters.incompatible.increment();
                tracing::warn!(
                    topic = %ours.name,
                    node = %entity.node.name,
                    "a ROS 2 publisher of the topic does not match (counted in incompatible_publishers): {why}"
                );
            }
        })
        .wait()
        .map_err(|e| Ros2OutError::Zenoh(format!("liveliness subscriber on {key}: {e}")))
}

/// A CompressedImage sample as the run's encoded image: JPEG only, the format any
/// `Compressed<Image>` consumer's decode node reads.
pub(crate) fn compressed_jpeg(sample: Bytes) -> Result<streamwire_msgs::CompressedImage, Refusal> {
    use streamwire_ros2::RosMessage as _;
    let image = streamwire_msgs::CompressedImage::from_cdr(sample)?;
    match image.format_info() {
        Ok(format) if format.compression == ImageCompression::Jpeg => Ok(image),
        Ok(_) | Err(_) => Err(Refusal::Content(format!(
            "format {:?} is not JPEG",
            image.format()
        ))),
    }
}
