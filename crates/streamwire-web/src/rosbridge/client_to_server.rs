//! What rosbridge clients send: their operations, parsed from JSON text or CBOR (the
//! rosbridge side of what `crate::foxglove::client_to_server` is for Foxglove clients).

use std::time::Duration;

use serde_json::Value;
use streamwire_msgs::{Twist, Vector3};

use crate::rosbridge::outgoing::PublishFormat;

/// The largest `queue_length` honoured (a client asking for more gets this many).
pub(crate) const MAX_QUEUE_LENGTH: usize = 16;

/// One operation from a client.
#[derive(Debug)]
pub(crate) enum Op {
    Subscribe {
        id: Option<String>,
        topic: String,
        /// The type the client expects, if it said.
        ros_type: Option<String>,
        throttle: Duration,
        queue_length: usize,
        compression: PublishFormat,
        /// The longest text frame before it goes in `fragment`s.
        fragment_size: Option<usize>,
    },
    Unsubscribe {
        id: Option<String>,
        topic: String,
    },
    Advertise {
        id: Option<String>,
        topic: String,
        ros_type: Option<String>,
    },
    Unadvertise,
    Publish {
        id: Option<String>,
        topic: String,
        msg: Value,
    },
    CallService {
        id: Option<String>,
        service: String,
        /// The request's fields (`{}` when none were given).
        args: Value,
    },
    /// Which `status` messages the client wants: `error`, `warning`, `info` or `none`.
    SetLevel {
        level: StatusLevel,
    },
}

/// The least severe `status` a client is sent (ROSBRIDGE_PROTOCOL.md 3.2.2, `set_level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StatusLevel {
    /// Every status.
    Info = 0,
    /// Warnings and errors (the default).
    Warning = 1,
    /// Errors only.
    Error = 2,
    /// No status at all.
    None = 3,
}

/// Why an operation was refused: the text of its `status` error, and its id.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) id: Option<String>,
    pub(crate) msg: String,
}

fn refuse(id: &Option<String>, msg: impl Into<String>) -> Refused {
    Refused {
        id: id.clone(),
        msg: msg.into(),
    }
}

fn string_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Parses a text frame.
pub(crate) fn parse_text(text: &str) -> Result<Op, Refused> {
    let value: Value = serde_json::from_str(text).map_err(|e| Refused {
        id: None,
        msg: format!("malformed JSON: {e}"),
    })?;
    parse(value)
}

/// Parses a binary frame (a CBOR map, as rosbridge accepts).
pub(crate) fn parse_cbor(bytes: &[u8]) -> Result<Op, Refused> {
    let value: Value = ciborium::from_reader(bytes).map_err(|e| Refused {
        id: None,
        msg: format!("malformed CBOR: {e}"),
    })?;
    parse(value)
}

fn parse(value: Value) -> Result<Op, Refused> {
    if !value.is_object() {
        return Err(refuse(&None, "a message must be an object with an `op`"));
    }
    // rosbridge ids are strings; a number is accepted and answered as text.
    let id = match value.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let Some(op) = value.get("op").and_then(Value::as_str) else {
        return Err(refuse(&id, "missing `op`"));
    };
    let topic = || {
        string_field(&value, "topic").ok_or_else(|| refuse(&id, format!("`{op}` needs a `topic`")))
    };
    match op {
        "subscribe" => {
            let topic = topic()?;
            let throttle = value
                .get("throttle_rate")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let queue_length = value
                .get("queue_length")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, MAX_QUEUE_LENGTH as u64) as usize;
            let asked = value.get("compression").and_then(Value::as_str);
            let Some(compression) = PublishFormat::named(asked) else {
                return Err(refuse(
                    &id,
                    format!(
                        "compression `{}` is unsupported on `{topic}`: use `none`, `png`, `cbor` or `cbor-raw`",
                        // infallible: no compression named is `none`, so `asked` is here
                        asked.unwrap_or_default()
                    ),
                ));
            };
            let fragment_size = value
                .get("fragment_size")
                .and_then(Value::as_u64)
                .filter(|&size| size > 0)
                .map(|size| usize::try_from(size).unwrap_or(usize::MAX));
            Ok(Op::Subscribe {
                ros_type: string_field(&value, "type").filter(|t| !t.is_empty()),
                id,
                topic,
                throttle: Duration::from_millis(throttle),
                queue_length,
                compression,
                fragment_size,
            })
        }
        "unsubscribe" => Ok(Op::Unsubscribe {
            topic: topic()?,
            id,
        }),
        "advertise" => Ok(Op::Advertise {
            topic: topic()?,
            ros_type: string_field(&value, "type"),
            id,
        }),
        "unadvertise" => topic().map(|_| Op::Unadvertise),
        "publish" => {
            let topic = topic()?;
            let msg = value.get("msg").cloned().unwrap_or(Value::Null);
            Ok(Op::Publish { id, topic, msg })
        }
        "call_service" => {
            let Some(service) = string_field(&value, "service") else {
                return Err(refuse(&id, "`call_service` needs a `service`"));
            };
            // rosbridge accepts a list of positional arguments too; the services here take
            // named ones only.
            let args = match value.get("args") {
                None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
                Some(args @ Value::Object(_)) => args.clone(),
                Some(Value::Array(list)) if list.is_empty() => {
                    Value::Object(serde_json::Map::new())
                }
                Some(_) => {
                    return Err(refuse(
                        &id,
                        format!(
                            "`call_service` of `{service}`: `args` must be an object of the request's fields"
                        ),
                    ));
                }
            };
            Ok(Op::CallService { id, service, args })
        }
        "set_level" => {
            let level = match value.get("level").and_then(Value::as_str) {
                Some("info") => StatusLevel::Info,
                Some("warning") => StatusLevel::Warning,
                Some("error") => StatusLevel::Error,
                Some("none") => StatusLevel::None,
                _ => {
                    return Err(refuse(
                        &id,
                        "`set_level` needs a `level`: `info`, `warning`, `error` or `none`",
                    ));
                }
            };
            Ok(Op::SetLevel { level })
        }
        other => Err(refuse(
            &id,
            format!(
                "unknown op `{other}` (supported: subscribe, unsubscribe, advertise, unadvertise, publish, call_service, set_level)"
            ),
        )),
    }
}

fn vector3(v: Option<&Value>, what: &str) -> Result<Vector3, String> {
    let Some(v) = v else {
        return Ok(Vector3::default());
    };
    let Some(fields) = v.as_object() else {
        return Err(format!("`{what}` must be an object with x, y, z"));
    };
    let mut out = [0.0f64; 3];
    for (slot, key) in out.iter_mut().zip(["x", "y", "z"]) {
        match fields.get(key) {
            None => {}
            Some(n) => match n.as_f64() {
                Some(f) if f.is_finite() => *slot = f,
                _ => return Err(format!("`{what}.{key}` must be a finite number")),
            },
        }
    }
    for key in fields.keys() {
        if !matches!(key.as_str(), "x" | "y" | "z") {
            return Err(format!("`{what}` has no field `{key}`"));
        }
    }
    Ok(Vector3::new(out[0], out[1], out[2]))
}

/// A `geometry_msgs/Twist` from a client (missing fields are zero, as in ROS).
pub(crate) fn twist(msg: &Value) -> Result<Twist, String> {
    let Some(fields) = msg.as_object() else {
        return Err("a geometry_msgs/Twist must be an object with `linear` and `angular`".into());
    };
    for key in fields.keys() {
        if !matches!(key.as_str(), "linear" | "angular") {
            return Err(format!("geometry_msgs/Twist has no field `{key}`"));
        }
    }
    Ok(Twist {
        linear: vector3(fields.get("linear"), "linear")?,
        angular: vector3(fields.get("angular"), "angular")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        match parse_text(text) {
            Ok(op) => format!("{text}\n  accepted: {op:?}"),
            Err(r) => format!("{text}\n  id {:?}: {}", r.id, r.msg),
        }
    }

    #[test]
    fn what_clients_are_told() {
        let cases = [
            "{not json",
            "[1, 2]",
            r#"{"topic": "/odom"}"#,
            r#"{"op": "fly", "id": 7}"#,
            r#"{"op": "subscribe", "id": "s"}"#,
            r#"{"op": "subscribe", "topic": "/odom", "compression": "cbor-raw"}"#,
            r#"{"op": "subscribe", "topic": "/odom", "compression": "png", "fragment_size": 100}"#,
            r#"{"op": "subscribe", "topic": "/odom", "compression": "zip"}"#,
            r#"{"op": "unsubscribe", "topic": "/odom", "id": "a"}"#,
            r#"{"op": "call_service"}"#,
            r#"{"op": "call_service", "service": "/rosapi/topic_type", "args": {"topic": "/odom"}}"#,
            r#"{"op": "call_service", "service": "/rosapi/topic_type", "args": ["/odom"]}"#,
            r#"{"op": "set_level", "level": "warning"}"#,
            r#"{"op": "set_level", "level": "loud", "id": "l"}"#,
            r#"{"op": "subscribe", "topic": "/odom", "queue_length": 100000, "throttle_rate": 50, "compression": "cbor"}"#,
        ];
        let text: Vec<String> = cases.iter().map(|c| refusal(c)).collect();
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn twists_from_clients() {
        let cases = [
            serde_json::json!({"linear": {"x": 0.5}}),
            serde_json::json!({"linear": {"x": "fast"}}),
            serde_json::json!({"linear": {"x": 1.0, "w": 2.0}}),
            serde_json::json!({"speed": 1}),
            serde_json::json!("hello"),
        ];
        let text: Vec<String> = cases
            .iter()
            .map(|c| format!("{c}\n  {:?}", twist(c)))
            .collect();
        insta::assert_snapshot!(text.join("\n"));
    }
}
