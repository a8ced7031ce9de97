//! The relay's server: the HTTP routes, one websocket per client, one feed per tapped
//! stream.
//!
//! Threads and queues, and why: a *feed* (a plain thread per stream that some client
//! wants) reads the stream's tap, writes each message once per encoding asked for, and
//! puts the frame into each subscriber's *slot* (a bounded keep-last queue per client and
//! topic) without ever waiting: a full slot drops its oldest frame and counts it for that
//! client. Each client's *writer* task takes one frame from each of its slots in turn, so
//! a big image stream cannot starve a small one, and gives a send at most
//! `stall_timeout` before disconnecting the client. Nothing a client does reaches the
//! run's threads but its commands (`cmd_vel`), through a bounded counted channel.

use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use streamwire_core::{Context, Counter, Envelope, StreamTap, TapService, Timestamp};
use streamwire_msgs::Twist;

use crate::access::{Access, BurstLog, Denied, more_since, random_token};
use crate::foxglove;
use crate::listener::{Connection, accept_loop, connection_cap};
use crate::protocol::{self, Op, Refused, StatusLevel};
use crate::rosbridge::outgoing::{self, Compression};
use crate::rosbridge::rosapi;
use crate::rosbridge::subscription::{Effective, Removed, Subscription, Subscriptions};
use crate::rosbridge::topics::{Topic, short_type, topics_of};
use crate::rosbridge::{self, topics::Source};
use crate::wire;
use crate::{RelayConfig, RelayToken};

/// The viewer page: one file, no external downloads.
const VIEWER: &str = include_str!("viewer.html");

/// How long a feed waits for a message before re-checking that someone still listens.
const FEED_POLL: Duration = Duration::from_millis(100);
/// How long a feed outlives its last subscriber: a client toggling subscriptions reuses
/// it rather than making a tap (and the run's record of it) per toggle.
const FEED_LINGER: Duration = Duration::from_secs(2);
/// Queued control replies (statuses, service responses) per client.
const CONTROL_QUEUE: usize = 64;
/// Browser commands waiting for the relay's next step.
const COMMAND_QUEUE: usize = 64;
/// Clients whose drops the run's report names one by one (see `Running::report_drops`).
const REPORTED_CLIENTS: usize = 32;
/// How long a client turned away (too many) gets to take its status and close.
const TURN_AWAY_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest text of a status reply, and of an id echoed back.
const MAX_REPLY_TEXT: usize = 512;
const MAX_ID: usize = 128;

/// `text`, cut to at most `max` bytes on a character boundary, with an ellipsis if cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The listen address is taken or not allowed.
    #[error(
        "the web relay cannot listen on {address}: {source}; choose another port with the relay's `listen` setting (`-o web.port=N` for `streamwire run demo`; port 0 picks a free one)"
    )]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The relay runs in a runtime without taps (the `Harness` runs one module alone).
    #[error("the web relay needs a run's taps: run it in a blueprint, not alone in the Harness")]
    NoTaps,
    /// The relay's own threads could not start.
    #[error("the web relay cannot start its threads: {0}")]
    Threads(#[source] std::io::Error),
    /// The operating system gave no random bytes for the run's token.
    #[error(
        "the web relay cannot make its token: {0}; set one with the relay's `token` setting (`-o web.token=...`)"
    )]
    Token(#[source] getrandom::Error),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not take the relay down with it: the data is counters and
    // queues, valid at every point.
    m.lock()
}

/// The relay's counters, in the run's report.
pub(crate) struct Counters {
    clients: Counter,
    refused: Counter,
    /// Requests without the run's token (401).
    refused_token: Counter,
    /// Websockets from a page of a foreign origin (403).
    refused_origin: Counter,
    /// Connections beyond the cap (503).
    pub(crate) refused_connections: Counter,
    /// Failed accepts (the process out of files).
    pub(crate) accept_errors: Counter,
    /// Connections closed for sending no request headers in time.
    pub(crate) header_timeouts: Counter,
    /// Websocket upgrades not completed in time.
    pub(crate) handshake_timeouts: Counter,
    /// Websockets closed for silence (1001).
    idle: Counter,
    /// Control replies (statuses, service responses) dropped from a full queue.
    replies_dropped: Counter,
    stalled: Counter,
    dropped: Counter,
    pub(crate) bad_input: Counter,
    frames_sent: Counter,
    bytes_sent: Counter,
    pub(crate) commands: Counter,
    pub(crate) commands_dropped: Counter,
    unwritable: Counter,
    /// Images and depth frames decoded for the topics that carry pixels.
    images_decoded: Counter,
}

impl Counters {
    fn of(cx: &Context<'_>) -> Counters {
        Counters {
            clients: cx.counter("clients"),
            refused: cx.counter("refused_clients"),
            refused_token: cx.counter("refused_token"),
            refused_origin: cx.counter("refused_origin"),
            refused_connections: cx.counter("refused_connections"),
            accept_errors: cx.counter("accept_errors"),
            header_timeouts: cx.counter("header_timeouts"),
            handshake_timeouts: cx.counter("handshake_timeouts"),
            idle: cx.counter("idle_disconnects"),
            replies_dropped: cx.counter("replies_dropped"),
            stalled: cx.counter("stalled_disconnects"),
            dropped: cx.counter("dropped"),
            bad_input: cx.counter("bad_input"),
            frames_sent: cx.counter("frames_sent"),
            bytes_sent: cx.counter("bytes_sent"),
            commands: cx.counter("commands"),
            commands_dropped: cx.counter("commands_dropped"),
            unwritable: cx.counter("unwritable_messages"),
            images_decoded: cx.counter("images_decoded"),
        }
    }
}

/// What the logs say once per burst.
#[derive(Default)]
pub(crate) struct Logs {
    refused_token: BurstLog,
    refused_origin: BurstLog,
    pub(crate) refused_connections: BurstLog,
    pub(crate) accept_errors: BurstLog,
}

pub(crate) struct Shared {
    pub(crate) config: RelayConfig,
    /// The token asked and the origins allowed.
    pub(crate) access: Access,
    /// The most connections kept open at once (see `listener::connection_cap`).
    pub(crate) connection_cap: usize,
    /// Connections open now (a `ConnectionPlace` each).
    pub(crate) connections_open: AtomicUsize,
    pub(crate) logs: Logs,
    taps: Arc<dyn TapService>,
    pub(crate) topics: Vec<Arc<Topic>>,
    /// The run's instances with their streams and settings, for rosapi (read once: a
    /// plan does not change while it runs).
    graph: Vec<streamwire_core::RunNode>,
    feeds: Mutex<HashMap<String, Arc<Feed>>>,
    clients: Mutex<Vec<Arc<Client>>>,
    /// Clients served now, counted from the upgrade (a [`Seat`] each).
    seats_taken: AtomicUsize,
    /// Drops of clients that left before the relay's step reported them, by report name.
    departed_drops: Mutex<HashMap<String, u64>>,
    next_client: AtomicU64,
    /// Numbers the feeds' threads.
    next_feed: AtomicU64,
    /// Numbers fragmented messages (their fragments' `id`).
    next_fragmented: AtomicU64,
    stopping: AtomicBool,
    pub(crate) counters: Counters,
    pub(crate) commands: SyncSender<Twist>,
    /// The Foxglove protocol's channels, parameters and counters, when it is served.
    pub(crate) foxglove: Option<foxglove::Served>,
    /// The relay's node name for rosapi (its instance, `/web`).
    node: String,
    /// The run clock when the relay started, and the instant it was read: rosapi's
    /// `get_time` is the run clock now.
    started: (Timestamp, Instant),
}

impl Shared {
    fn topic(&self, name: &str) -> Option<&Arc<Topic>> {
        let stream = name.strip_prefix('/').unwrap_or(name);
        self.topics.iter().find(|t| t.name == stream)
    }

    pub(crate) fn is_cmd_vel(&self, name: &str) -> bool {
        let want = self.config.cmd_vel_topic.trim_start_matches('/');
        name.strip_prefix('/').unwrap_or(name) == want
    }

    /// The answer to a refused request (401 or 403, saying why), counted and logged once
    /// per burst.
    pub(crate) fn refuse(&self, denied: Denied) -> Response {
        match denied {
            Denied::MissingToken | Denied::WrongToken => {
                self.counters.refused_token.increment();
                let why = if denied == Denied::MissingToken {
                    "this relay asks for its token: open the URL the run printed \
                     (http://HOST:PORT/?token=...), or give it as `?token=` or \
                     `Authorization: Bearer`"
                } else {
                    "wrong token: open the URL the run printed (http://HOST:PORT/?token=...)"
                };
                if let Some(unsaid) = self.logs.refused_token.note() {
                    tracing::warn!(
                        "web relay: refused a request: {}{}",
                        if denied == Denied::MissingToken {
                            "no token"
                        } else {
                            "wrong token"
                        },
                        more_since(unsaid)
                    );
                }
                let mut response = (StatusCode::UNAUTHORIZED, format!("{why}\n")).into_response();
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"streamwire\""),
                );
                response
            }
            Denied::ForeignOrigin(origin) => {
                self.counters.refused_origin.increment();
                if let Some(unsaid) = self.logs.refused_origin.note() {
                    tracing::warn!(
                        "web relay: refused a websocket from a page of `{origin}` (allowed: {}; \
                         add it with the relay's `allowed_origins`, `-o web.allowed_origins=...`){}",
                        self.access.origins().join(", "),
                        more_since(unsaid)
                    );
                }
                let why = format!(
                    "pages of `{origin}` may not connect: allow the origin with the relay's \
                     `allowed_origins` setting\n"
                );
                (StatusCode::FORBIDDEN, why).into_response()
            }
        }
    }
}

/// One message for a client: one websocket frame, or its `fragment`s, sent together.
type Outgoing = Arc<[Message]>;

/// A bounded keep-last queue for one client.
struct Slot<T> {
    frames: Mutex<VecDeque<T>>,
    capacity: AtomicUsize,
    dropped: AtomicU64,
}

impl<T> Slot<T> {
    fn new(capacity: usize) -> Slot<T> {
        Slot {
            frames: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity: AtomicUsize::new(capacity.max(1)),
            dropped: AtomicU64::new(0),
        }
    }

    /// Keeps at most `capacity` from the next push on.
    fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity.max(1), Ordering::Relaxed);
    }

    /// Queues `frame`; true when the oldest was dropped for it.
    fn push(&self, frame: T) -> bool {
        let mut frames = lock(&self.frames);
        let capacity = self.capacity.load(Ordering::Relaxed);
        let mut dropped = false;
        while frames.len() >= capacity {
            frames.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
            dropped = true;
        }
        frames.push_back(frame);
        dropped
    }

    fn pop(&self) -> Option<T> {
        lock(&self.frames).pop_front()
    }
}

/// The form a subscription's frames are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Encoding {
    /// rosbridge `publish` messages in this compression.
    Rosbridge(Compression),
    /// Foxglove `messageData` binary frames of this subscription id (`crate::foxglove`).
    Foxglove(u32),
}

/// A client's subscriptions to one topic, as its topic's feed sees them: a rosbridge
/// client's by `id`, or one Foxglove subscription.
pub(crate) struct ClientTopic {
    /// The topic as the client spelled it (`/odom` or `odom`): replies echo it.
    spelling: String,
    /// The topic's name (`odom`): its feed's key.
    topic: String,
    slot: Arc<Slot<Outgoing>>,
    /// The subscriptions by id, and what they combine into.
    subscriptions: Mutex<(Subscriptions, Effective)>,
    last_sent: Mutex<Option<Instant>>,
    /// A Foxglove client's subscription id (its `subscriptions` then empty, its
    /// `Effective` fixed: no throttle, its own queue length).
    foxglove: Option<u32>,
}

impl ClientTopic {
    fn effective(&self) -> Effective {
        self.subscriptions.lock().1
    }

    fn encoding(&self) -> Encoding {
        match self.foxglove {
            Some(subscription) => Encoding::Foxglove(subscription),
            None => Encoding::Rosbridge(self.effective().compression),
        }
    }

    /// A Foxglove client's subscription `subscription` to `topic`, with a keep-last queue
    /// of `capacity` frames.
    pub(crate) fn foxglove(topic: &Topic, subscription: u32, capacity: usize) -> ClientTopic {
        let effective = Effective {
            throttle: Duration::ZERO,
            queue_length: capacity.max(1),
            // Not read: a Foxglove subscription's frames are `messageData` (`encoding`).
            compression: Compression::CborRaw,
            fragment_size: None,
        };
        ClientTopic {
            spelling: format!("/{}", topic.name),
            topic: topic.name.clone(),
            slot: Arc::new(Slot::new(effective.queue_length)),
            subscriptions: Mutex::new((Subscriptions::default(), effective)),
            last_sent: Mutex::new(None),
            foxglove: Some(subscription),
        }
    }

    /// The topic's name (`odom`).
    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }
}

pub(crate) struct Client {
    id: u64,
    name: String,
    /// The name in the run's report (`dropped:<report_as>`): the name, in characters a
    /// report line keeps together.
    report_as: String,
    /// Of `dropped`, what the run's report already has.
    reported_drops: AtomicU64,
    wake: tokio::sync::Notify,
    /// Told when the writer ended (the client stalled or left), to end the reader too.
    gone: tokio::sync::Notify,
    control: Slot<Message>,
    topics: Mutex<Vec<Arc<ClientTopic>>>,
    dropped: AtomicU64,
    sent: AtomicU64,
    pub(crate) bad_input: AtomicU64,
    /// Control replies dropped from its full queue.
    replies_dropped: AtomicU64,
    closed: AtomicBool,
    /// The least severe `status` sent to it (a [`StatusLevel`] as a number; `set_level`).
    status_level: AtomicU8,
}

impl Client {
    /// Drops not yet in the run's report, now counted as reported.
    fn unreported_drops(&self) -> u64 {
        let dropped = self.dropped.load(Ordering::Relaxed);
        dropped.saturating_sub(self.reported_drops.swap(dropped, Ordering::Relaxed))
    }

    fn reply(&self, shared: &Shared, value: serde_json::Value) {
        self.queue_control(shared, Message::Text(value.to_string().into()));
    }

    /// Queues a control frame (a reply, a ping, a close); the oldest queued one makes way
    /// when the queue is full, counted.
    pub(crate) fn queue_control(&self, shared: &Shared, frame: Message) {
        if self.control.push(frame) {
            self.replies_dropped.fetch_add(1, Ordering::Relaxed);
            shared.counters.replies_dropped.increment();
        }
        self.wake.notify_one();
    }

    /// Sends `status` unless the client asked for less (`set_level`).
    fn status(&self, shared: &Shared, level: StatusLevel, status: serde_json::Value) {
        if (level as u8) >= self.status_level.load(Ordering::Relaxed) {
            self.reply(shared, status);
        }
    }

    fn status_error(&self, shared: &Shared, refused: Refused) {
        self.bad_input.fetch_add(1, Ordering::Relaxed);
        shared.counters.bad_input.increment();
        // Replies echo what the client sent: clipped, so that queued replies stay small.
        let mut status =
            json!({"op": "status", "level": "error", "msg": clip(&refused.msg, MAX_REPLY_TEXT)});
        if let Some(id) = refused.id {
            status["id"] = json!(clip(&id, MAX_ID));
        }
        self.status(shared, StatusLevel::Error, status);
    }
}

/// One tapped stream and its subscribers.
struct Feed {
    topic: Arc<Topic>,
    subscribers: Mutex<Vec<(Arc<Client>, Arc<ClientTopic>)>>,
    messages: AtomicU64,
    bytes: AtomicU64,
}

/// The relay while it runs.
pub(crate) struct Running {
    address: SocketAddr,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    commands: Receiver<Twist>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    /// Each client's drops in the run's report, by the client's name.
    client_counters: HashMap<String, Counter>,
}

impl Running {
    pub(crate) fn start(config: &RelayConfig, cx: &Context<'_>) -> Result<Running, RelayError> {
        let taps = cx.taps().ok_or(RelayError::NoTaps)?;
        let topics = topics_of(
            &taps.streams(),
            config.streams.as_deref(),
            config.rosout_level,
        );
        let listener =
            std::net::TcpListener::bind(config.listen).map_err(|source| RelayError::Bind {
                address: config.listen,
                source,
            })?;
        let address = listener.local_addr().map_err(RelayError::Threads)?;
        listener
            .set_nonblocking(true)
            .map_err(RelayError::Threads)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sw web")
            .enable_all()
            .build()
            .map_err(RelayError::Threads)?;
        let (commands_tx, commands) = std::sync::mpsc::sync_channel(COMMAND_QUEUE);
        let token = match &config.token {
            RelayToken::Random => Some(random_token().map_err(RelayError::Token)?),
            RelayToken::Open => None,
            RelayToken::Fixed(token) => Some(token.clone()),
        };
        let (cap, files_limit) = connection_cap(config.max_connections);
        let foxglove = config
            .foxglove
            .then(|| foxglove::Served::new(&topics, config, cx));
        let shared = Arc::new(Shared {
            config: config.clone(),
            access: Access::new(token, address, &config.allowed_origins),
            connection_cap: cap,
            connections_open: AtomicUsize::new(0),
            logs: Logs::default(),
            graph: taps.run_graph(),
            taps,
            topics,
            feeds: Mutex::new(HashMap::new()),
            clients: Mutex::new(Vec::new()),
            seats_taken: AtomicUsize::new(0),
            departed_drops: Mutex::new(HashMap::new()),
            next_client: AtomicU64::new(1),
            next_feed: AtomicU64::new(1),
            next_fragmented: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            counters: Counters::of(cx),
            commands: commands_tx,
            foxglove,
            node: format!("/{}", cx.instance_name().trim_start_matches('/')),
            started: (cx.now(), Instant::now()),
        });
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(RelayError::Threads)?
        };
        let mut router = Router::new()
            .route("/", get(root))
            .route("/stats", get(stats));
        if shared.foxglove.is_some() {
            router = router.route(foxglove::PATH, get(foxglove::connect));
        }
        let router = router.with_state(shared.clone());
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        runtime.spawn(accept_loop(listener, router, shared.clone(), stop));
        let limit = files_limit.map_or_else(|| "no".to_owned(), |l| l.to_string());
        match shared.access.token() {
            Some(token) => tracing::info!(
                "web relay: open http://{address}/?token={token} (at most {cap} connections; open-files limit {limit})"
            ),
            None => tracing::warn!(
                "web relay: open http://{address}/ - no token (token = none): any program on this machine may connect (at most {cap} connections; open-files limit {limit})"
            ),
        }
        Ok(Running {
            address,
            shared,
            runtime: Some(runtime),
            commands,
            shutdown: Some(shutdown),
            client_counters: HashMap::new(),
        })
    }

    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// The token clients must give (`None`: the relay is open).
    pub(crate) fn token(&self) -> Option<&str> {
        self.shared.access.token()
    }

    /// Commands browsers published since the last call.
    pub(crate) fn commands(&self) -> impl Iterator<Item = Twist> + '_ {
        self.commands.try_iter()
    }

    /// Stops serving: clients are closed, feeds end within their poll.
    pub(crate) fn shutdown(&mut self) {
        self.stop();
    }

    /// Adds each client's drops since the last call to its counter `dropped:<client>`
    /// in the run's report (clients that left since included). Counters are made for
    /// the first [`REPORTED_CLIENTS`] names that drop anything; later names share
    /// `dropped:other_clients`, so the report stays bounded however many come and go.
    pub(crate) fn report_drops(&mut self, cx: &Context<'_>) {
        let mut drops: Vec<(String, u64)> = lock(&self.shared.clients)
            .iter()
            .map(|c| (c.report_as.clone(), c.unreported_drops()))
            .collect();
        drops.extend(lock(&self.shared.departed_drops).drain());
        for (name, n) in drops {
            if n == 0 {
                continue;
            }
            let counter = match self.client_counters.get(&name) {
                Some(counter) => counter,
                None => {
                    let key = if self.client_counters.len() < REPORTED_CLIENTS {
                        name
                    } else {
                        "other_clients".to_owned()
                    };
                    self.client_counters
                        .entry(key)
                        .or_insert_with_key(|key| cx.counter(&format!("dropped:{key}")))
                }
            };
            counter.add(n);
        }
    }

    fn stop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for client in lock(&self.shared.clients).iter() {
            client.wake.notify_one();
        }
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

#[derive(serde::Deserialize)]
struct ConnectQuery {
    token: Option<String>,
    client: Option<String>,
}

/// `/`: the viewer page, or (with an upgrade) a rosbridge websocket. Both need the token;
/// the websocket also an allowed origin (or none: not a browser).
async fn root(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<ConnectQuery>,
    headers: HeaderMap,
    connection: Option<Extension<Arc<Connection>>>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    if let Err(denied) = shared.access.check_token(query.token.as_deref(), &headers) {
        return shared.refuse(denied);
    }
    let Ok(upgrade) = upgrade else {
        return Html(VIEWER).into_response();
    };
    if let Err(denied) = shared.access.check_origin(&headers) {
        return shared.refuse(denied);
    }
    accept_client(
        shared,
        connection,
        upgrade,
        query.client,
        Dialect::Rosbridge,
    )
}

/// The protocol a websocket client speaks.
pub(crate) enum Dialect {
    /// rosbridge v2 (`/`).
    Rosbridge,
    /// The Foxglove WebSocket protocol (`/foxglove`), with the client's state.
    Foxglove(foxglove::Session),
}

/// Serves an upgrade whose token and origin passed: a seat of `max_clients`, or a client
/// turned away (told so in its protocol's status, closed with 1013).
pub(crate) fn accept_client(
    shared: Arc<Shared>,
    connection: Option<Extension<Arc<Connection>>>,
    upgrade: WebSocketUpgrade,
    name: Option<String>,
    dialect: Dialect,
) -> Response {
    // The websocket keeps its connection's place until it ends.
    let connection = connection.map(|Extension(c)| c);
    if let Some(connection) = &connection {
        connection.upgrading.notify_one();
    }
    let Some(seat) = Seat::claim(&shared) else {
        shared.counters.refused.increment();
        let max_clients = shared.config.max_clients;
        return upgrade
            .max_message_size(1024)
            .on_upgrade(move |socket| async move {
                turn_away(socket, max_clients, &dialect).await;
                drop(connection);
            });
    };
    let limit = shared.config.max_message_bytes;
    let id = shared.next_client.fetch_add(1, Ordering::Relaxed);
    let name: String = name
        .unwrap_or_else(|| format!("client {id}"))
        .chars()
        .take(64)
        .collect();
    upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move {
            serve_client(shared, socket, id, name, seat, dialect).await;
            drop(connection);
        })
}

#[derive(serde::Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// `/stats`: per topic and per client counts (with the token).
async fn stats(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    if let Err(denied) = shared.access.check_token(query.token.as_deref(), &headers) {
        return shared.refuse(denied);
    }
    let feeds = lock(&shared.feeds).clone();
    let topics: Vec<_> = shared
        .topics
        .iter()
        .map(|t| {
            let feed = feeds.get(&t.name);
            json!({
                "topic": format!("/{}", t.name),
                "type": t.ros_type,
                "messages": feed.map_or(0, |f| f.messages.load(Ordering::Relaxed)),
                "bytes": feed.map_or(0, |f| f.bytes.load(Ordering::Relaxed)),
                "subscribers": feed.map_or(0, |f| lock(&f.subscribers).len()),
            })
        })
        .collect();
    let clients: Vec<_> = lock(&shared.clients)
        .iter()
        .map(|c| {
            let topics: Vec<_> = lock(&c.topics)
                .iter()
                .map(|t| json!({"topic": t.spelling, "dropped": t.slot.dropped.load(Ordering::Relaxed)}))
                .collect();
            json!({
                "id": c.id,
                "name": c.name,
                "dropped": c.dropped.load(Ordering::Relaxed),
                "sent": c.sent.load(Ordering::Relaxed),
                "bad_input": c.bad_input.load(Ordering::Relaxed),
                "replies_dropped": c.replies_dropped.load(Ordering::Relaxed),
                "topics": topics,
            })
        })
        .collect();
    let c = &shared.counters;
    let body = json!({
        "topics": topics,
        "clients": clients,
        "totals": {
            "clients": c.clients.get(),
            "refused_clients": c.refused.get(),
            "refused_token": c.refused_token.get(),
            "refused_origin": c.refused_origin.get(),
            "refused_connections": c.refused_connections.get(),
            "accept_errors": c.accept_errors.get(),
            "header_timeouts": c.header_timeouts.get(),
            "handshake_timeouts": c.handshake_timeouts.get(),
            "idle_disconnects": c.idle.get(),
            "replies_dropped": c.replies_dropped.get(),
            "dropped": c.dropped.get(),
            "stalled_disconnects": c.stalled.get(),
            "bad_input": c.bad_input.get(),
            "frames_sent": c.frames_sent.get(),
            "bytes_sent": c.bytes_sent.get(),
            "commands": c.commands.get(),
        },
        "connections": {
            "open": shared.connections_open.load(Ordering::Relaxed),
            "max": shared.connection_cap,
        },
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn serve_client(
    shared: Arc<Shared>,
    socket: WebSocket,
    id: u64,
    name: String,
    seat: Seat,
    mut dialect: Dialect,
) {
    let report_as = report_name(&name);
    let client = Arc::new(Client {
        id,
        name,
        report_as,
        reported_drops: AtomicU64::new(0),
        wake: tokio::sync::Notify::new(),
        gone: tokio::sync::Notify::new(),
        control: Slot::new(CONTROL_QUEUE),
        topics: Mutex::new(Vec::new()),
        dropped: AtomicU64::new(0),
        sent: AtomicU64::new(0),
        bad_input: AtomicU64::new(0),
        replies_dropped: AtomicU64::new(0),
        closed: AtomicBool::new(false),
        status_level: AtomicU8::new(StatusLevel::Info as u8),
    });
    shared.counters.clients.increment();
    lock(&shared.clients).push(client.clone());
    if let Dialect::Foxglove(session) = &dialect {
        session.greet(&shared, &client);
    }
    let (sink, mut stream) = socket.split();
    let writer = {
        let (shared, client) = (shared.clone(), client.clone());
        tokio::spawn(async move {
            write_client(shared, client.clone(), sink).await;
            client.closed.store(true, Ordering::SeqCst);
            client.gone.notify_one();
        })
    };
    // A silent client is pinged every third of the idle timeout (browsers, roslib and
    // roslibpy answer by themselves), and closed when nothing came for all of it.
    let idle_timeout = shared.config.idle_timeout;
    let ping_every = (idle_timeout / 3).max(Duration::from_millis(10));
    let mut heard = Instant::now();
    loop {
        let frame = tokio::select! {
            frame = stream.next() => frame,
            () = client.gone.notified() => None,
            () = tokio::time::sleep(ping_every) => {
                if heard.elapsed() < idle_timeout {
                    client.queue_control(&shared, Message::Ping(bytes::Bytes::new()));
                    continue;
                }
                shared.counters.idle.increment();
                let reason = format!("silent for {} ms: no frame, no pong", idle_timeout.as_millis());
                client.queue_control(&shared, close_frame(1001, reason));
                break;
            }
        };
        heard = Instant::now();
        let Some(frame) = frame else {
            break;
        };
        if shared.stopping.load(Ordering::SeqCst) || client.closed.load(Ordering::SeqCst) {
            break;
        }
        let op = match (frame, &mut dialect) {
            (Ok(Message::Close(_)), _) => break,
            (Ok(frame @ (Message::Text(_) | Message::Binary(_))), Dialect::Foxglove(session)) => {
                session.handle(&shared, &client, frame);
                continue;
            }
            (Ok(Message::Text(text)), Dialect::Rosbridge) => protocol::parse_text(&text),
            (Ok(Message::Binary(bytes)), Dialect::Rosbridge) => protocol::parse_cbor(&bytes),
            (Ok(_), _) => continue,
            (Err(error), _) => {
                // A broken frame or an oversized message: said in the close, then closed.
                // A connection that just ended gets nothing.
                if let Some((code, reason)) = close_for(error, shared.config.max_message_bytes) {
                    client.bad_input.fetch_add(1, Ordering::Relaxed);
                    shared.counters.bad_input.increment();
                    client.queue_control(&shared, close_frame(code, reason));
                }
                break;
            }
        };
        match op {
            Ok(op) => handle(&shared, &client, op),
            Err(refused) => client.status_error(&shared, refused),
        }
    }
    // Let the writer send what is queued (a close reason), then end it.
    client.closed.store(true, Ordering::SeqCst);
    client.wake.notify_one();
    let _ = tokio::time::timeout(shared.config.stall_timeout, writer).await;
    // The place is free once the client is gone from the list (as /stats shows it).
    drop(seat);
    forget_client(&shared, &client);
}

/// The close code and reason for a websocket error (RFC 6455 section 7.4.1), or `None`
/// when the connection just ended.
fn close_for(error: axum::Error, limit: usize) -> Option<(u16, String)> {
    use tungstenite::error::ProtocolError;
    let error = error.into_inner();
    match error.downcast_ref::<tungstenite::Error>()? {
        // 1009: a message too big to process.
        tungstenite::Error::Capacity(e) => {
            Some((1009, format!("{e} (the limit is {limit} bytes)")))
        }
        // 1007: data inconsistent with the message's type.
        tungstenite::Error::Utf8(_) => Some((1007, "a text message that is not UTF-8".to_owned())),
        tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => None,
        // 1002: a protocol error (an unmasked frame, a reserved opcode or bit, ...).
        tungstenite::Error::Protocol(e) => Some((1002, e.to_string())),
        _ => None,
    }
}

/// A close frame; the reason cut to the 123 bytes a close frame holds.
fn close_frame(code: u16, reason: String) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: clip(&reason, 120).into(),
    }))
}

fn forget_client(shared: &Shared, client: &Arc<Client>) {
    for topic in lock(&client.topics).drain(..) {
        if let Some(feed) = lock(&shared.feeds).get(&topic.topic) {
            lock(&feed.subscribers).retain(|(_, t)| !Arc::ptr_eq(t, &topic));
        }
    }
    lock(&shared.clients).retain(|c| !Arc::ptr_eq(c, client));
    let unreported = client.unreported_drops();
    if unreported > 0 {
        *lock(&shared.departed_drops)
            .entry(client.report_as.clone())
            .or_default() += unreported;
    }
}

/// A client's name as one word of the run's report: letters, digits, `-`, `_` and `.`
/// kept, anything else `_`, at most 32 characters.
fn report_name(name: &str) -> String {
    name.chars()
        .take(32)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One of the relay's `max_clients` places, held by a client from its upgrade until it
/// is gone (dropped with the upgrade's callback if the upgrade fails).
struct Seat(Arc<Shared>);

impl Seat {
    fn claim(shared: &Arc<Shared>) -> Option<Seat> {
        let max = shared.config.max_clients;
        shared
            .seats_taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
                (taken < max).then_some(taken + 1)
            })
            .ok()
            .map(|_| Seat(shared.clone()))
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.seats_taken.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tells a client that the relay is full (a `status` error, then a close with code
/// 1013, try again later) and ends its connection.
async fn turn_away(mut socket: WebSocket, max_clients: usize, dialect: &Dialect) {
    let why = format!("the relay serves at most {max_clients} clients at once; try again later");
    let status = match dialect {
        Dialect::Rosbridge => json!({"op": "status", "level": "error", "msg": why}),
        Dialect::Foxglove(_) => foxglove::status_error(&why, None),
    };
    let _ = tokio::time::timeout(TURN_AWAY_TIMEOUT, async {
        socket
            .send(Message::Text(status.to_string().into()))
            .await?;
        socket
            .send(Message::Close(Some(CloseFrame {
                code: 1013,
                reason: clip(&why, 120).into(),
            })))
            .await
    })
    .await;
}

async fn write_client(
    shared: Arc<Shared>,
    client: Arc<Client>,
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
) {
    let mut turn = 0usize;
    loop {
        let mut frames = Vec::new();
        while let Some(frame) = client.control.pop() {
            frames.push(frame);
        }
        {
            // One frame per topic in turn: a big stream cannot starve a small one.
            let topics = lock(&client.topics);
            let n = topics.len();
            for k in 0..n {
                if let Some(outgoing) = topics[(turn + k) % n].slot.pop() {
                    frames.extend(outgoing.iter().cloned());
                }
            }
            turn = turn.wrapping_add(1);
        }
        if frames.is_empty() {
            if client.closed.load(Ordering::SeqCst) || shared.stopping.load(Ordering::SeqCst) {
                break;
            }
            tokio::select! {
                () = client.wake.notified() => {}
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            continue;
        }
        for frame in frames {
            let closing = matches!(frame, Message::Close(_));
            let counted = matches!(frame, Message::Text(_) | Message::Binary(_));
            let len = match &frame {
                Message::Text(t) => t.len(),
                Message::Binary(b) => b.len(),
                _ => 0,
            } as u64;
            match tokio::time::timeout(shared.config.stall_timeout, sink.send(frame)).await {
                Ok(Ok(())) if counted => {
                    client.sent.fetch_add(1, Ordering::Relaxed);
                    shared.counters.frames_sent.increment();
                    shared.counters.bytes_sent.add(len);
                }
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    client.closed.store(true, Ordering::SeqCst);
                    return;
                }
                Err(_) => {
                    // The client stopped reading: disconnect it, counted.
                    shared.counters.stalled.increment();
                    client.closed.store(true, Ordering::SeqCst);
                    return;
                }
            }
            if closing {
                client.closed.store(true, Ordering::SeqCst);
                let _ = sink.close().await;
                return;
            }
        }
    }
    let _ = sink.close().await;
}

fn handle(shared: &Arc<Shared>, client: &Arc<Client>, op: Op) {
    match op {
        Op::Subscribe {
            id,
            topic,
            ros_type,
            throttle,
            queue_length,
            compression,
            fragment_size,
        } => {
            let Some(known) = shared.topic(&topic).cloned() else {
                let names: Vec<String> = shared
                    .topics
                    .iter()
                    .map(|t| format!("/{}", t.name))
                    .collect();
                return client.status_error(
                    shared,
                    Refused {
                        id,
                        msg: format!("unknown topic `{topic}` (topics: {})", names.join(", ")),
                    },
                );
            };
            if let Some(asked) = ros_type
                && !known.has_type(&asked)
            {
                let msg = format!("`{topic}` carries {}, not {asked}", known.ros_type);
                return client.status_error(shared, Refused { id, msg });
            }
            if compression == Compression::CborRaw && known.schema.is_none() {
                let msg = format!(
                    "compression `cbor-raw` needs a ROS 2 serialization; `{topic}` carries {}, which has none: use `cbor` or `none`",
                    known.ros_type
                );
                return client.status_error(shared, Refused { id, msg });
            }
            let subscription = Subscription {
                id: id.clone(),
                throttle,
                queue_length,
                compression,
                fragment_size,
            };
            subscribe(shared, client, &known, topic, subscription, id);
        }
        Op::Unsubscribe { id, topic } => {
            if unsubscribe(shared, client, &topic, id.as_deref()) == Removed::UnknownId {
                let mut status = json!({
                    "op": "status",
                    "level": "warning",
                    // infallible: without an id every subscription goes, so this is said only with one
                    "msg": clip(&format!("no subscription `{}` on `{topic}`: nothing unsubscribed", id.as_deref().unwrap_or_default()), MAX_REPLY_TEXT),
                });
                if let Some(id) = id {
                    status["id"] = json!(clip(&id, MAX_ID));
                }
                client.status(shared, StatusLevel::Warning, status);
            }
        }
        Op::Advertise {
            id,
            topic,
            ros_type,
        } => {
            let type_ok = ros_type
                .as_deref()
                .is_none_or(|t| short_type(t) == "geometry_msgs/Twist");
            if !shared.is_cmd_vel(&topic) || !type_ok {
                client.status_error(
                    shared,
                    Refused {
                        id,
                        msg: format!(
                            "cannot advertise `{topic}` ({}): browsers may publish only `/{}` (geometry_msgs/msg/Twist)",
                            ros_type.as_deref().unwrap_or("no type"),
                            shared.config.cmd_vel_topic.trim_start_matches('/')
                        ),
                    },
                );
            }
        }
        Op::Unadvertise => {}
        Op::Publish { id, topic, msg } => {
            if !shared.is_cmd_vel(&topic) {
                return client.status_error(
                    shared,
                    Refused {
                        id,
                        msg: format!(
                            "cannot publish on `{topic}`: browsers may publish only `/{}`",
                            shared.config.cmd_vel_topic.trim_start_matches('/')
                        ),
                    },
                );
            }
            match protocol::twist(&msg) {
                Ok(twist) => match shared.commands.try_send(twist) {
                    Ok(()) => shared.counters.commands.increment(),
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        shared.counters.commands_dropped.increment();
                    }
                },
                Err(why) => client.status_error(
                    shared,
                    Refused {
                        id,
                        msg: format!("wrong message on `{topic}`: {why}"),
                    },
                ),
            }
        }
        Op::CallService { id, service, args } => {
            call_service(shared, client, id, &service, &args);
        }
        Op::SetLevel { level } => client.status_level.store(level as u8, Ordering::Relaxed),
    }
}

fn call_service(
    shared: &Shared,
    client: &Client,
    id: Option<String>,
    service: &str,
    args: &serde_json::Value,
) {
    let service = clip(service, MAX_ID);
    let answered = match rosapi::service_name(&service) {
        Some(name) => {
            let elapsed = u64::try_from(shared.started.1.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let view = rosapi::RunView {
                topics: &shared.topics,
                node: shared.node.clone(),
                cmd_vel: shared.config.cmd_vel_topic.clone(),
                now_nanos: shared.started.0.as_nanos().saturating_add(elapsed),
                params: relay_params(&shared.config),
                graph: &shared.graph,
            };
            rosapi::answer(&view, name, args)
                .map_err(|why| format!("service `{service}` refused: {why}"))
        }
        None => {
            let served: Vec<String> = rosapi::SERVICES
                .iter()
                .map(|(n, _)| format!("/rosapi/{n}"))
                .collect();
            Err(format!(
                "service `{service}` is not served (served: {})",
                served.join(", ")
            ))
        }
    };
    // rosbridge answers a failed call with `result: false` and the reason as `values`,
    // and says it in a `status` error too.
    let (values, result) = match &answered {
        Ok(values) => (values.clone(), true),
        Err(msg) => (json!(clip(msg, MAX_REPLY_TEXT)), false),
    };
    let mut response =
        json!({"op": "service_response", "service": service, "values": values, "result": result});
    if let Some(id) = &id {
        response["id"] = json!(clip(id, MAX_ID));
    }
    client.reply(shared, response);
    if let Err(msg) = answered {
        client.status_error(shared, Refused { id, msg });
    }
}

/// The relay's parameters for rosapi: its resolved settings, the token left out (only
/// whether one is asked).
fn relay_params(config: &RelayConfig) -> Vec<(String, serde_json::Value)> {
    vec![
        ("listen".into(), json!(config.listen.to_string())),
        (
            "streams".into(),
            json!(config.streams.clone().unwrap_or_default()), // infallible: no list is every stream, said as an empty one
        ),
        (
            "token_required".into(),
            json!(!matches!(config.token, RelayToken::Open)),
        ),
        ("allowed_origins".into(), json!(config.allowed_origins)),
        ("max_message_bytes".into(), json!(config.max_message_bytes)),
        (
            "stall_timeout_ms".into(),
            json!(config.stall_timeout.as_millis() as u64),
        ),
        ("max_clients".into(), json!(config.max_clients)),
        ("max_connections".into(), json!(config.max_connections)),
        (
            "idle_timeout_ms".into(),
            json!(config.idle_timeout.as_millis() as u64),
        ),
        ("cmd_vel_topic".into(), json!(config.cmd_vel_topic)),
        (
            "rosout_level".into(),
            json!(format!("{:?}", config.rosout_level).to_lowercase()),
        ),
    ]
}

/// Adds `subscription` to the client's subscriptions of `topic` (as it spelled it),
/// joining the topic's feed on the first.
fn subscribe(
    shared: &Arc<Shared>,
    client: &Arc<Client>,
    known: &Arc<Topic>,
    spelling: String,
    subscription: Subscription,
    id: Option<String>,
) {
    let existing = lock(&client.topics)
        .iter()
        .find(|t| t.spelling == spelling)
        .cloned();
    if let Some(entry) = existing {
        let mut subscriptions = entry.subscriptions.lock();
        subscriptions.0.add(subscription);
        if let Some(effective) = subscriptions.0.effective() {
            subscriptions.1 = effective;
            entry.slot.set_capacity(effective.queue_length);
        }
        return;
    }
    let mut subscriptions = Subscriptions::default();
    subscriptions.add(subscription);
    let Some(effective) = subscriptions.effective() else {
        return;
    };
    let entry = Arc::new(ClientTopic {
        spelling,
        topic: known.name.clone(),
        slot: Arc::new(Slot::new(effective.queue_length)),
        subscriptions: Mutex::new((subscriptions, effective)),
        last_sent: Mutex::new(None),
        foxglove: None,
    });
    if let Err(msg) = attach(shared, known, client, entry.clone()) {
        return client.status_error(shared, Refused { id, msg });
    }
    lock(&client.topics).push(entry);
}

/// Removes the client's subscription `id` of `topic`, or all of them without an id;
/// leaves the topic's feed when none is left.
fn unsubscribe(shared: &Shared, client: &Client, topic: &str, id: Option<&str>) -> Removed {
    let mut removed = Removed::Some(0);
    let emptied: Vec<Arc<ClientTopic>> = {
        let mut topics = lock(&client.topics);
        let mut emptied = Vec::new();
        topics.retain(|entry| {
            if entry.spelling != topic {
                return true;
            }
            let mut subscriptions = entry.subscriptions.lock();
            removed = subscriptions.0.remove(id);
            match subscriptions.0.effective() {
                Some(effective) => {
                    subscriptions.1 = effective;
                    entry.slot.set_capacity(effective.queue_length);
                    true
                }
                None => {
                    emptied.push(entry.clone());
                    false
                }
            }
        });
        emptied
    };
    for entry in emptied {
        if let Some(feed) = lock(&shared.feeds).get(&entry.topic) {
            lock(&feed.subscribers).retain(|(_, t)| !Arc::ptr_eq(t, &entry));
        }
    }
    removed
}

/// Subscribes `client` to `topic` with `entry` (a Foxglove subscription), starting the
/// topic's feed if none runs.
pub(crate) fn subscribe_entry(
    shared: &Arc<Shared>,
    client: &Arc<Client>,
    topic: &Arc<Topic>,
    entry: Arc<ClientTopic>,
) -> Result<(), String> {
    attach(shared, topic, client, entry.clone())?;
    lock(&client.topics).push(entry);
    Ok(())
}

/// Ends one subscription of `client`; what its queue still holds is not sent.
pub(crate) fn end_subscription(shared: &Shared, client: &Client, entry: &Arc<ClientTopic>) {
    lock(&client.topics).retain(|t| !Arc::ptr_eq(t, entry));
    if let Some(feed) = lock(&shared.feeds).get(&entry.topic) {
        lock(&feed.subscribers).retain(|(_, t)| !Arc::ptr_eq(t, entry));
    }
}

/// Adds a subscriber to its topic's feed, starting the feed (a tap and its thread) if
/// none runs.
fn attach(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    client: &Arc<Client>,
    entry: Arc<ClientTopic>,
) -> Result<(), String> {
    let mut feeds = lock(&shared.feeds);
    if let Some(feed) = feeds.get(&topic.name) {
        lock(&feed.subscribers).push((client.clone(), entry));
        return Ok(());
    }
    let feed = Arc::new(Feed {
        topic: topic.clone(),
        subscribers: Mutex::new(vec![(client.clone(), entry)]),
        messages: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    // A topic nothing in the run feeds (`/rosout` without log records) keeps its
    // subscribers, silent.
    if let Some(stream) = &topic.stream {
        let tap = shared.taps.tap(stream, Some(topic.tap_as)).map_err(|e| {
            format!(
                "cannot tap `/{}`: {}",
                topic.name,
                streamwire_core::log::chain(e.as_ref())
            )
        })?;
        // A number first: Linux keeps 15 bytes of a thread's name, and topics share prefixes.
        let number = shared.next_feed.fetch_add(1, Ordering::Relaxed);
        let thread = {
            let shared = shared.clone();
            let feed = feed.clone();
            std::thread::Builder::new()
                .name(format!("sw web{number} {}", topic.name))
                .spawn(move || {
                    let _span =
                        tracing::info_span!("web feed", stream = %stream_name(&feed), topic = %feed.topic.name)
                            .entered();
                    run_feed(&shared, &feed, tap);
                })
        };
        thread.map_err(|e| format!("cannot start the feed of `/{}`: {e}", topic.name))?;
    }
    feeds.insert(topic.name.clone(), feed);
    Ok(())
}

fn stream_name(feed: &Feed) -> &str {
    // infallible: a feed without a stream (`/rosout` with no log records) has no name to show
    feed.topic.stream.as_deref().unwrap_or_default()
}

/// A message of `topic` made from what its stream carried, in the forms `encodings`
/// need; `None` when the topic leaves it out or it cannot be written (counted).
fn prepare(
    shared: &Shared,
    topic: &Topic,
    envelope: &Envelope,
    encodings: &[Encoding],
) -> Option<rosbridge::Prepared> {
    let converted = match topic.convert(&envelope.message) {
        Ok(Some(message)) => message,
        Ok(None) => return None,
        Err(error) => {
            shared.counters.unwritable.increment();
            tracing::debug!(%error, "message not converted");
            return None;
        }
    };
    if matches!(topic.source, Source::DecodedImage | Source::DecodedDepth) {
        shared.counters.images_decoded.increment();
    }
    // Foxglove reads a ROS 2 type's CDR, a user's type as JSON (its shape).
    let want_value = encodings.iter().any(|e| match e {
        Encoding::Rosbridge(c) => c.wants_value(),
        Encoding::Foxglove(_) => topic.schema.is_none(),
    });
    let want_cdr = encodings.iter().any(|e| match e {
        Encoding::Rosbridge(c) => *c == Compression::CborRaw,
        Encoding::Foxglove(_) => topic.schema.is_some(),
    });
    match rosbridge::prepare(topic, &converted, want_value, want_cdr) {
        Ok(prepared) => Some(prepared),
        Err(error) => {
            shared.counters.unwritable.increment();
            tracing::debug!(%error, "message not written");
            None
        }
    }
}

/// The frames of a prepared message on `spelling` in `encoding`, as `effective` asks: one
/// frame, or the `fragment`s of a longer text; a Foxglove subscription's `messageData`
/// stamped `stamp_ns`.
fn frames_of(
    shared: &Shared,
    prepared: &rosbridge::Prepared,
    spelling: &str,
    encoding: Encoding,
    effective: Effective,
    stamp_ns: u64,
) -> Result<Outgoing, String> {
    let missing = || format!("`{spelling}`: the message was not prepared in this form");
    let compression = match encoding {
        Encoding::Rosbridge(compression) => compression,
        Encoding::Foxglove(subscription) => {
            let payload = foxglove::payload(prepared).ok_or_else(missing)?;
            let bytes = foxglove::message_data(subscription, stamp_ns, &payload);
            return Ok(Arc::from([Message::Binary(bytes.into())]));
        }
    };
    let (text, op) = match compression {
        Compression::CborRaw => {
            let cdr = prepared.cdr.as_ref().ok_or_else(missing)?;
            let bytes = outgoing::publish_cbor_raw(spelling, cdr).map_err(|e| e.to_string())?;
            return Ok(Arc::from([Message::Binary(bytes.into())]));
        }
        Compression::Cbor => {
            let value = prepared.value.as_ref().ok_or_else(missing)?;
            let bytes = wire::publish_cbor(spelling, value);
            return Ok(Arc::from([Message::Binary(bytes.into())]));
        }
        Compression::Json => {
            let value = prepared.value.as_ref().ok_or_else(missing)?;
            (wire::publish_json(spelling, value), "fragment")
        }
        Compression::Png => {
            let value = prepared.value.as_ref().ok_or_else(missing)?;
            let text = outgoing::publish_png(spelling, value).map_err(|e| e.to_string())?;
            (text, "png")
        }
    };
    let Some(size) = effective.fragment_size else {
        return Ok(Arc::from([Message::Text(text.into())]));
    };
    let id = format!(
        "publish {}",
        shared.next_fragmented.fetch_add(1, Ordering::Relaxed)
    );
    Ok(outgoing::fragments(text, size, op, &id)
        .into_iter()
        .map(|part| Message::Text(part.into()))
        .collect())
}

fn run_feed(shared: &Arc<Shared>, feed: &Arc<Feed>, tap: Box<dyn StreamTap>) {
    let mut unwatched_since: Option<Instant> = None;
    loop {
        let envelope = tap.recv_timeout(FEED_POLL);
        {
            let mut feeds = lock(&shared.feeds);
            let unwatched = lock(&feed.subscribers).is_empty();
            unwatched_since = if unwatched {
                unwatched_since.or_else(|| Some(Instant::now()))
            } else {
                None
            };
            let linger_over = unwatched_since.is_some_and(|at| at.elapsed() >= FEED_LINGER);
            if shared.stopping.load(Ordering::SeqCst) || linger_over {
                if feeds
                    .get(&feed.topic.name)
                    .is_some_and(|f| Arc::ptr_eq(f, feed))
                {
                    feeds.remove(&feed.topic.name);
                }
                return;
            }
        }
        let Some(envelope) = envelope else {
            continue;
        };
        feed.messages.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        // The subscribers due a message (past their throttle): none, nothing to write.
        let due: Vec<(Arc<Client>, Arc<ClientTopic>)> = lock(&feed.subscribers)
            .iter()
            .filter(|(_, entry)| {
                let mut last = lock(&entry.last_sent);
                let throttle = entry.effective().throttle;
                let due = last.is_none_or(|at| now.duration_since(at) >= throttle);
                if due {
                    *last = Some(now);
                }
                due
            })
            .cloned()
            .collect();
        if due.is_empty() {
            continue;
        }
        let encodings: Vec<Encoding> = due.iter().map(|(_, e)| e.encoding()).collect();
        let Some(prepared) = prepare(shared, &feed.topic, &envelope, &encodings) else {
            continue;
        };
        let stamp_ns = envelope.header.publish_time.as_nanos();
        // Each (spelling, encoding, fragment size) written once per message, whatever
        // the subscribers (the message prepared once for all of them).
        type Key = (String, Encoding, Option<usize>);
        let mut written: Vec<(Key, Outgoing)> = Vec::new();
        for (client, entry) in due {
            let effective = entry.effective();
            let encoding = entry.encoding();
            let key = (entry.spelling.clone(), encoding, effective.fragment_size);
            let frame = match written.iter().find(|(k, _)| *k == key) {
                Some((_, frame)) => frame.clone(),
                None => {
                    let frame = match frames_of(
                        shared,
                        &prepared,
                        &entry.spelling,
                        encoding,
                        effective,
                        stamp_ns,
                    ) {
                        Ok(frame) => frame,
                        Err(error) => {
                            shared.counters.unwritable.increment();
                            tracing::debug!(%error, "message not written");
                            continue;
                        }
                    };
                    let len: usize = frame
                        .iter()
                        .map(|m| match m {
                            Message::Text(text) => text.len(),
                            Message::Binary(bytes) => bytes.len(),
                            _ => 0,
                        })
                        .sum();
                    feed.bytes.fetch_add(len as u64, Ordering::Relaxed);
                    written.push((key, frame.clone()));
                    frame
                }
            };
            if entry.slot.push(frame) {
                client.dropped.fetch_add(1, Ordering::Relaxed);
                shared.counters.dropped.increment();
            }
            client.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_says_how_to_choose_another() {
        let error = RelayError::Bind {
            address: SocketAddr::from(([127, 0, 0, 1], 9090)),
            source: std::io::ErrorKind::AddrInUse.into(),
        };
        insta::assert_snapshot!(error.to_string());
    }

    #[test]
    fn a_client_is_one_word_of_the_report() {
        assert_eq!(report_name("client 3"), "client_3");
        assert_eq!(report_name("viewer-ab12.x_y"), "viewer-ab12.x_y");
        assert_eq!(report_name("a=b é"), "a_b__");
        assert_eq!(report_name(&"x".repeat(100)).len(), 32);
    }

    #[test]
    fn replies_clip_on_a_character_boundary() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("hello", 5), "hello");
    }
}
