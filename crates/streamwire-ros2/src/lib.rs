//! ROS 2 interop: streamwire's built-in messages as ROS 2 Jazzy types.
//!
//! For each built-in message this crate knows its ROS 2 type, writes and reads it as ROS 2
//! does on the wire and in rosbag2/MCAP files (CDR: XCDR1, little-endian, after a 4-byte
//! encapsulation header), and describes the type as ROS tools want it: the `.msg` text
//! with its dependencies (MCAP's `ros2msg` schema, rosbridge's `typedefs_full_text`),
//! rosapi's `TypeDef[]`, and the REP-2011 type hash (`RIHS01_...`).
//!
//! | streamwire | ROS 2 type |
//! |---|---|
//! | [`Image`], [`DepthImage`] | `sensor_msgs/msg/Image` (read as [`SensorImage`]: the `encoding` picks) |
//! | [`CompressedImage`] | `sensor_msgs/msg/CompressedImage` |
//! | [`PointCloud`] | `sensor_msgs/msg/PointCloud2` |
//! | [`CompressedPointCloud`] | `point_cloud_interfaces/msg/CompressedPointCloud2` |
//! | [`Odometry`] | `nav_msgs/msg/Odometry` |
//! | [`Twist`] | `geometry_msgs/msg/Twist` |
//! | [`OccupancyGrid`] | `nav_msgs/msg/OccupancyGrid` |
//! | [`Detections`] | `vision_msgs/msg/Detection2DArray` |
//! | [`Transforms`] | `tf2_msgs/msg/TFMessage` |
//! | [`LogRecord`] | `rcl_interfaces/msg/Log` |
//!
//! Where a ROS type holds more than the built-in message, the rules of RFC.md ("ROS 2
//! types") apply; a value no rule can carry is refused with
//! [`DecodeError::Unmapped`], never dropped unsaid.
//!
//! ```
//! use streamwire::Timestamp;
//! use streamwire::msgs::{DepthImage, Image, ImageEncoding};
//! use streamwire_ros2::{RosMessage, SensorImage};
//!
//! let image = Image::from_packed(2, 1, ImageEncoding::Rgb8, vec![1, 2, 3, 4, 5, 6])?
//!     .with_stamp(Timestamp::from_nanos(1_500_000_000))
//!     .with_frame_id("camera");
//! let cdr = image.to_cdr()?;
//! // Pixels come back as a slice of the buffer read: no copy.
//! let back = Image::from_cdr(cdr.clone())?;
//! assert_eq!(back, image);
//! // Reading `sensor_msgs/msg/Image` without knowing whether it is depth:
//! assert!(matches!(SensorImage::from_cdr(cdr)?, SensorImage::Color(_)));
//!
//! let schema = Image::ros_schema()?;
//! assert_eq!(schema.name(), "sensor_msgs/msg/Image");
//! assert!(schema.full_text().contains("MSG: std_msgs/Header"));
//! assert_eq!(schema.rihs01(), "RIHS01_d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # A message of your own
//!
//! Implement [`RosMessage`]: name the ROS 2 type, give its `.msg` text (types this crate
//! ships, [`schema::STANDARD`], need not be repeated), and write and read its fields in
//! the order of the text with [`cdr::CdrWriter`] and [`cdr::CdrReader`].
//!
//! ```
//! use streamwire_ros2::cdr::{CdrReader, CdrWriter};
//! use streamwire_ros2::schema::MsgSource;
//! use streamwire_ros2::{DecodeError, EncodeError, RosMessage};
//!
//! /// A battery reading, as the ROS 2 type `acme_msgs/msg/Battery`.
//! #[derive(Debug, PartialEq)]
//! struct Battery {
//!     volts: f32,
//!     cell: String,
//! }
//!
//! impl RosMessage for Battery {
//!     const ROS_TYPE: &'static str = "acme_msgs/msg/Battery";
//!     const DEFINITIONS: &'static [MsgSource] = &[MsgSource {
//!         name: "acme_msgs/msg/Battery",
//!         text: "float32 volts\nstring cell\n",
//!     }];
//!     fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
//!         w.f32(self.volts);
//!         w.string(&self.cell, "cell")?;
//!         Ok(())
//!     }
//!     fn read_cdr(r: &mut CdrReader) -> Result<Battery, DecodeError> {
//!         Ok(Battery { volts: r.f32("volts")?, cell: r.string("cell")?.to_string() })
//!     }
//! }
//!
//! let battery = Battery { volts: 12.5, cell: "a".into() };
//! assert_eq!(Battery::from_cdr(battery.to_cdr()?)?, battery);
//! assert!(Battery::ros_schema()?.rihs01().starts_with("RIHS01_"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cdr;
mod cloud;
mod messages;
pub mod schema;

use std::sync::Arc;

use bytes::Bytes;
use streamwire_core::{AnyMessage, Message, Timestamp};
use streamwire_msgs::{
    CompressedImage, CompressedPointCloud, DepthImage, Detections, Image, LogRecord, OccupancyGrid,
    Odometry, PointCloud, Transforms, Twist,
};

use crate::cdr::{CdrError, CdrReader, CdrWriteError, CdrWriter};
use crate::schema::{MsgSource, RosSchema, SchemaError};

pub use messages::SensorImage;

/// Why a ROS 2 message could not be read as a streamwire message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes are not valid CDR of the type (truncated, a lying length, ...).
    #[error(transparent)]
    Cdr(#[from] CdrError),
    /// The values are read but the streamwire message refuses them (its checks failed).
    #[error("{ros_type} holds values streamwire refuses: {source}")]
    Invalid {
        /// The ROS 2 type read.
        ros_type: &'static str,
        /// The message constructor's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A value the streamwire message cannot carry, refused by a mapping rule (RFC.md).
    #[error("{ros_type}: {field} = {value} cannot be carried: {rule}")]
    Unmapped {
        /// The ROS 2 type read.
        ros_type: &'static str,
        /// The field, e.g. `info.origin`.
        field: &'static str,
        /// The value found (clipped).
        value: String,
        /// The rule that refuses it.
        rule: &'static str,
    },
}

impl DecodeError {
    /// [`DecodeError::Invalid`]: the message's constructor refused what `ros_type` held
    /// (for a user's [`RosMessage::read_cdr`] too).
    pub fn invalid(
        ros_type: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> DecodeError {
        DecodeError::Invalid {
            ros_type,
            source: Box::new(source),
        }
    }
}

/// Why a streamwire message could not be written as a ROS 2 message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A string or array too long for CDR.
    #[error(transparent)]
    Cdr(#[from] CdrWriteError),
    /// A stamp past what `builtin_interfaces/Time` holds (int32 seconds: 2038-01-19).
    #[error("stamp {nanos} ns is past what builtin_interfaces/Time holds (int32 seconds)")]
    StampOutOfRange {
        /// The stamp, nanoseconds since the epoch.
        nanos: u64,
    },
}

/// A message with a ROS 2 type: its name, its definition, and its CDR both ways.
///
/// Implemented by every built-in message; implement it for your own (see the [crate
/// docs](crate)).
pub trait RosMessage: Sized {
    /// The ROS 2 type, `package/msg/Type`.
    const ROS_TYPE: &'static str;
    /// `.msg` texts of the type and of the types it uses that [`schema::STANDARD`] does
    /// not hold (a user's own types); empty for the built-in messages.
    const DEFINITIONS: &'static [MsgSource] = &[];

    /// Writes the fields, in the order of the definition.
    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError>;

    /// Reads the fields, in the order of the definition.
    fn read_cdr(r: &mut CdrReader) -> Result<Self, DecodeError>;

    /// The message as a CDR buffer, encapsulation header included.
    fn to_cdr(&self) -> Result<Vec<u8>, EncodeError> {
        let mut w = CdrWriter::new();
        self.write_cdr(&mut w)?;
        Ok(w.finish())
    }

    /// The message read from a CDR buffer (header included). Byte arrays are slices of
    /// `bytes`; bytes after the message (ROS 2's alignment padding) are ignored.
    fn from_cdr(bytes: impl Into<Bytes>) -> Result<Self, DecodeError> {
        let mut r = CdrReader::new(bytes.into())?;
        Self::read_cdr(&mut r)
    }

    /// The type with every type it uses: `.msg` texts, `TypeDef[]`, RIHS01 hash.
    fn ros_schema() -> Result<RosSchema, SchemaError> {
        RosSchema::resolve(Self::ROS_TYPE, Self::DEFINITIONS)
    }
}

/// The ROS 2 type of a built-in message, by its streamwire type name
/// ([`Message::TYPE_NAME`]), or `None` for a type without one.
///
/// ```
/// assert_eq!(streamwire_ros2::ros_type_of("streamwire/Odometry"), Some("nav_msgs/msg/Odometry"));
/// assert_eq!(streamwire_ros2::ros_type_of("acme/Beep"), None);
/// ```
pub fn ros_type_of(type_name: &str) -> Option<&'static str> {
    macro_rules! find {
        ($($message:ty),*) => {
            $(if type_name == <$message as Message>::TYPE_NAME {
                return Some(<$message as RosMessage>::ROS_TYPE);
            })*
        };
    }
    find!(
        Image,
        DepthImage,
        CompressedImage,
        PointCloud,
        CompressedPointCloud,
        Odometry,
        Twist,
        OccupancyGrid,
        Detections,
        Transforms,
        LogRecord
    );
    None
}

/// A built-in message of any type as CDR with its ROS 2 type, or `None` when the
/// message is not one of the built-in messages.
pub fn encode_any(
    message: &dyn AnyMessage,
) -> Option<Result<(&'static str, Vec<u8>), EncodeError>> {
    macro_rules! try_encode {
        ($($message:ty),*) => {
            $(if let Some(m) = message.as_any().downcast_ref::<$message>() {
                return Some(m.to_cdr().map(|cdr| (<$message as RosMessage>::ROS_TYPE, cdr)));
            })*
        };
    }
    try_encode!(
        Image,
        DepthImage,
        CompressedImage,
        PointCloud,
        CompressedPointCloud,
        Odometry,
        Twist,
        OccupancyGrid,
        Detections,
        Transforms,
        LogRecord
    );
    None
}

/// A ROS 2 message of type `ros_type` read from CDR as the built-in message it maps to
/// (`sensor_msgs/msg/Image` as an [`Image`] or a [`DepthImage`] by its encoding), or
/// `None` for a type no built-in message maps to.
pub fn decode_any(
    ros_type: &str,
    bytes: impl Into<Bytes>,
) -> Option<Result<Box<dyn AnyMessage>, DecodeError>> {
    fn boxed<M: RosMessage + Message>(bytes: Bytes) -> Result<Box<dyn AnyMessage>, DecodeError> {
        M::from_cdr(bytes).map(|m| Box::new(m) as Box<dyn AnyMessage>)
    }
    let bytes = bytes.into();
    let ros_type = ros_type.replace("/msg/", "/");
    Some(match ros_type.as_str() {
        "sensor_msgs/Image" => SensorImage::from_cdr(bytes).map(|image| match image {
            SensorImage::Color(image) => Box::new(image) as Box<dyn AnyMessage>,
            SensorImage::Depth(depth) => Box::new(depth),
        }),
        "sensor_msgs/CompressedImage" => boxed::<CompressedImage>(bytes),
        "sensor_msgs/PointCloud2" => boxed::<PointCloud>(bytes),
        "point_cloud_interfaces/CompressedPointCloud2" => boxed::<CompressedPointCloud>(bytes),
        "nav_msgs/Odometry" => boxed::<Odometry>(bytes),
        "geometry_msgs/Twist" => boxed::<Twist>(bytes),
        "nav_msgs/OccupancyGrid" => boxed::<OccupancyGrid>(bytes),
        "vision_msgs/Detection2DArray" => boxed::<Detections>(bytes),
        "tf2_msgs/TFMessage" => boxed::<Transforms>(bytes),
        "rcl_interfaces/Log" => boxed::<LogRecord>(bytes),
        _ => return None,
    })
}

/// Writes `builtin_interfaces/Time`.
fn write_time(w: &mut CdrWriter, stamp: Timestamp) -> Result<(), EncodeError> {
    let nanos = stamp.as_nanos();
    let sec =
        i32::try_from(nanos / 1_000_000_000).map_err(|_| EncodeError::StampOutOfRange { nanos })?;
    w.i32(sec);
    // < 10^9 always fits.
    w.u32((nanos % 1_000_000_000) as u32);
    Ok(())
}

/// Reads `builtin_interfaces/Time`, refusing times before the epoch and nanoseconds
/// past a second.
fn read_time(
    r: &mut CdrReader,
    ros_type: &'static str,
    field: &'static str,
) -> Result<Timestamp, DecodeError> {
    let sec = r.i32(field)?;
    let nanosec = r.u32(field)?;
    let (Ok(sec), true) = (u64::try_from(sec), nanosec < 1_000_000_000) else {
        return Err(DecodeError::Unmapped {
            ros_type,
            field,
            value: format!("{sec} s {nanosec} ns"),
            rule: "a stamp is at or after the epoch, with nanosec below 10^9",
        });
    };
    Ok(Timestamp::from_nanos(
        sec * 1_000_000_000 + u64::from(nanosec),
    ))
}

/// Writes `std_msgs/Header`.
fn write_header(w: &mut CdrWriter, stamp: Timestamp, frame_id: &str) -> Result<(), EncodeError> {
    write_time(w, stamp)?;
    w.string(frame_id, "header.frame_id")?;
    Ok(())
}

/// Reads `std_msgs/Header`.
fn read_header(
    r: &mut CdrReader,
    ros_type: &'static str,
) -> Result<(Timestamp, Arc<str>), DecodeError> {
    let stamp = read_time(r, ros_type, "header.stamp")?;
    Ok((stamp, r.string("header.frame_id")?))
}
