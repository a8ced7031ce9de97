//! The relay's topics as Foxglove channels: each with its ROS 2 schema (`ros2msg`) and its
//! messages in CDR, or, for a message without a ROS 2 type, JSON.

use std::sync::Arc;

use streamwire_core::log::chain;
use streamwire_core::{Codec, Envelope, Message as _};
use streamwire_msgs::{CompressedImage, DepthImage, Zstd};
use streamwire_ros2::RosMessage;
use streamwire_ros2::schema::RosSchema;

use crate::server::Topic;
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

/// The ROS 2 type a topic's messages are written as, or `None` for JSON.
fn ros_type(topic: &Topic) -> Option<&'static str> {
    // Depth tapped as its zstd bytes is decoded once by the feed into a 16UC1 image.
    if topic.tap_as == CompressedImage::TYPE_NAME && topic.ros_type == "sensor_msgs/Image" {
        return Some(DepthImage::ROS_TYPE);
    }
    streamwire_ros2::ros_type_of(topic.tap_as)
}

/// The channels of `topics`, in their order. A ROS 2 type whose schema cannot be resolved
/// (none of the built-in ones) is said in the log and served as JSON.
pub(crate) fn channels_of(topics: &[Arc<Topic>]) -> Vec<Channel> {
    (1u32..)
        .zip(topics)
        .map(|(id, topic)| {
            let schema = ros_type(topic).map(|ros_type| (ros_type, RosSchema::standard(ros_type)));
            match schema {
                Some((ros_type, Ok(schema))) => Channel {
                    id,
                    topic: topic.clone(),
                    encoding: "cdr",
                    schema_name: ros_type.to_owned(),
                    schema: schema.full_text(),
                    schema_encoding: "ros2msg",
                },
                other => {
                    if let Some((ros_type, Err(error))) = other {
                        tracing::warn!(
                            topic = %topic.stream,
                            "web relay: no ROS 2 schema for `{ros_type}` ({}): Foxglove gets the topic as JSON",
                            chain(&error)
                        );
                    }
                    Channel {
                        id,
                        topic: topic.clone(),
                        encoding: "json",
                        schema_name: topic.tap_as.to_owned(),
                        schema: r#"{"type":"object"}"#.to_owned(),
                        schema_encoding: "jsonschema",
                    }
                }
            }
        })
        .collect()
}

/// A message of `topic` as its channel's payload: CDR of its ROS 2 type (a zstd depth
/// frame decoded into `sensor_msgs/msg/Image` 16UC1, JPEG bytes as they travel in a
/// `sensor_msgs/msg/CompressedImage`), or JSON for a message without a ROS 2 type.
pub(crate) fn payload(topic: &Topic, envelope: &Envelope) -> Result<Vec<u8>, String> {
    let message = &*envelope.message;
    let Some(ros_type) = ros_type(topic) else {
        let value = wire::any(message).map_err(|e| e.to_string())?;
        let mut text = String::new();
        wire::write_json(&value, &mut text);
        return Ok(text.into_bytes());
    };
    if ros_type == DepthImage::ROS_TYPE
        && let Some(bytes) = message.downcast_ref::<CompressedImage>()
    {
        if !bytes.format().contains("zstd") {
            return Err(format!(
                "`{}` bytes cannot be decoded for Foxglove",
                bytes.format()
            ));
        }
        let depth: DepthImage = Codec::<DepthImage>::decode(&Zstd::default(), bytes)
            .map_err(|e| chain(&e).to_string())?;
        return depth.to_cdr().map_err(|e| chain(&e).to_string());
    }
    match streamwire_ros2::encode_any(message) {
        Some(Ok((_, cdr))) => Ok(cdr),
        Some(Err(error)) => Err(chain(&error).to_string()),
        None => Err(format!(
            "`{}` has no ROS 2 form though its channel says `{ros_type}`",
            message.type_name()
        )),
    }
}
