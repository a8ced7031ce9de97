//! Depth images.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// Pixel layout of a [`DepthImage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DepthEncoding {
    /// 16-bit unsigned depth in millimetres; 0 means no measurement.
    #[serde(rename = "16UC1")]
    Mm16,
    /// 32-bit float depth in metres; NaN means no measurement.
    #[serde(rename = "32FC1")]
    M32F,
}

/// A depth image.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire/DepthImage", crate = streamwire_core)]
pub struct DepthImage {
    width: u32,
    height: u32,
    encoding: DepthEncoding,
    step: u32,
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}
