//! ROS 2 over rmw_zenoh: a run's streams as ROS 2 topics that ROS 2 nodes using
//! `rmw_zenoh_cpp` (Tier 1 since Jazzy) see, without a bridge process.
//!
//! The contract, as pure code checked against rmw_zenoh's own examples (golden strings
//! from its `docs/design.md`, see `tests/contract.rs`):
//!
//! | what | form | here |
//! |---|---|---|
//! | data key | `<domain>/<topic without leading />/<pkg>::msg::dds_::<Name>_/RIHS01_<hex>` | [`topic_key`] |
//! | node token | `@ros2_lv/<domain>/<zid>/<nid>/<nid>/NN/<enclave>/<ns>/<node>` | [`liveliness::Entity`] |
//! | endpoint token | `@ros2_lv/<domain>/<zid>/<nid>/<eid>/MP\|MS/<enclave>/<ns>/<node>/<%topic>/<type>/<hash>/<qos>` | [`liveliness::Entity`] |
//! | QoS | fields written only where they differ from rmw_zenoh's defaults | [`qos::RosQos`] |
//! | attachment | i64 LE sequence number, i64 LE source timestamp (ns), 16, 16-byte GID | [`Attachment`] |
//! | payload | CDR with its 4-byte encapsulation header | `streamwire_ros2` |
//!
//! [`Ros2Out`] is the module that publishes a run's streams this way; [`Ros2ImageIn`],
//! [`Ros2OdometryIn`], [`Ros2TwistIn`] and [`Ros2PointCloudIn`] subscribe to ROS 2 topics
//! and publish them into a run, every sample bounded and checked ([`source`]).

mod attachment;
mod bridge;
mod inputs;
mod keys;
pub mod liveliness;
pub mod qos;
pub mod source;
pub mod topics;

pub use attachment::{ATTACHMENT_LEN, Attachment, GID_LEN};
pub use bridge::{DEFAULT_CONNECT, Ros2Out, Ros2OutError, TopicPlan, plan_topics};
pub use inputs::{Ros2ImageIn, Ros2OdometryIn, Ros2PointCloudIn, Ros2TwistIn};
pub use keys::{SLASH_REPLACEMENT, dds_type_name, demangle, mangle, ros_type_name, topic_key};
pub use source::{Ros2InError, publisher_mismatch};

/// A value the rmw_zenoh contract refuses: what would make a key or token rmw_zenoh
/// misreads, or bytes it would drop.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContractError {
    /// A ROS 2 type name that is not `package/msg/Name` (or a DDS name not
    /// `package::msg::dds_::Name_`).
    #[error("{0:?} is not a ROS 2 type name (package/msg/Name)")]
    RosType(String),
    /// A topic name that is not fully qualified plain chunks (`/a/b_c`).
    #[error("{0:?} is not a fully qualified ROS 2 topic name (/a/b_c)")]
    TopicName(String),
    /// A type hash that is not `RIHS01_` and 64 lowercase hex digits.
    #[error("{0:?} is not a RIHS01 type hash")]
    TypeHash(String),
    /// A QoS text rmw_zenoh would not parse.
    #[error("QoS text {text:?}: {why}")]
    Qos {
        /// The text.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A liveliness token that cannot be written or read.
    #[error("liveliness token: {0}")]
    Token(String),
    /// An attachment that is not rmw_zenoh's 33 bytes.
    #[error("attachment of {len} bytes: {why}")]
    Attachment {
        /// Its length.
        len: usize,
        /// What is wrong.
        why: &'static str,
    },
}
