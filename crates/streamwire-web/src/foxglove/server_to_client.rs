//! What the relay sends Foxglove clients: JSON text messages and the binary
//! `messageData` frame (ws-protocol `docs/spec.md`).

use serde_json::{Value, json};

use super::channels::Channel;

/// The capabilities the relay announces: publishing (of `cmd_vel` only) and reading
/// parameters (`setParameters` is answered, refused).
pub(crate) const CAPABILITIES: [&str; 2] = ["clientPublish", "parameters"];
/// The encodings a client may publish in.
pub(crate) const CLIENT_ENCODINGS: [&str; 2] = ["cdr", "json"];
/// The ROS 2 distribution of the types written (streamwire-ros2's Jazzy types).
const ROS_DISTRO: &str = "jazzy";
/// `messageData`'s binary opcode.
const MESSAGE_DATA: u8 = 0x01;
/// A status's level: an error.
const LEVEL_ERROR: u8 = 2;

/// `serverInfo`: the first message a client gets.
pub(crate) fn server_info() -> String {
    json!({
        "op": "serverInfo",
        "name": "streamwire",
        "capabilities": CAPABILITIES,
        "supportedEncodings": CLIENT_ENCODINGS,
        // The ROS 2 distribution whose types the channels carry: Lichtblick and Foxglove
        // then know the common ROS 2 types (for publishing) as foxglove_bridge's clients do.
        "metadata": {"ROS_DISTRO": ROS_DISTRO},
    })
    .to_string()
}

/// `advertise` of every channel.
pub(crate) fn advertise(channels: &[Channel]) -> String {
    let channels: Vec<Value> = channels
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "topic": format!("/{}", c.topic.name),
                "encoding": c.encoding,
                "schemaName": c.schema_name,
                "schema": c.schema,
                "schemaEncoding": c.schema_encoding,
            })
        })
        .collect();
    json!({"op": "advertise", "channels": channels}).to_string()
}

/// `status` at level error, echoing the request's `id` when it had one.
pub(crate) fn status_error(message: &str, id: Option<&str>) -> Value {
    let mut status = json!({"op": "status", "level": LEVEL_ERROR, "message": message});
    if let Some(id) = id {
        status["id"] = json!(id);
    }
    status
}

/// `parameterValues`: `parameters` by name, echoing the request's `id`.
pub(crate) fn parameter_values<'a>(
    parameters: impl IntoIterator<Item = (&'a String, &'a Value)>,
    id: Option<&str>,
) -> Value {
    let parameters: Vec<Value> = parameters
        .into_iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    let mut reply = json!({"op": "parameterValues", "parameters": parameters});
    if let Some(id) = id {
        reply["id"] = json!(id);
    }
    reply
}

/// `messageData`: opcode, the client's subscription id, the receive time in
/// nanoseconds (here the message's publish time), then the payload.
pub(crate) fn message_data(subscription: u32, stamp_ns: u64, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(1 + 4 + 8 + payload.len());
    frame.push(MESSAGE_DATA);
    frame.extend_from_slice(&subscription.to_le_bytes());
    frame.extend_from_slice(&stamp_ns.to_le_bytes());
    frame.extend_from_slice(payload);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_data_is_opcode_subscription_time_payload() {
        let frame = message_data(7, 0x0102_0304_0506_0708, &[0xAA, 0xBB]);
        assert_eq!(
            frame,
            [1, 7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, 0xAA, 0xBB].to_vec()
        );
    }

    #[test]
    fn replies_read_as_the_spec_writes_them() {
        let parameters = [("camera.fps".to_owned(), json!(30))];
        let text = [
            server_info(),
            status_error("no", Some("a")).to_string(),
            parameter_values(parameters.iter().map(|(n, v)| (n, v)), Some("q")).to_string(),
        ];
        insta::assert_snapshot!(text.join("\n"));
    }
}
