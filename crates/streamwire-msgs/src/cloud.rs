//! Point clouds.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// One field of a point (as `sensor_msgs/PointField`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointField {
    /// Field name, e.g. `x`.
    pub name: String,
    /// Byte offset within a point.
    pub offset: u32,
}

/// A point cloud with packed point data (as `sensor_msgs/PointCloud2`).
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire/PointCloud", crate = streamwire_core)]
pub struct PointCloud {
    fields: Arc<[PointField]>,
    width: u32,
    height: u32,
    point_step: u32,
    row_step: u32,
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}
