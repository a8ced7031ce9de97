//! Colour and greyscale images.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// Pixel layout of an [`Image`] (the ROS `sensor_msgs/Image` encoding names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageEncoding {
    /// 8-bit red, green, blue.
    Rgb8,
    /// 8-bit blue, green, red (OpenCV's order).
    Bgr8,
    /// 8-bit red, green, blue, alpha.
    Rgba8,
    /// 8-bit blue, green, red, alpha.
    Bgra8,
    /// 8-bit greyscale.
    Mono8,
}

/// A colour or greyscale camera image.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Image", crate = streamwire_core)]
pub struct Image {
    width: u32,
    height: u32,
    encoding: ImageEncoding,
    step: u32,
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}
