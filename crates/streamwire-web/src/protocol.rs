//! What clients send: rosbridge v2 operations, parsed from JSON text or CBOR.

use std::time::Duration;

use serde_json::Value;
use streamwire_msgs::{Twist, Vector3};

/// The largest `queue_length` honoured (a client asking for more gets this many).
pub(crate) const MAX_QUEUE_LENGTH: usize = 16;

/// How a subscriber wants its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Encoding {
    /// JSON text frames.
    Json,
    /// CBOR binary frames with typed arrays.
    Cbor,
    /// Foxglove `messageData` binary frames of this subscription id (`crate::foxglove`).
    Foxglove(u32),
}

/// One operation from a client.
#[derive(Debug)]
pub(crate) enum Op {
    Subscribe {
        id: Option<String>,
        topic: String,
        throttle: Duration,
        queue_length: usize,
        encoding: Encoding,
    },
    Unsubscribe {
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
    },
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
            let encoding = match value.get("compression").and_then(Value::as_str) {
                None | Some("none") | Some("") => Encoding::Json,
                Some("cbor") => Encoding::Cbor,
                Some("cbor-raw") => {
                    return Err(refuse(
                        &id,
                        format!(
                            "compression `cbor-raw` (ROS-serialized bytes) is unsupported on `{topic}`: use `cbor` or `none`"
                        ),
                    ));
                }
                Some(other) => {
                    return Err(refuse(
                        &id,
                        format!(
                            "compression `{other}` is unsupported on `{topic}`: use `cbor` or `none`"
                        ),
                    ));
                }
            };
            Ok(Op::Subscribe {
                id,
                topic,
                throttle: Duration::from_millis(throttle),
                queue_length,
                encoding,
            })
        }
        "unsubscribe" => Ok(Op::Unsubscribe { topic: topic()? }),
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
            Ok(Op::CallService { id, service })
        }
        other => Err(refuse(
            &id,
            format!(
                "unknown op `{other}` (supported: subscribe, unsubscribe, advertise, unadvertise, publish, call_service)"
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
            r#"{"op": "subscribe", "topic": "/odom", "compression": "png"}"#,
            r#"{"op": "call_service"}"#,
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
