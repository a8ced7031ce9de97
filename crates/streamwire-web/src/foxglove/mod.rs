//! The [Foxglove WebSocket protocol] at `/foxglove`, for Foxglove and Lichtblick, served
//! by the relay's own stack ([`RelayConfig::foxglove`](crate::RelayConfig::foxglove)).
//!
//! Why not the `foxglove` crate's server: its connect callback cannot refuse a client (no
//! token, no Origin check, no timeouts, no connection cap) and its queue drops unsaid.
//! Here a Foxglove client is one of the relay's clients like a rosbridge one: the same
//! token and Origin check, header, handshake and idle timeouts, connection cap and
//! `max_clients` seats, the same per-stream feeds filling a bounded keep-last queue per
//! subscription, the same writer (one frame per subscription in turn, a stalled client
//! disconnected), and its drops on its own row of the run's report (`dropped:<client>`).
//!
//! What a client gets: `serverInfo` (capabilities `clientPublish` and `parameters`), then
//! every topic advertised as a channel with its ROS 2 schema (`ros2msg`) and CDR messages
//! (a message without a ROS 2 type as JSON), so that Foxglove's Image, 3D, Plot and Raw
//! Messages panels read them. It may publish `cmd_vel` only (`geometry_msgs/msg/Twist` in
//! `cdr` or `json`): any other advertisement or message is refused in a `status` and
//! counted (`refused_publishes`). The run's configuration reads as parameters;
//! `setParameters` is refused (read-only). The subprotocol is the client's first choice
//! of `foxglove.sdk.v1` and `foxglove.websocket.v1` (`@foxglove/ws-protocol` 0.7's own
//! client, older Lichtblick, accept only the latter); a client offering neither is
//! answered 400.
//!
//! [Foxglove WebSocket protocol]: https://github.com/foxglove/ws-protocol/blob/main/docs/spec.md

mod channels;
mod client_to_server;
mod server_to_client;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use streamwire_core::{Context, Counter};
use streamwire_msgs::Twist;
use streamwire_ros2::RosMessage;

pub(crate) use channels::payload;
use channels::{Channel, channels_of};
use client_to_server::{ClientBinary, ClientChannel, ClientOp, parse_binary, parse_text};
pub(crate) use server_to_client::message_data;

use crate::RelayConfig;
use crate::listener::Connection;
use crate::rosbridge::topics::Topic;
use crate::server::{
    self, Client, ClientTopic, Dialect, Shared, accept_client, authorized_upgrade, clip,
};
use streamwire_core::log::{BurstLog, chain, more_since};

/// Where the relay serves the protocol.
pub(crate) const PATH: &str = "/foxglove";
/// The subprotocols served (the client's first choice of them is taken).
const SUBPROTOCOLS: [&str; 2] = ["foxglove.sdk.v1", "foxglove.websocket.v1"];
/// Frames queued per subscription (keep-last): a little slack for a Plot panel's
/// odometry while a large image is written, the newest kept when the client is behind.
const SUBSCRIPTION_QUEUE: usize = 4;
/// Channels a client may advertise at once.
const MAX_CLIENT_CHANNELS: usize = 16;
/// The longest status text.
const MAX_STATUS_TEXT: usize = 512;
/// The longest request id echoed back.
const MAX_ID: usize = 128;

/// The protocol as the relay serves it: the channels and parameters every client gets,
/// and its counters in the run's report.
pub(crate) struct Served {
    channels: Vec<Channel>,
    /// `serverInfo` and `advertise`, written once.
    server_info: String,
    advertise: String,
    parameters: BTreeMap<String, serde_json::Value>,
    /// Clients that connected with the Foxglove protocol.
    clients: Counter,
    /// Advertisements and messages of a topic other than `cmd_vel` (or of another type).
    refused_publishes: Counter,
    /// Upgrades offering no Foxglove subprotocol (400).
    refused_subprotocol: Counter,
    refused_subprotocol_log: BurstLog,
}

impl Served {
    /// The channels of `topics` and the parameters of `config`.
    pub(crate) fn new(topics: &[Arc<Topic>], config: &RelayConfig, cx: &Context<'_>) -> Served {
        let channels = channels_of(topics);
        Served {
            server_info: server_to_client::server_info(),
            advertise: server_to_client::advertise(&channels),
            channels,
            parameters: config.parameters.clone(),
            clients: cx.counter("foxglove_clients"),
            refused_publishes: cx.counter("refused_publishes"),
            refused_subprotocol: cx.counter("refused_subprotocol"),
            refused_subprotocol_log: BurstLog::default(),
        }
    }

    fn channel(&self, id: u32) -> Option<&Channel> {
        self.channels.iter().find(|c| c.id == id)
    }
}

/// A `status` error as a Foxglove client reads it.
pub(crate) fn status_error(message: &str, id: Option<&str>) -> serde_json::Value {
    server_to_client::status_error(&clip(message, MAX_STATUS_TEXT), id)
}

#[derive(serde::Deserialize)]
pub(crate) struct ConnectQuery {
    token: Option<String>,
    client: Option<String>,
}

/// `/foxglove`: with the token, from an allowed origin (or none: not a browser), offering
/// a Foxglove subprotocol, a client of the relay speaking the Foxglove protocol.
pub(crate) async fn connect(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<ConnectQuery>,
    headers: HeaderMap,
    connection: Option<Extension<Arc<Connection>>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let token = query.token.as_deref();
    let upgrade = match authorized_upgrade(&shared, token, &headers, connection.as_ref(), upgrade) {
        Err(denied) => return shared.refuse(denied),
        Ok(Some(upgrade)) => upgrade,
        Ok(None) => {
            let why = "this is the Foxglove WebSocket protocol: connect Foxglove or Lichtblick to ws://HOST:PORT/foxglove?token=...\n";
            return (StatusCode::UPGRADE_REQUIRED, why).into_response();
        }
    };
    let Some(served) = &shared.foxglove else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(chosen) = first_supported(&headers) else {
        served.refused_subprotocol.increment();
        if let Some(unsaid) = served.refused_subprotocol_log.note() {
            tracing::warn!(
                "web relay: refused a websocket at {PATH} offering no Foxglove subprotocol{}",
                more_since(unsaid)
            );
        }
        let why = format!(
            "ask for the subprotocol {} (Sec-WebSocket-Protocol)\n",
            SUBPROTOCOLS.join(" or ")
        );
        return (StatusCode::BAD_REQUEST, why).into_response();
    };
    let upgrade = upgrade.protocols([chosen]);
    served.clients.increment();
    let session = Session::default();
    accept_client(
        shared.clone(),
        connection,
        upgrade,
        query.client,
        Dialect::Foxglove(session),
    )
}

/// The first subprotocol the client offers (`Sec-WebSocket-Protocol`, in its order of
/// preference, RFC 6455 4.1) that the relay serves. Why the client's order: a client
/// checks the subprotocol it gets against its own list (`@foxglove/ws-protocol` 0.7
/// accepts only `foxglove.websocket.v1`), so it must get its first choice.
fn first_supported(headers: &HeaderMap) -> Option<&'static str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|offered| SUBPROTOCOLS.into_iter().find(|s| *s == offered.trim()))
}

/// What one Foxglove client has asked for.
#[derive(Default)]
pub(crate) struct Session {
    /// Its subscriptions by its ids.
    subscriptions: HashMap<u32, Arc<ClientTopic>>,
    /// The channels it may publish on (`cmd_vel`), by its ids: their encoding.
    publishing: HashMap<u32, Publish>,
}

/// How a client's `cmd_vel` channel is encoded.
#[derive(Clone, Copy, Debug)]
enum Publish {
    Cdr,
    Json,
}

impl Session {
    /// Queues `serverInfo` and the channels for a new client.
    pub(crate) fn greet(&self, shared: &Shared, client: &Client) {
        if let Some(served) = &shared.foxglove {
            for text in [&served.server_info, &served.advertise] {
                client.queue_control(shared, Message::Text(text.clone().into()));
            }
        }
    }

    /// Answers one text or binary frame.
    pub(crate) fn handle(&mut self, shared: &Arc<Shared>, client: &Arc<Client>, frame: Message) {
        let Some(served) = &shared.foxglove else {
            return;
        };
        let done = match &frame {
            Message::Text(text) => parse_text(text).and_then(|op| self.op(shared, client, op)),
            Message::Binary(bytes) => {
                parse_binary(bytes).and_then(|binary| self.binary(shared, served, binary))
            }
            _ => Ok(()),
        };
        if let Err(why) = done {
            refuse(shared, client, &why, None);
        }
    }

    fn op(
        &mut self,
        shared: &Arc<Shared>,
        client: &Arc<Client>,
        op: ClientOp,
    ) -> Result<(), String> {
        let Some(served) = &shared.foxglove else {
            return Ok(());
        };
        match op {
            ClientOp::Subscribe { subscriptions } => {
                for s in subscriptions {
                    if let Err(why) = self.subscribe(shared, served, client, s.id, s.channel_id) {
                        refuse(shared, client, &why, None);
                    }
                }
            }
            ClientOp::Unsubscribe { subscription_ids } => {
                for id in subscription_ids {
                    match self.subscriptions.remove(&id) {
                        Some(entry) => server::unsubscribe(shared, client, &entry),
                        None => refuse(
                            shared,
                            client,
                            &format!("no subscription {id} to end"),
                            None,
                        ),
                    }
                }
            }
            ClientOp::Advertise { channels } => {
                for channel in channels {
                    if let Err(why) = self.advertise(shared, &channel) {
                        served.refused_publishes.increment();
                        refuse(shared, client, &why, None);
                    }
                }
            }
            ClientOp::Unadvertise { channel_ids } => {
                for id in channel_ids {
                    self.publishing.remove(&id);
                }
            }
            ClientOp::GetParameters {
                parameter_names,
                id,
            } => reply_parameters(shared, client, served, &parameter_names, id.as_deref()),
            ClientOp::SetParameters { parameters, id } => {
                let id = id.map(|id| clip(&id, MAX_ID));
                let names: Vec<String> = parameters.into_iter().map(|p| p.name).collect();
                let why = "parameters are the run's configuration, read-only here: set them when starting the run (`-o key=value`)";
                refuse(shared, client, why, id.as_deref());
                // The spec's answer to a write with an id: the values as they are.
                if id.is_some() && !names.is_empty() {
                    reply_parameters(shared, client, served, &names, id.as_deref());
                }
            }
        }
        Ok(())
    }

    fn subscribe(
        &mut self,
        shared: &Arc<Shared>,
        served: &Served,
        client: &Arc<Client>,
        id: u32,
        channel_id: u32,
    ) -> Result<(), String> {
        let channel = served
            .channel(channel_id)
            .ok_or_else(|| format!("unknown channel {channel_id}"))?;
        if self.subscriptions.contains_key(&id) {
            return Err(format!("subscription id {id} is taken"));
        }
        if let Some((taken, _)) = self
            .subscriptions
            .iter()
            .find(|(_, entry)| entry.topic() == channel.topic.name)
        {
            return Err(format!(
                "channel {channel_id} is subscribed already, as subscription {taken}"
            ));
        }
        let entry = Arc::new(ClientTopic::foxglove(
            &channel.topic,
            id,
            SUBSCRIPTION_QUEUE,
        ));
        server::subscribe(shared, client, &channel.topic, entry.clone())?;
        self.subscriptions.insert(id, entry);
        Ok(())
    }

    fn advertise(&mut self, shared: &Shared, channel: &ClientChannel) -> Result<(), String> {
        let cmd_vel = shared.config.cmd_vel_topic.trim_start_matches('/');
        if !shared.is_cmd_vel(&channel.topic) {
            return Err(format!(
                "cannot publish on `{}`: clients may publish only `/{cmd_vel}` (geometry_msgs/msg/Twist)",
                channel.topic
            ));
        }
        if !matches!(
            channel.schema_name.as_str(),
            "geometry_msgs/msg/Twist" | "geometry_msgs/Twist"
        ) {
            return Err(format!(
                "cannot publish `{}` on `/{cmd_vel}`: it takes geometry_msgs/msg/Twist",
                channel.schema_name
            ));
        }
        let encoding = match channel.encoding.as_str() {
            "cdr" => Publish::Cdr,
            "json" => Publish::Json,
            other => {
                return Err(format!(
                    "cannot publish in encoding `{other}` (supported: cdr, json)"
                ));
            }
        };
        if self.publishing.len() >= MAX_CLIENT_CHANNELS
            && !self.publishing.contains_key(&channel.id)
        {
            return Err(format!("at most {MAX_CLIENT_CHANNELS} channels per client"));
        }
        self.publishing.insert(channel.id, encoding);
        Ok(())
    }

    fn binary(
        &mut self,
        shared: &Shared,
        served: &Served,
        binary: ClientBinary<'_>,
    ) -> Result<(), String> {
        let ClientBinary::MessageData {
            channel_id,
            payload,
        } = binary;
        let Some(encoding) = self.publishing.get(&channel_id) else {
            served.refused_publishes.increment();
            return Err(format!(
                "a message on channel {channel_id}, which this client has not advertised (or was refused)"
            ));
        };
        let twist = match encoding {
            Publish::Cdr => Twist::from_cdr(payload.to_vec()).map_err(|e| chain(&e).to_string()),
            Publish::Json => serde_json::from_slice(payload)
                .map_err(|e| e.to_string())
                .and_then(|value| crate::rosbridge::client_to_server::twist(&value)),
        }
        .map_err(|why| format!("not a geometry_msgs/msg/Twist: {why}"))?;
        shared.command(twist);
        Ok(())
    }
}

/// Says `why` to the client in a `status` error, counted as the client's bad input.
fn refuse(shared: &Shared, client: &Client, why: &str, id: Option<&str>) {
    client.bad_input.fetch_add(1, Ordering::Relaxed);
    shared.counters.bad_input.increment();
    let status = status_error(why, id);
    client.queue_control(shared, Message::Text(status.to_string().into()));
}

/// `parameterValues` of `names` (every parameter when none); unknown names are left
/// out, as the spec says.
fn reply_parameters(
    shared: &Shared,
    client: &Client,
    served: &Served,
    names: &[String],
    id: Option<&str>,
) {
    let id = id.map(|id| clip(id, MAX_ID));
    let chosen = served
        .parameters
        .iter()
        .filter(|(name, _)| names.is_empty() || names.contains(name));
    let reply = server_to_client::parameter_values(chosen, id.as_deref());
    client.queue_control(shared, Message::Text(reply.to_string().into()));
}
