//! The web relay: a module that serves a run's streams to browsers.
//!
//! [`WebRelay`] goes into a blueprint like any module. When the run starts it listens
//! (default `127.0.0.1:9090`, rosbridge's port; port 0 picks a free one, see
//! [`RelayAddress`]) and serves, on one port:
//!
//! - `/` over HTTP: a live viewer page (no external downloads: everything is in this crate);
//! - `/` as a websocket: the [rosbridge v2 protocol] as rosbridge_suite's ROS 2 branch
//!   speaks it, so roslib, roslibpy and Foxglove's Rosbridge connection work: `subscribe`
//!   (several per topic, keyed by `id`: the lowest `throttle_rate`, the largest
//!   `queue_length`; `fragment_size`; `compression` `none`, `png`, `cbor` or `cbor-raw`),
//!   `unsubscribe` (by `id`: that subscription only), `advertise`/`publish` of the relay's
//!   `cmd_vel` ([`Twist`]), `set_level`, `call_service` of the rosapi services (`topics`,
//!   `topics_and_raw_types`, `topic_type`, `topics_for_type`, `nodes`, `node_details`,
//!   `publishers`, `subscribers`, `services`, `service_type`, `message_details`,
//!   `get_time`, `get_param_names`, `get_param`; `set_param` refused: read-only), and
//!   `status` messages for every error;
//! - `/stats`: per topic and per client counts as JSON (what the viewer shows).
//!
//! Only the operator's own pages and tools get in. Every route asks for the run's token
//! ([`RelayConfig::token`]: by default a new random one each run, in the URL the relay
//! logs and [`RelayAddress::url`] gives), as `?token=` or `Authorization: Bearer`;
//! without it the answer is 401. A websocket from a browser page must also come from an
//! allowed origin (the relay's own, and [`RelayConfig::allowed_origins`]), or gets 403; a
//! client sending no `Origin` (roslib in Node, roslibpy) needs only the token. A connection
//! must present the token within [`RelayConfig::token_timeout`] and send its headers
//! within [`RelayConfig::header_timeout`], an upgrade complete within
//! [`RelayConfig::handshake_timeout`], a websocket silent (not even answering pings) for
//! [`RelayConfig::idle_timeout`] is closed with 1001, and at most
//! [`RelayConfig::max_connections`] are open at once: when full, the oldest connection
//! without the token makes way for a new one, so a stranger's idle connections cannot
//! keep clients out (503 only when every place has the token). Broken frames are closed
//! with their RFC 6455 codes: 1002 (unmasked, reserved opcode), 1007 (text not UTF-8),
//! 1009 (too big). Each refusal and timeout is counted, refusals logged once per burst.
//!
//! Browsers subscribe while the run goes on, through the run's taps
//! ([`Context::taps`](streamwire_core::Context::taps)). Topics have ROS 2 names and types
//! (ROS 1 spellings such as `sensor_msgs/Image` are accepted from clients): a camera's
//! JPEG bytes are `<stream>/compressed` (`sensor_msgs/msg/CompressedImage`, as the
//! camera's encode node made them), its pixels `<stream>` (`sensor_msgs/msg/Image`,
//! decoded once in the relay while someone subscribes, counted as `images_decoded`);
//! depth is `sensor_msgs/msg/Image` (`16UC1`, `uint8[] data` of `step * height` bytes);
//! every built-in message is written field by field from its ROS 2 CDR
//! (`nav_msgs/msg/OccupancyGrid`, `vision_msgs/msg/Detection2DArray`, ...); `/tf`
//! (`tf2_msgs/msg/TFMessage`) comes from the odometry, `/rosout` (`rcl_interfaces/msg/Log`)
//! from the run's log-record streams at [`RelayConfig::rosout_level`] and above; a user's
//! message is written as serde writes it.
//!
//! Clients never hurt the run or each other: each client has a bounded keep-last queue
//! per topic (the newest frame wins, the stale one is dropped and counted for that
//! client), its own writer that takes one frame per topic in turn (a big image stream
//! cannot starve a small one), and a client that stops reading is disconnected after
//! [`RelayConfig::stall_timeout`]. At most [`RelayConfig::max_clients`] are served at
//! once. Counts go to the run's report as the instance's counters (`dropped`,
//! `stalled_disconnects`, `bad_input`, `refused_clients`, `refused_token`,
//! `refused_origin`, `refused_connections`, `evicted_connections`, `token_timeouts`,
//! `header_timeouts`, `idle_disconnects`,
//! `replies_dropped`, ...), and each client's drops
//! as `dropped:<client>` (the name it connected with, `?client=<name>`; the first 32
//! clients that dropped anything by name, later ones together as
//! `dropped:other_clients`).
//!
//! ```no_run
//! use streamwire::prelude::*;
//! use streamwire_web::{RelayConfig, WebRelay};
//!
//! let config = RelayConfig::default().with_port(0); // tests and demos: a free port
//! let address = config.address.clone();
//! let mut blueprint = Blueprint::new();
//! blueprint.add("web", WebRelay::new(config));
//! let run = blueprint.run(RunOptions::default())?;
//! if address.wait(std::time::Duration::from_secs(5)).is_some()
//!     && let Some(url) = address.url()
//! {
//!     println!("open {url}"); // http://127.0.0.1:PORT/?token=<this run's token>
//! }
//! # drop(run);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `compression: "cbor-raw"` sends a built-in message's ROS 2 CDR (what
//! `typedefs_full_text` defines) with the relay's clock (`secs`, `nsecs`); a user's
//! message, which has no ROS 2 serialization, is refused it with a status. A subscribe or
//! advertise naming another type than the topic's is refused with a status. Per-message
//! deflate is not offered (JPEG and CBOR payloads gain little from it).
//!
//! [rosbridge v2 protocol]: https://github.com/RobotWebTools/rosbridge_suite/blob/ros2/ROSBRIDGE_PROTOCOL.md

mod access;
mod duration;
mod foxglove;
#[doc(hidden)]
pub mod fuzzing;
mod listener;
mod rosbridge;
mod rosout;
mod server;
mod typedefs;
pub mod wire;

use parking_lot::{Condvar, Mutex};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use streamwire_core::{Context, Node, NodeResult, Out, Taps, Trigger};
use streamwire_macros::Module;
use streamwire_msgs::{LogLevel, Twist};

pub use access::RelayToken;
pub use duration::HumanDuration;
pub use server::RelayError;

/// rosbridge's port, the relay's default.
pub const DEFAULT_PORT: u16 = 9090;

/// The relay's settings, for code: [`WebRelay::new`] spreads them into the module's own
/// settings, which a blueprint file, `-o` and `config` name as plain keys (`web.port`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelayConfig {
    /// Where to listen. Default `127.0.0.1:9090`; other interfaces only when asked.
    pub listen: SocketAddr,
    /// The streams browsers may subscribe to; `None` (the default) is every stream of
    /// the plan.
    pub streams: Option<Vec<String>>,
    /// The token every request must carry (`?token=` or `Authorization: Bearer`): by
    /// default a new random one each run, shown in the URL the run prints
    /// ([`RelayAddress::url`]); `none` opens the relay (see [`RelayToken`]).
    pub token: RelayToken,
    /// Origins whose pages may open the websocket besides the relay's own
    /// (`http://127.0.0.1:<port>`, `http://localhost:<port>`, `http://[::1]:<port>` and the
    /// bound address), e.g. `https://app.foxglove.dev`; `*` allows every origin (the
    /// token still applies). A websocket without an `Origin` (not a browser) is not asked.
    pub allowed_origins: Vec<String>,
    /// The largest message a client may send, in bytes (default 1 MiB); a larger one
    /// closes its connection with the sizes said.
    pub max_message_bytes: usize,
    /// How long a client may take to read a frame before it is disconnected (default 5 s).
    pub stall_timeout: Duration,
    /// The most websocket clients served at once (default 32); one more is told so in a
    /// `status` error and closed (code 1013, try again later).
    pub max_clients: usize,
    /// The most connections open at once (default 256; lowered to half the process's
    /// open-files limit when that is less). When full, a new connection takes the place
    /// of the oldest one that has not presented the token (`evicted_connections`); when
    /// every one has, it is answered `503` and closed, counted (`refused_connections`)
    /// and logged once per burst.
    pub max_connections: usize,
    /// How long a connection may take to present the token (a request with it) from its
    /// start (default 3 s): one without it is closed then (`token_timeouts`).
    pub token_timeout: Duration,
    /// How long a connection may take to send a request's headers, from its start or
    /// from its previous response (default 10 s): silent, half-sent and idle HTTP
    /// connections are closed (`header_timeouts`).
    pub header_timeout: Duration,
    /// How long a websocket upgrade may take from the relay's `101` answer to the open
    /// websocket (default 10 s; `handshake_timeouts`). hyper hands the socket over once
    /// the `101` is written, so this bounds a write that cannot complete; the request
    /// before it is bounded by `header_timeout`, the websocket after it by `idle_timeout`.
    pub handshake_timeout: Duration,
    /// How long a websocket may stay silent (no frame, no answer to the relay's pings,
    /// sent every third of it) before it is closed with code 1001 (default 30 s;
    /// `idle_disconnects`).
    pub idle_timeout: Duration,
    /// The topic of the browser-fed velocity commands (default `cmd_vel`).
    pub cmd_vel_topic: String,
    /// The least severe log records `/rosout` carries (default `warn`).
    pub rosout_level: LogLevel,
    /// Serves the [Foxglove WebSocket protocol] at `/foxglove` too (default off), for
    /// Foxglove and Lichtblick, with the same token, origins and limits.
    ///
    /// [Foxglove WebSocket protocol]: https://github.com/foxglove/ws-protocol/blob/main/docs/spec.md
    pub foxglove: bool,
    /// The run's configuration, shown to Foxglove clients as read-only parameters by
    /// name (see [`RelayConfig::with_parameters`]).
    pub parameters: std::collections::BTreeMap<String, serde_json::Value>,
    /// Where the bound address is published once listening (not a setting).
    #[serde(skip)]
    pub address: RelayAddress,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)),
            streams: None,
            token: RelayToken::Random,
            allowed_origins: Vec::new(),
            max_message_bytes: 1 << 20,
            stall_timeout: Duration::from_secs(5),
            max_clients: 32,
            max_connections: 256,
            token_timeout: Duration::from_secs(3),
            header_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            cmd_vel_topic: "cmd_vel".to_owned(),
            rosout_level: LogLevel::Warn,
            foxglove: false,
            parameters: std::collections::BTreeMap::new(),
            address: RelayAddress::default(),
        }
    }
}

impl RelayConfig {
    /// Listens on `port` of the same interface (0: a free port, learnt from
    /// [`RelayAddress`]).
    pub fn with_port(mut self, port: u16) -> RelayConfig {
        self.listen.set_port(port);
        self
    }

    /// Exposes only these streams.
    pub fn with_streams<S: Into<String>>(mut self, streams: impl IntoIterator<Item = S>) -> Self {
        self.streams = Some(streams.into_iter().map(Into::into).collect());
        self
    }

    /// Asks clients for this token rather than a random one.
    pub fn with_token(mut self, token: impl Into<String>) -> RelayConfig {
        self.token = RelayToken::Fixed(token.into());
        self
    }

    /// Asks no token: any program on the machine may connect (and pages of the allowed
    /// origins). The relay says so when it starts.
    pub fn without_token(mut self) -> RelayConfig {
        self.token = RelayToken::Open;
        self
    }

    /// Lets pages of `origin` (`https://app.foxglove.dev`) open the websocket too.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> RelayConfig {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Serves the Foxglove WebSocket protocol at `/foxglove` too
    /// ([`RelayAddress::foxglove_url`]).
    pub fn with_foxglove(mut self) -> RelayConfig {
        self.foxglove = true;
        self
    }

    /// Shows `configuration` (a run's config, serialized) to Foxglove clients as
    /// read-only parameters: each value by its dotted path (`camera.fps`), a field
    /// named `token` left out (a secret).
    ///
    /// ```
    /// let config = streamwire_web::RelayConfig::default().with_parameters(
    ///     &serde_json::json!({"camera": {"fps": 30}, "web": {"token": "s3cret", "port": 0}}),
    /// )?;
    /// assert_eq!(config.parameters["camera.fps"], 30);
    /// assert_eq!(config.parameters["web.port"], 0);
    /// assert!(!config.parameters.contains_key("web.token"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn with_parameters(
        mut self,
        configuration: &impl serde::Serialize,
    ) -> Result<RelayConfig, serde_json::Error> {
        fn flatten(
            prefix: &str,
            value: serde_json::Value,
            out: &mut std::collections::BTreeMap<String, serde_json::Value>,
        ) {
            match value {
                serde_json::Value::Object(fields) => {
                    for (key, value) in fields {
                        if key == "token" {
                            continue;
                        }
                        let name = if prefix.is_empty() {
                            key
                        } else {
                            format!("{prefix}.{key}")
                        };
                        flatten(&name, value, out);
                    }
                }
                value => {
                    out.insert(prefix.to_owned(), value);
                }
            }
        }
        flatten(
            "",
            serde_json::to_value(configuration)?,
            &mut self.parameters,
        );
        Ok(self)
    }
}

/// The address the relay bound and the token it asks, shared with whoever built the
/// blueprint (clone it from [`RelayConfig::address`] before adding the relay). The port is
/// also the instance's counter `port`.
#[derive(Clone, Debug, Default)]
pub struct RelayAddress(Arc<(Mutex<Option<Bound>>, Condvar)>);

/// Where the relay listens and what it asks.
#[derive(Clone, Debug)]
struct Bound {
    address: SocketAddr,
    token: Option<String>,
}

impl RelayAddress {
    /// The bound address, once the relay listens.
    pub fn get(&self) -> Option<SocketAddr> {
        self.bound().map(|b| b.address)
    }

    /// The token clients must give, once the relay listens (`None` when it asks none).
    pub fn token(&self) -> Option<String> {
        self.bound().and_then(|b| b.token)
    }

    /// The viewer's URL with the token, `http://127.0.0.1:9090/?token=...`, once the
    /// relay listens: what a run prints for the operator to open.
    pub fn url(&self) -> Option<String> {
        self.bound().map(|b| match b.token {
            Some(token) => format!("http://{}/?token={token}", b.address),
            None => format!("http://{}/", b.address),
        })
    }

    /// The URL for Foxglove and Lichtblick's "Foxglove WebSocket" connection,
    /// `ws://127.0.0.1:9090/foxglove?token=...`, once the relay listens (served when
    /// [`RelayConfig::foxglove`] is on).
    pub fn foxglove_url(&self) -> Option<String> {
        self.bound().map(|b| match b.token {
            Some(token) => format!("ws://{}/foxglove?token={token}", b.address),
            None => format!("ws://{}/foxglove", b.address),
        })
    }

    /// Waits up to `timeout` for the relay to listen.
    pub fn wait(&self, timeout: Duration) -> Option<SocketAddr> {
        let deadline = Instant::now() + timeout;
        let (lock, ready) = &*self.0;
        let mut bound = lock.lock();
        while bound.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            ready.wait_for(&mut bound, left);
        }
        bound.as_ref().map(|b| b.address)
    }

    fn bound(&self) -> Option<Bound> {
        self.0.0.lock().clone()
    }

    fn set(&self, address: SocketAddr, token: Option<String>) {
        let (lock, ready) = &*self.0;
        *lock.lock() = Some(Bound { address, token });
        ready.notify_all();
    }
}

/// The web relay module: serves the run's streams to browsers (see the crate docs).
///
/// Its settings are its own fields, each a plain key of its instance (`web.listen`,
/// `web.port`, `web.token`, `web.idle_timeout=45s`), in a blueprint file, `-o` and
/// `config` alike; every one has a default, so a file may give none
/// (`web: { type: WebRelay }`). Code gives them as a [`RelayConfig`].
#[derive(Module)]
#[module(crate = streamwire_core, validate = WebRelay::check_settings)]
pub struct WebRelay {
    /// Velocity commands published by browsers (`advertise`/`publish` on `cmd_vel`).
    pub cmd_vel: Out<Twist>,
    /// The interface to listen on (default `127.0.0.1`; other interfaces only when asked).
    #[config]
    pub listen: IpAddr,
    /// The port (default 9090; 0 picks a free one, said in the `viewer:` line).
    #[config]
    pub port: u16,
    /// The streams browsers may subscribe to; none (the default) is every stream of the plan.
    #[config]
    pub streams: Option<Vec<String>>,
    /// The token every request must carry: `random` (default: a new one each run, in the
    /// URL the run prints), `none` (no token), or the token itself.
    #[config]
    pub token: RelayToken,
    /// Origins whose pages may open the websocket besides the relay's own
    /// (`https://app.foxglove.dev`; `*` every origin).
    #[config]
    pub allowed_origins: Vec<String>,
    /// The largest message a client may send, in bytes (default 1 MiB).
    #[config(range = 1024..=67108864)]
    pub max_message_bytes: usize,
    /// How long a client may take to read a frame before it is disconnected (default 5s).
    #[config]
    pub stall_timeout: HumanDuration,
    /// The most websocket clients served at once (default 32).
    #[config(range = 1..=65536)]
    pub max_clients: usize,
    /// The most connections open at once (default 256).
    #[config(range = 1..=65536)]
    pub max_connections: usize,
    /// How long a connection may take to present the token (default 3s).
    #[config]
    pub token_timeout: HumanDuration,
    /// How long a connection may take to send a request's headers (default 10s).
    #[config]
    pub header_timeout: HumanDuration,
    /// How long a websocket upgrade may take after the relay's `101` (default 10s).
    #[config]
    pub handshake_timeout: HumanDuration,
    /// How long a websocket may stay silent before it is closed (default 30s).
    #[config]
    pub idle_timeout: HumanDuration,
    /// The topic of the browser-fed velocity commands (default `cmd_vel`).
    #[config]
    pub cmd_vel_topic: String,
    /// The least severe log records `/rosout` carries (default `warn`).
    #[config]
    pub rosout_level: LogLevel,
    /// Serves the Foxglove WebSocket protocol at `/foxglove` too (default off).
    #[config]
    pub foxglove: bool,
    /// The run's configuration, shown to Foxglove clients as read-only parameters.
    #[config]
    pub parameters: std::collections::BTreeMap<String, serde_json::Value>,
    /// Where the bound address is published once listening.
    #[state]
    address: RelayAddress,
    #[state]
    running: Option<server::Running>,
}

impl Default for WebRelay {
    fn default() -> Self {
        WebRelay::new(RelayConfig::default())
    }
}

impl WebRelay {
    /// A relay with these settings.
    pub fn new(config: RelayConfig) -> WebRelay {
        // Every field named: a setting added to `RelayConfig` and not here fails to build.
        let RelayConfig {
            listen,
            streams,
            token,
            allowed_origins,
            max_message_bytes,
            stall_timeout,
            max_clients,
            max_connections,
            token_timeout,
            header_timeout,
            handshake_timeout,
            idle_timeout,
            cmd_vel_topic,
            rosout_level,
            foxglove,
            parameters,
            address,
        } = config;
        WebRelay {
            cmd_vel: Out::new(),
            listen: listen.ip(),
            port: listen.port(),
            streams,
            token,
            allowed_origins,
            max_message_bytes,
            stall_timeout: stall_timeout.into(),
            max_clients,
            max_connections,
            token_timeout: token_timeout.into(),
            header_timeout: header_timeout.into(),
            handshake_timeout: handshake_timeout.into(),
            idle_timeout: idle_timeout.into(),
            cmd_vel_topic,
            rosout_level,
            foxglove,
            parameters,
            address,
            running: None,
        }
    }

    /// The settings as the server reads them.
    pub fn config(&self) -> RelayConfig {
        RelayConfig {
            listen: SocketAddr::new(self.listen, self.port),
            streams: self.streams.clone(),
            token: self.token.clone(),
            allowed_origins: self.allowed_origins.clone(),
            max_message_bytes: self.max_message_bytes,
            stall_timeout: self.stall_timeout.0,
            max_clients: self.max_clients,
            max_connections: self.max_connections,
            token_timeout: self.token_timeout.0,
            header_timeout: self.header_timeout.0,
            handshake_timeout: self.handshake_timeout.0,
            idle_timeout: self.idle_timeout.0,
            cmd_vel_topic: self.cmd_vel_topic.clone(),
            rosout_level: self.rosout_level,
            foxglove: self.foxglove,
            parameters: self.parameters.clone(),
            address: self.address.clone(),
        }
    }

    /// Where the relay publishes its bound address and token once it listens.
    pub fn address(&self) -> &RelayAddress {
        &self.address
    }

    /// The relay's timeouts and topic, before the run starts (its counts declare their
    /// ranges on their fields): a timeout of 0 would close every connection at once.
    fn check_settings(&self) -> Result<(), String> {
        let c = self;
        let timeouts = [
            ("stall_timeout", c.stall_timeout),
            ("token_timeout", c.token_timeout),
            ("header_timeout", c.header_timeout),
            ("handshake_timeout", c.handshake_timeout),
            ("idle_timeout", c.idle_timeout),
        ]
        .map(|(key, value)| (key, value.0));
        let (shortest, longest) = (Duration::from_millis(10), Duration::from_secs(3600));
        for (key, value) in timeouts {
            if !(shortest..=longest).contains(&value) {
                return Err(format!(
                    "`{key}` = {} is out of range: it accepts 10ms..=1h",
                    HumanDuration(value)
                ));
            }
        }
        let topic = &c.cmd_vel_topic;
        if topic.is_empty()
            || topic.contains(['*', '$', '#', '?'])
            || topic.contains(char::is_whitespace)
        {
            return Err(format!(
                "`cmd_vel_topic` = {topic:?} is not a topic: give a name without `*`, `$`, `#`, `?` or spaces"
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for WebRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebRelay")
            .field("config", &self.config())
            .finish_non_exhaustive()
    }
}

impl WebRelay {
    /// Tells the person running the run where to point a browser (and Foxglove): the
    /// runner prints it at the default level, whatever the blueprint.
    fn announce_where(&self, cx: &Context<'_>) {
        let address = &self.address;
        let Some(url) = address.url() else { return };
        if address.token().is_some() {
            cx.announce(&format!(
                "viewer: open {url} in a browser (the token is this run's)"
            ));
        } else {
            cx.announce(&format!(
                "viewer: open {url} in a browser (no token: web.token=none lets any program on this machine connect)"
            ));
        }
        if self.foxglove
            && let Some(url) = address.foxglove_url()
        {
            cx.announce(&format!(
                "foxglove: open a Foxglove WebSocket connection to {url} in Foxglove or Lichtblick (a web app's origin needs -o web.allowed_origins=...)"
            ));
        }
    }
}

impl Node for WebRelay {
    fn trigger(&self) -> Trigger {
        // Publishes browsers' commands; the serving happens on the relay's own threads.
        Trigger::rate(100.0)
    }

    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let running = server::Running::start(&self.config(), cx)?;
        // The counter first: whoever waits on the address then finds it in the stats too.
        cx.counter("port").add(running.address().port().into());
        self.address
            .set(running.address(), running.token().map(str::to_owned));
        self.running = Some(running);
        self.announce_where(cx);
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if let Some(running) = &mut self.running {
            let commands: Vec<Twist> = running.commands().collect();
            for twist in commands {
                self.cmd_vel.publish(twist)?;
            }
            running.report_drops(cx);
        }
        rosout::report_counts(cx);
        Ok(())
    }

    fn stop(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if let Some(mut running) = self.running.take() {
            running.shutdown();
            running.report_drops(cx);
        }
        rosout::report_counts(cx);
        Ok(())
    }

    /// The streams browsers may ask for: in a closed run of several processes, the plan's
    /// access control lets the relay's process subscribe to them (and to nothing else).
    fn taps(&self) -> Taps {
        match &self.streams {
            Some(streams) => Taps::Streams(streams.clone()),
            None => Taps::All,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::{ConfigProblem, Module as _};

    fn problems(config: RelayConfig) -> Vec<String> {
        WebRelay::new(config)
            .check_config()
            .iter()
            .map(|problem| match problem {
                ConfigProblem::Invalid { message } => message.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_relays_settings_are_checked_against_their_ranges() {
        assert!(problems(RelayConfig::default()).is_empty());
        assert_eq!(
            problems(RelayConfig {
                max_clients: 0,
                ..RelayConfig::default()
            }),
            ["OutOfRange { field: \"max_clients\", value: \"0\", accepts: \"1..=65536\" }"]
        );
        assert_eq!(
            problems(RelayConfig {
                idle_timeout: Duration::ZERO,
                ..RelayConfig::default()
            }),
            ["`idle_timeout` = 0s is out of range: it accepts 10ms..=1h"]
        );
        assert_eq!(
            problems(RelayConfig {
                max_message_bytes: usize::MAX,
                ..RelayConfig::default()
            })
            .len(),
            1
        );
        assert_eq!(
            problems(RelayConfig {
                cmd_vel_topic: "robot/**".to_owned(),
                ..RelayConfig::default()
            }),
            [
                "`cmd_vel_topic` = \"robot/**\" is not a topic: give a name without `*`, `$`, `#`, `?` or spaces"
            ]
        );
    }
}
