//! Odometry.

use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// Pose and velocity estimate (as `nav_msgs/Odometry`).
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Odometry", crate = streamwire_core)]
pub struct Odometry {
    stamp: Timestamp,
}
