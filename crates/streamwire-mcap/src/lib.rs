//! MCAP recordings that ROS 2 tools and Foxglove read, and their replay.
//!
//! [`McapRecorder`] is a module a blueprint places anywhere (on the robot, on a base
//! station): it taps the streams it is given (all, by default) and writes every message as
//! it travels to an MCAP file with rosbag2's conventions: profile `ros2`, one `ros2msg`
//! schema per ROS 2 type (the `.msg` text with its dependencies), `cdr` messages, a
//! `rosbag2` metadata record (the bag's `metadata.yaml`, as rosbag2's MCAP storage writes
//! it), and the run's plan and configuration as a `streamwire` metadata record. Images that
//! travel compressed are recorded as their bytes (`sensor_msgs/msg/CompressedImage`, never
//! re-encoded); depth as `sensor_msgs/msg/Image` `16UC1` (chunk compression makes it small).
//!
//! Chunks are compressed with zstd or lz4 ([`ChunkCompression`]) and indexed; memory stays
//! bounded whatever the run's length (one chunk, and each tap's keep-last queue); a
//! recorder that cannot keep up drops and counts per stream, and never blocks a producer.
//! A file cut short (a crash) reads up to its last complete chunk.
//!
//! ```no_run
//! use streamwire::prelude::*;
//! use streamwire_mcap::McapRecorder;
//!
//! let mut bp = Blueprint::new();
//! bp.add("recorder", McapRecorder {
//!     path: "run.mcap".into(),
//!     streams: vec!["color_image".into(), "odometry".into()],
//!     ..McapRecorder::default()
//! });
//! ```
//!
//! Topics are the stream names with a leading `/` (`odometry` is `/odometry`); an image's
//! compressed form is `/<stream>/compressed`, as ROS's image_transport names it.

mod app;
pub mod cli;
mod record;
mod replay;
mod scan;
mod writer;

use std::path::PathBuf;

pub use app::{AppError, AppReplay, AppReplayError, AppSchema, HASH_KEY};
pub use record::{McapRecorder, RecordPlan, Recording, plan_recording};
pub use replay::{
    McapSource, Output, Playback, ReplayError, TopicMap, map_topics, parse_topic_map,
};
pub use scan::{Inventory, ReadError, TopicStats, scan};
pub use writer::{METADATA_NAME, McapWriter, RecordCounts};

/// Chunk compression of a recording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkCompression {
    /// zstd: the smallest files (rosbag2's and Foxglove's default).
    #[default]
    Zstd,
    /// lz4: faster to write and read, larger.
    Lz4,
    /// Uncompressed chunks.
    None,
}

impl std::str::FromStr for ChunkCompression {
    type Err = RecordError;

    fn from_str(text: &str) -> Result<ChunkCompression, RecordError> {
        match text.trim() {
            "zstd" => Ok(ChunkCompression::Zstd),
            "lz4" => Ok(ChunkCompression::Lz4),
            "none" => Ok(ChunkCompression::None),
            other => Err(RecordError::Config(format!(
                "compression `{other}` is not one of zstd, lz4, none"
            ))),
        }
    }
}

impl ChunkCompression {
    fn to_mcap(self) -> Option<mcap::Compression> {
        match self {
            ChunkCompression::Zstd => Some(mcap::Compression::Zstd),
            ChunkCompression::Lz4 => Some(mcap::Compression::Lz4),
            ChunkCompression::None => None,
        }
    }
}

/// Why a recording could not be made or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The file could not be created or written.
    #[error("cannot write the recording {path}")]
    Io {
        /// The recording.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The MCAP writer refused a record.
    #[error("the MCAP writer refused a record of {path}")]
    Mcap {
        /// The recording.
        path: PathBuf,
        /// Why.
        #[source]
        source: mcap::McapError,
    },
    /// A ROS 2 type's definition could not be resolved (a schema this crate lacks).
    #[error("recording: no schema for {ros_type}")]
    Schema {
        /// The ROS 2 type.
        ros_type: String,
        /// Why.
        #[source]
        source: streamwire_ros2::schema::SchemaError,
    },
    /// A stream asked for does not exist in the run.
    #[error("recording: no stream `{stream}` in this run (streams: {known})")]
    UnknownStream {
        /// The name asked for.
        stream: String,
        /// The streams that exist, comma separated.
        known: String,
    },
    /// A message could not be written as CDR (a stamp past 2038, a string too long).
    #[error("recording {stream}: a message cannot be written as CDR")]
    Encode {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        source: streamwire_ros2::EncodeError,
    },
    /// A message of a type without a ROS 2 type arrived on a recorded stream.
    #[error("recording {stream}: {message} has no ROS 2 type")]
    NoRosType {
        /// The stream.
        stream: String,
        /// The message's type.
        message: &'static str,
    },
    /// A stream asked for by name carries a message that can be recorded neither with a
    /// ROS 2 type nor with a JSON Schema.
    #[error("recording: stream `{stream}` cannot be recorded")]
    Unrecordable {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        source: AppError,
    },
    /// An application's message could not be written as JSON.
    #[error("recording {stream}: a message cannot be written as JSON")]
    Json {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        source: AppError,
    },
    /// The recorder runs where there are no taps (the Harness).
    #[error("recording: this runtime offers no taps (run the recorder in a run, not a harness)")]
    NoTaps,
    /// A setting out of range.
    #[error("recording: {0}")]
    Config(String),
}

/// The topic a stream is recorded under: `/<stream>`, and `/<stream>/compressed` for
/// compressed images published on the stream itself (ready-made bytes).
///
/// ```
/// assert_eq!(streamwire_mcap::topic_of("odometry", "nav_msgs/msg/Odometry"), "/odometry");
/// assert_eq!(
///     streamwire_mcap::topic_of("color_image", "sensor_msgs/msg/CompressedImage"),
///     "/color_image/compressed"
/// );
/// assert_eq!(
///     streamwire_mcap::topic_of("color_image/compressed", "sensor_msgs/msg/CompressedImage"),
///     "/color_image/compressed"
/// );
/// ```
pub fn topic_of(stream: &str, ros_type: &str) -> String {
    let compressed = ros_type == "sensor_msgs/msg/CompressedImage";
    if compressed && !stream.ends_with("/compressed") {
        format!("/{stream}/compressed")
    } else {
        format!("/{stream}")
    }
}
