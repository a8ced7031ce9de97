//! Encoded images.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// An encoded image: JPEG bytes, or zstd-compressed depth, with a ROS-style format string.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire/CompressedImage", crate = streamwire_core)]
pub struct CompressedImage {
    format: String,
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
    original_width: u32,
    original_height: u32,
}
