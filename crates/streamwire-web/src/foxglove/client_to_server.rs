//! What Foxglove clients send: JSON text operations and binary frames (ws-protocol
//! `docs/spec.md`), read into [`ClientOp`] and [`ClientBinary`]; anything else is a
//! refusal said back in a `status`.

use serde::Deserialize;

/// A text operation from a client.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub(crate) enum ClientOp {
    /// Subscribe to channels.
    Subscribe {
        /// The client's subscription ids and the channels they are for.
        subscriptions: Vec<Subscription>,
    },
    /// End subscriptions.
    Unsubscribe {
        /// The client's subscription ids.
        #[serde(rename = "subscriptionIds")]
        subscription_ids: Vec<u32>,
    },
    /// Channels the client will publish on.
    Advertise {
        /// The client's channels.
        channels: Vec<ClientChannel>,
    },
    /// Ends channels the client published on.
    Unadvertise {
        /// The client's channel ids.
        #[serde(rename = "channelIds")]
        channel_ids: Vec<u32>,
    },
    /// Reads parameters.
    GetParameters {
        /// The names; none asks for every parameter.
        #[serde(rename = "parameterNames")]
        parameter_names: Vec<String>,
        /// Echoed in the answer.
        id: Option<String>,
    },
    /// Writes parameters (refused: the run's configuration is read-only).
    SetParameters {
        /// The parameters to write.
        parameters: Vec<NamedParameter>,
        /// Echoed in the answer.
        id: Option<String>,
    },
}

/// One subscription of a `subscribe`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Subscription {
    /// The client's id for it, in the `messageData` frames it gets.
    pub(crate) id: u32,
    /// The channel.
    pub(crate) channel_id: u32,
}

/// A channel a client advertises.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClientChannel {
    /// The client's id for it, in its `messageData` frames.
    pub(crate) id: u32,
    /// The topic.
    pub(crate) topic: String,
    /// `cdr` or `json`.
    pub(crate) encoding: String,
    /// `geometry_msgs/msg/Twist`.
    pub(crate) schema_name: String,
}

/// A parameter of `setParameters` (only the name is read).
#[derive(Debug, Deserialize)]
pub(crate) struct NamedParameter {
    /// Its name.
    pub(crate) name: String,
}

/// A text operation, or why it is refused.
pub(crate) fn parse_text(text: &str) -> Result<ClientOp, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(op) = value
        .get("op")
        .and_then(|op| op.as_str())
        .map(str::to_owned)
    else {
        return Err("expected a JSON object with an `op` (a string)".to_owned());
    };
    serde_json::from_value(value).map_err(|e| {
        if e.to_string().starts_with("unknown variant") {
            format!(
                "operation `{op}` is unsupported (supported: subscribe, unsubscribe, advertise, unadvertise, getParameters, setParameters)"
            )
        } else {
            format!("malformed `{op}`: {e}")
        }
    })
}

/// A binary frame from a client.
#[derive(Debug, PartialEq)]
pub(crate) enum ClientBinary<'a> {
    /// `messageData` (opcode 1): a message on one of the client's channels.
    MessageData {
        /// The client's channel id.
        channel_id: u32,
        /// The message, in the channel's encoding.
        payload: &'a [u8],
    },
}

/// A binary frame, or why it is refused.
pub(crate) fn parse_binary(frame: &[u8]) -> Result<ClientBinary<'_>, String> {
    match frame.split_first() {
        Some((1, rest)) => {
            let (id, payload) = rest
                .split_first_chunk::<4>()
                .ok_or("a messageData frame shorter than its channel id")?;
            Ok(ClientBinary::MessageData {
                channel_id: u32::from_le_bytes(*id),
                payload,
            })
        }
        Some((opcode, _)) => Err(format!(
            "binary opcode {opcode} is unsupported (supported: 1, messageData)"
        )),
        None => Err("an empty binary frame".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_read_and_refusals_say_why() {
        let cases = [
            r#"{"op":"subscribe","subscriptions":[{"id":0,"channelId":3}]}"#,
            r#"{"op":"unsubscribe","subscriptionIds":[0]}"#,
            r#"{"op":"advertise","channels":[{"id":1,"topic":"/cmd_vel","encoding":"cdr","schemaName":"geometry_msgs/msg/Twist","schema":"..."}]}"#,
            r#"{"op":"getParameters","parameterNames":[],"id":"a"}"#,
            r#"{"op":"setParameters","parameters":[{"name":"camera.fps","value":5}]}"#,
            r#"{"op":"callService"}"#,
            r#"{"op":"subscribe","subscriptions":[{"id":-1,"channelId":3}]}"#,
            "[1, 2]",
            r#"{"subscriptions":[]}"#,
            "not json",
        ];
        let text: Vec<String> = cases
            .iter()
            .map(|c| format!("{c}\n  {:?}", parse_text(c)))
            .collect();
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn binary_frames_read_and_refusals_say_why() {
        assert_eq!(
            parse_binary(&[1, 5, 0, 0, 0, 9, 8]),
            Ok(ClientBinary::MessageData {
                channel_id: 5,
                payload: &[9, 8]
            })
        );
        assert!(parse_binary(&[1, 5, 0]).is_err());
        assert!(parse_binary(&[2, 0, 0, 0, 0]).is_err());
        assert!(parse_binary(&[]).is_err());
    }
}
