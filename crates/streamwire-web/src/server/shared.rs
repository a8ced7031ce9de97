//! What every thread of the relay shares ([`Shared`]): its settings, the run's topics and
//! plan, the feeds and clients of now, the counters of the run's report, and the channel
//! of browsers' commands.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::Instant;

use streamwire_core::{Context, Counter, TapService, Timestamp};
use streamwire_msgs::Twist;

use super::client::Client;
use super::feeds::Feed;
use crate::RelayConfig;
use crate::access::{Access, BurstLog};
use crate::foxglove;
use crate::listener::ConnectionBook;
use crate::rosbridge::topics::{Topic, topics_of};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not take the relay down with it: the data is counters and
    // queues, valid at every point.
    m.lock()
}

/// The relay's counters, in the run's report.
pub(crate) struct Counters {
    pub(crate) clients: Counter,
    pub(crate) refused: Counter,
    /// Requests without the run's token (401).
    pub(crate) refused_token: Counter,
    /// Websockets from a page of a foreign origin (403).
    pub(crate) refused_origin: Counter,
    /// Connections beyond the cap (503).
    pub(crate) refused_connections: Counter,
    /// Failed accepts (the process out of files).
    pub(crate) accept_errors: Counter,
    /// Connections closed for sending no request headers in time.
    pub(crate) header_timeouts: Counter,
    /// Connections closed for presenting no token within `token_timeout`.
    pub(crate) token_timeouts: Counter,
    /// Connections without the token closed, the oldest first, to make way for a new one
    /// while the relay was full.
    pub(crate) evicted_connections: Counter,
    /// Websocket upgrades not completed in time.
    pub(crate) handshake_timeouts: Counter,
    /// Websockets closed for silence (1001).
    pub(crate) idle: Counter,
    /// Control replies (statuses, service responses) dropped from a full queue.
    pub(crate) replies_dropped: Counter,
    pub(crate) stalled: Counter,
    pub(crate) dropped: Counter,
    pub(crate) bad_input: Counter,
    pub(crate) frames_sent: Counter,
    pub(crate) bytes_sent: Counter,
    pub(crate) commands: Counter,
    pub(crate) commands_dropped: Counter,
    pub(crate) unwritable: Counter,
    /// Images and depth frames decoded for the topics that carry pixels.
    pub(crate) images_decoded: Counter,
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
            token_timeouts: cx.counter("token_timeouts"),
            evicted_connections: cx.counter("evicted_connections"),
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
    pub(crate) refused_token: BurstLog,
    pub(crate) refused_origin: BurstLog,
    pub(crate) refused_connections: BurstLog,
    pub(crate) accept_errors: BurstLog,
}

pub(crate) struct Shared {
    pub(crate) config: RelayConfig,
    /// The token asked and the origins allowed.
    pub(crate) access: Access,
    /// The most connections kept open at once (see `listener::connection_cap`).
    pub(crate) connection_cap: usize,
    /// Connections open now (a `ConnectionPlace` each), by whether they gave the token.
    pub(crate) connections: Mutex<ConnectionBook>,
    pub(crate) logs: Logs,
    pub(crate) taps: Arc<dyn TapService>,
    pub(crate) topics: Vec<Arc<Topic>>,
    /// The run's instances with their streams and settings, for rosapi (read once: a
    /// plan does not change while it runs).
    pub(crate) graph: Vec<streamwire_core::RunNode>,
    /// The feeds running now, by topic name.
    pub(crate) feeds: Mutex<HashMap<String, Arc<Feed>>>,
    pub(crate) clients: Mutex<Vec<Arc<Client>>>,
    /// Clients served now, counted from the upgrade (a `Seat` each).
    pub(crate) seats_taken: AtomicUsize,
    /// Drops of clients that left before the relay's step reported them, by report name.
    pub(crate) departed_drops: Mutex<HashMap<String, u64>>,
    pub(crate) next_client: AtomicU64,
    /// Numbers the feeds' threads.
    pub(crate) next_feed: AtomicU64,
    /// Numbers fragmented messages (their fragments' `id`).
    pub(crate) next_fragmented: AtomicU64,
    pub(crate) stopping: AtomicBool,
    pub(crate) counters: Counters,
    commands: SyncSender<Twist>,
    /// The Foxglove protocol's channels, parameters and counters, when it is served.
    pub(crate) foxglove: Option<foxglove::Served>,
    /// The relay's node name for rosapi (its instance, `/web`).
    pub(crate) node: String,
    /// The run clock when the relay started, and the instant it was read: rosapi's
    /// `get_time` is the run clock now.
    pub(crate) started: (Timestamp, Instant),
}

impl Shared {
    /// The relay's state before its first client: the topics of the run's streams that
    /// `config` serves, its counters, no feed yet.
    pub(crate) fn new(
        config: &RelayConfig,
        cx: &Context<'_>,
        taps: Arc<dyn TapService>,
        access: Access,
        connection_cap: usize,
        commands: SyncSender<Twist>,
    ) -> Shared {
        let topics = topics_of(
            &taps.streams(),
            config.streams.as_deref(),
            config.rosout_level,
        );
        // The Foxglove counters first, then the relay's: the order the report lists them.
        let foxglove = config
            .foxglove
            .then(|| foxglove::Served::new(&topics, config, cx));
        Shared {
            config: config.clone(),
            access,
            connection_cap,
            connections: Mutex::new(ConnectionBook::default()),
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
            commands,
            foxglove,
            node: format!("/{}", cx.instance_name().trim_start_matches('/')),
            started: (cx.now(), Instant::now()),
        }
    }

    /// The topic `name` (`/odom` or `odom`), if the relay serves it.
    pub(crate) fn topic(&self, name: &str) -> Option<&Arc<Topic>> {
        let stream = name.strip_prefix('/').unwrap_or(name);
        self.topics.iter().find(|t| t.name == stream)
    }

    pub(crate) fn is_cmd_vel(&self, name: &str) -> bool {
        let want = self.config.cmd_vel_topic.trim_start_matches('/');
        name.strip_prefix('/').unwrap_or(name) == want
    }

    /// Hands a browser's command to the relay's next step, counted; dropped (counted)
    /// when the queue is full.
    pub(crate) fn command(&self, twist: Twist) {
        match self.commands.try_send(twist) {
            Ok(()) => self.counters.commands.increment(),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.commands_dropped.increment();
            }
        }
    }
}
