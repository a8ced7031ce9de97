//! A rosbridge client's session: each frame it sends parsed into an op
//! (`client_to_server.rs`), and one method per op (`subscribe`, `unsubscribe`, `advertise`,
//! `publish`, `call_service`, `set_level`), as `crate::foxglove::Session` answers the
//! Foxglove protocol's. Every refusal is a `status` error naming what to do instead.

use std::sync::Arc;

use axum::extract::ws::Message;
use serde_json::json;

use crate::RelayConfig;
use crate::rosbridge::client_to_server::{self, Op, Refused, StatusLevel};
use crate::rosbridge::outgoing::PublishFormat;
use crate::rosbridge::rosapi;
use crate::rosbridge::subscription::{Removed, Subscription};
use crate::rosbridge::topics::{Topic, short_type};
use crate::server::{self, Client, ClientTopic, MAX_ID, MAX_REPLY_TEXT, Shared, clip};

/// A rosbridge client's session. Its subscriptions are the client's topics
/// (`Client::topic_spelled`), which its feeds and `/stats` read too.
pub(crate) struct Session;

impl Session {
    /// Answers one text (JSON) or binary (CBOR) frame.
    pub(crate) fn handle(&mut self, shared: &Arc<Shared>, client: &Arc<Client>, frame: Message) {
        let op = match frame {
            Message::Text(text) => client_to_server::parse_text(&text),
            Message::Binary(bytes) => client_to_server::parse_cbor(&bytes),
            _ => return,
        };
        match op {
            Ok(op) => self.op(shared, client, op),
            Err(refused) => client.status_error(shared, refused),
        }
    }

    fn op(&mut self, shared: &Arc<Shared>, client: &Arc<Client>, op: Op) {
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
                let subscription = Subscription {
                    id,
                    throttle,
                    queue_length,
                    compression,
                    fragment_size,
                };
                self.subscribe(shared, client, topic, ros_type, subscription);
            }
            Op::Unsubscribe { id, topic } => self.unsubscribe(shared, client, &topic, id),
            Op::Advertise {
                id,
                topic,
                ros_type,
            } => self.advertise(shared, client, &topic, ros_type.as_deref(), id),
            Op::Unadvertise => {}
            Op::Publish { id, topic, msg } => self.publish(shared, client, &topic, &msg, id),
            Op::CallService { id, service, args } => {
                self.call_service(shared, client, &service, &args, id);
            }
            Op::SetLevel { level } => client.set_status_level(level),
        }
    }

    /// `subscribe`: the topic must be served, of the type asked (if asked), and written
    /// in ROS 2 CDR for `cbor-raw`; the subscription joins the client's others of the
    /// topic (as it spelled it), or joins the topic's feed as the first.
    fn subscribe(
        &mut self,
        shared: &Arc<Shared>,
        client: &Arc<Client>,
        topic: String,
        ros_type: Option<String>,
        subscription: Subscription,
    ) {
        let id = subscription.id.clone();
        let known = match subscribable(shared, &topic, ros_type, subscription.compression) {
            Ok(known) => known,
            Err(msg) => return client.status_error(shared, Refused { id, msg }),
        };
        if let Some(entry) = client.topic_spelled(&topic) {
            return entry.add(subscription);
        }
        let Some(entry) = ClientTopic::rosbridge(&known, topic, subscription) else {
            return;
        };
        if let Err(msg) = server::subscribe(shared, client, &known, Arc::new(entry)) {
            client.status_error(shared, Refused { id, msg });
        }
    }

    /// `unsubscribe`: the subscription `id` of the topic, or all of them without an id;
    /// the topic's feed is left when none is left. An unknown id is a warning.
    fn unsubscribe(&mut self, shared: &Shared, client: &Client, topic: &str, id: Option<String>) {
        let removed = match client.topic_spelled(topic) {
            None => Removed::Some(0),
            Some(entry) => {
                let (removed, still_subscribed) = entry.remove(id.as_deref());
                if !still_subscribed {
                    server::unsubscribe(shared, client, &entry);
                }
                removed
            }
        };
        if removed != Removed::UnknownId {
            return;
        }
        // infallible: without an id every subscription goes, so this is said only with one
        let unknown = id.as_deref().unwrap_or_default();
        let mut status = json!({
            "op": "status",
            "level": "warning",
            "msg": clip(&format!("no subscription `{unknown}` on `{topic}`: nothing unsubscribed"), MAX_REPLY_TEXT),
        });
        if let Some(id) = id {
            status["id"] = json!(clip(&id, MAX_ID));
        }
        client.status(shared, StatusLevel::Warning, status);
    }

    /// `advertise`: only the relay's `cmd_vel` topic, as a `geometry_msgs/Twist`.
    fn advertise(
        &mut self,
        shared: &Shared,
        client: &Client,
        topic: &str,
        ros_type: Option<&str>,
        id: Option<String>,
    ) {
        let type_ok = ros_type.is_none_or(|t| short_type(t) == "geometry_msgs/Twist");
        if shared.is_cmd_vel(topic) && type_ok {
            return;
        }
        let msg = format!(
            "cannot advertise `{topic}` ({}): browsers may publish only `/{}` (geometry_msgs/msg/Twist)",
            ros_type.unwrap_or("no type"),
            shared.config.cmd_vel_topic.trim_start_matches('/')
        );
        client.status_error(shared, Refused { id, msg });
    }

    /// `publish`: a `Twist` on `cmd_vel`, handed to the relay's next step.
    fn publish(
        &mut self,
        shared: &Shared,
        client: &Client,
        topic: &str,
        msg: &serde_json::Value,
        id: Option<String>,
    ) {
        if !shared.is_cmd_vel(topic) {
            let msg = format!(
                "cannot publish on `{topic}`: browsers may publish only `/{}`",
                shared.config.cmd_vel_topic.trim_start_matches('/')
            );
            return client.status_error(shared, Refused { id, msg });
        }
        match client_to_server::twist(msg) {
            Ok(twist) => shared.command(twist),
            Err(why) => {
                let msg = format!("wrong message on `{topic}`: {why}");
                client.status_error(shared, Refused { id, msg });
            }
        }
    }

    /// `call_service`: a rosapi service answered from the run's plan and the relay's
    /// settings. rosbridge answers a failed call with `result: false` and the reason as
    /// `values`, and says it in a `status` error too.
    fn call_service(
        &mut self,
        shared: &Shared,
        client: &Client,
        service: &str,
        args: &serde_json::Value,
        id: Option<String>,
    ) {
        let service = clip(service, MAX_ID);
        let answered = answer(shared, &service, args);
        let (values, result) = match &answered {
            Ok(values) => (values.clone(), true),
            Err(msg) => (json!(clip(msg, MAX_REPLY_TEXT)), false),
        };
        let mut response = json!({"op": "service_response", "service": service, "values": values, "result": result});
        if let Some(id) = &id {
            response["id"] = json!(clip(id, MAX_ID));
        }
        client.reply(shared, response);
        if let Err(msg) = answered {
            client.status_error(shared, Refused { id, msg });
        }
    }
}

/// The topic `topic` if a client may subscribe to it as asked: served, carrying
/// `ros_type` when given, with a ROS 2 serialization for `cbor-raw`; else why not.
fn subscribable(
    shared: &Shared,
    topic: &str,
    ros_type: Option<String>,
    format: PublishFormat,
) -> Result<Arc<Topic>, String> {
    let Some(known) = shared.topic(topic).cloned() else {
        let names: Vec<String> = shared
            .topics
            .iter()
            .map(|t| format!("/{}", t.name))
            .collect();
        return Err(format!(
            "unknown topic `{topic}` (topics: {})",
            names.join(", ")
        ));
    };
    if let Some(asked) = ros_type
        && !known.has_type(&asked)
    {
        return Err(format!("`{topic}` carries {}, not {asked}", known.ros_type));
    }
    if format == PublishFormat::CborRaw && known.schema.is_none() {
        return Err(format!(
            "compression `cbor-raw` needs a ROS 2 serialization; `{topic}` carries {}, which has none: use `cbor` or `none`",
            known.ros_type
        ));
    }
    Ok(known)
}

/// The values a rosapi `service` answers with, or why it does not.
fn answer(
    shared: &Shared,
    service: &str,
    args: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    let Some(name) = rosapi::service_name(service) else {
        let served: Vec<String> = rosapi::SERVICES
            .iter()
            .map(|(n, _)| format!("/rosapi/{n}"))
            .collect();
        return Err(format!(
            "service `{service}` is not served (served: {})",
            served.join(", ")
        ));
    };
    let elapsed = u64::try_from(shared.started.1.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let view = rosapi::RunView {
        topics: &shared.topics,
        node: shared.node.clone(),
        cmd_vel: shared.config.cmd_vel_topic.clone(),
        now_nanos: shared.started.0.as_nanos().saturating_add(elapsed),
        params: relay_params(&shared.config),
        graph: &shared.graph,
    };
    rosapi::answer(&view, name, args).map_err(|why| format!("service `{service}` refused: {why}"))
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
            json!(!matches!(config.token, crate::RelayToken::Open)),
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
