//! The relay's readers of what it is sent, for its fuzz targets (`fuzz/`) and their
//! corpus replay tests: the rosbridge op parser (JSON text and CBOR frames, and the
//! `geometry_msgs/Twist` a client publishes) and the reading of a ROS 2 message's CDR into
//! its rosbridge shape with typed arrays, then written as JSON and CBOR. Not API: the
//! crate keeps these private otherwise.

use bytes::Bytes;
use streamwire_msgs::{
    CompressedImage, Detections, Image, LogRecord, OccupancyGrid, Odometry, PointCloud, Transforms,
    Twist,
};
use streamwire_ros2::RosMessage;
use streamwire_ros2::schema::RosSchema;

use crate::rosbridge::client_to_server::{self, Op};
use crate::wire;

/// Reads a text frame as the relay does: the op (its debug form) or the status text it
/// answers with; a `publish` also reads its `msg` as the `Twist` the relay accepts.
pub fn op_text(text: &str) -> Result<String, String> {
    read_op(client_to_server::parse_text(text))
}

/// Reads a binary frame (CBOR) as the relay does (see [`op_text`]).
pub fn op_cbor(bytes: &[u8]) -> Result<String, String> {
    read_op(client_to_server::parse_cbor(bytes))
}

fn read_op(op: Result<Op, client_to_server::Refused>) -> Result<String, String> {
    let op = op.map_err(|refused| format!("{:?}: {}", refused.id, refused.msg))?;
    if let Op::Publish { msg, .. } = &op {
        client_to_server::twist(msg)?;
    }
    Ok(format!("{op:?}"))
}

/// The ROS 2 types the relay shapes from CDR: those of the built-in messages.
pub const ROS_TYPES: [&str; 9] = [
    Image::ROS_TYPE,
    CompressedImage::ROS_TYPE,
    PointCloud::ROS_TYPE,
    Odometry::ROS_TYPE,
    Twist::ROS_TYPE,
    OccupancyGrid::ROS_TYPE,
    Detections::ROS_TYPE,
    Transforms::ROS_TYPE,
    LogRecord::ROS_TYPE,
];

/// A message's shape written both ways.
#[derive(Debug)]
pub struct Shaped {
    /// As JSON text (`compression: none`).
    pub json: String,
    /// As CBOR with RFC 8746 typed arrays (`compression: cbor`).
    pub cbor: Vec<u8>,
}

/// Reads `cdr` (encapsulation header included) as `ros_type` into its rosbridge shape,
/// and writes it as JSON and as CBOR; the reader's error text when it does not read.
pub fn shape(ros_type: &str, cdr: Bytes) -> Result<Shaped, String> {
    let schema = RosSchema::standard(ros_type).map_err(|e| e.to_string())?;
    let value = crate::rosbridge::shape::from_cdr(&schema, cdr).map_err(|e| e.to_string())?;
    let mut json = String::new();
    wire::write_json(&value, &mut json);
    let mut cbor = Vec::new();
    ciborium::into_writer(&wire::to_cbor(&value), &mut cbor).map_err(|e| e.to_string())?;
    Ok(Shaped { json, cbor })
}
