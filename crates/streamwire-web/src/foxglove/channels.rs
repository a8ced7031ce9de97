//! The relay's topics as Foxglove channels: each with its ROS 2 schema (`ros2msg`) and its
//! messages in CDR, or, for a message without a ROS 2 type, JSON.

use std::borrow::Cow;
use std::sync::Arc;

use crate::rosbridge::Prepared;
use crate::rosbridge::topics::Topic;
use crate::wire;

/// One channel: a topic, with the id clients subscribe to and what its messages are.
#[derive(Debug)]
pub(crate) struct Channel {
    /// The id in `advertise` and `subscribe` (the topic's place in the list, from 1).
    pub(crate) id: u32,
    /// The topic it carries.
    pub(crate) topic: Arc<Topic>,
    /// `cdr` or `json`.
    pub(crate) encoding: &'static str,
    /// `sensor_msgs/msg/Image`, or the streamwire type of a JSON channel.
    pub(crate) schema_name: String,
    /// The `.msg` text with its dependencies (`ros2msg`), or a JSON schema (`jsonschema`).
    pub(crate) schema: String,
    /// `ros2msg` or `jsonschema`.
    pub(crate) schema_encoding: &'static str,
}

/// The channels of `topics`, in their order: the relay's topics as rosbridge clients see
/// them (a camera's JPEG bytes on `<stream>/compressed` and its pixels on `<stream>`,
/// depth as a 16UC1 image, `/tf`, `/rosout`), each a ROS 2 type in CDR, or a user's type
/// (no ROS 2 definition) in JSON.
pub(crate) fn channels_of(topics: &[Arc<Topic>]) -> Vec<Channel> {
    (1u32..)
        .zip(topics)
        .map(|(id, topic)| match &topic.schema {
            Some(schema) => Channel {
                id,
                topic: topic.clone(),
                encoding: "cdr",
                schema_name: schema.name().to_owned(),
                schema: schema.full_text(),
                schema_encoding: "ros2msg",
            },
            None => Channel {
                id,
                topic: topic.clone(),
                encoding: "json",
                schema_name: topic.ros_type.to_owned(),
                schema: r#"{"type":"object"}"#.to_owned(),
                schema_encoding: "jsonschema",
            },
        })
        .collect()
}

/// A prepared message as its channel's payload: its ROS 2 CDR (encapsulation header
/// included), or the JSON of a message without a ROS 2 type; `None` when it was prepared
/// in neither form.
pub(crate) fn payload(prepared: &Prepared) -> Option<Cow<'_, [u8]>> {
    if let Some(cdr) = &prepared.cdr {
        return Some(Cow::Borrowed(cdr));
    }
    let value = prepared.value.as_ref()?;
    let mut text = String::new();
    wire::write_json(value, &mut text);
    Some(Cow::Owned(text.into_bytes()))
}
