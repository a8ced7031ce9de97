//! The relay's topics: a run's streams under ROS 2 names and types, as rosbridge clients
//! (roslib, roslibpy, Foxglove) expect them.
//!
//! - An image stream with its bytes on the wire (`color_image` and its encoded form
//!   `color_image/compressed`) is two topics, image_transport's convention:
//!   `/color_image/compressed` (`sensor_msgs/msg/CompressedImage`, the camera's JPEG as
//!   it is) and `/color_image` (`sensor_msgs/msg/Image`, decoded once in the relay,
//!   counted as `images_decoded`, only while someone subscribes).
//! - Depth is `sensor_msgs/msg/Image` (`16UC1`, `uint8[] data` of `step * height`
//!   bytes), its zstd bytes decoded once in the relay.
//! - Every built-in message has its ROS 2 type (`nav_msgs/msg/OccupancyGrid`,
//!   `vision_msgs/msg/Detection2DArray`, ...); a user's message keeps its streamwire name
//!   and is written as serde writes it.
//! - `/tf` (`tf2_msgs/msg/TFMessage`) from the first odometry stream, and `/rosout`
//!   (`rcl_interfaces/msg/Log`) from the run's log-record streams, warnings and above.

use std::sync::Arc;

use streamwire_core::{AnyMessage, Codec, Message as _};
use streamwire_msgs::{
    CompressedImage, DepthImage, Image, Jpeg, LogLevel, LogRecord, Odometry, TransformStamped,
    Transforms, Zstd,
};
use streamwire_ros2::schema::RosSchema;

/// Where a topic's messages come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The stream's messages as they travel.
    Messages,
    /// An image stream's compressed bytes, decoded once into pixels.
    DecodedImage,
    /// A depth stream's zstd bytes, decoded once into millimetres.
    DecodedDepth,
    /// An odometry stream as the transform from its frame to its child frame.
    TfFromOdometry,
    /// Log records at or above the level.
    Rosout(LogLevel),
}

/// A topic clients can subscribe to.
#[derive(Debug)]
pub(crate) struct Topic {
    /// The topic without its leading `/` (`color_image/compressed`).
    pub(crate) name: String,
    /// The stream tapped for it; `None` when nothing in the run feeds it (`/rosout` of a
    /// run without log records).
    pub(crate) stream: Option<String>,
    /// The ROS 2 type (`sensor_msgs/msg/Image`), or a user type's streamwire name.
    pub(crate) ros_type: &'static str,
    /// The form tapped (`streamwire/CompressedImage` for an image's bytes).
    pub(crate) tap_as: &'static str,
    /// How messages become the topic's.
    pub(crate) source: Source,
    /// The ROS 2 definition: `None` for a user's type (no `cbor-raw`, no typedefs).
    pub(crate) schema: Option<RosSchema>,
}

impl Topic {
    fn new(name: &str, stream: Option<&str>, tap_as: &'static str, source: Source) -> Topic {
        let ros_type = match source {
            Source::DecodedImage | Source::DecodedDepth => ros_type_of(Image::TYPE_NAME),
            Source::TfFromOdometry => ros_type_of(Transforms::TYPE_NAME),
            Source::Rosout(_) => ros_type_of(LogRecord::TYPE_NAME),
            Source::Messages => ros_type_of(tap_as),
        };
        Topic {
            name: name.to_owned(),
            stream: stream.map(str::to_owned),
            ros_type,
            tap_as,
            source,
            schema: RosSchema::standard(ros_type).ok(),
        }
    }

    /// Whether `asked` names this topic's type, in ROS 2 (`sensor_msgs/msg/Image`) or
    /// ROS 1 spelling (`sensor_msgs/Image`).
    pub(crate) fn has_type(&self, asked: &str) -> bool {
        short_type(asked) == short_type(self.ros_type)
    }

    /// The topic's message made from what its stream carried; `Ok(None)` for one the
    /// topic leaves out (a log record below the level).
    pub(crate) fn convert(
        &self,
        message: &Arc<dyn AnyMessage>,
    ) -> Result<Option<Arc<dyn AnyMessage>>, String> {
        let any = &**message;
        match self.source {
            Source::Messages => Ok(Some(message.clone())),
            Source::DecodedImage => {
                let bytes = any
                    .downcast_ref::<CompressedImage>()
                    .ok_or_else(|| format!("`/{}` expected image bytes", self.name))?;
                if !bytes.format().contains("jpeg") {
                    return Err(format!(
                        "`{}` bytes cannot be decoded for browsers",
                        bytes.format()
                    ));
                }
                let image: Image =
                    Codec::<Image>::decode(&Jpeg::default(), bytes).map_err(|e| e.to_string())?;
                Ok(Some(Arc::new(image)))
            }
            Source::DecodedDepth => {
                let bytes = any
                    .downcast_ref::<CompressedImage>()
                    .ok_or_else(|| format!("`/{}` expected depth bytes", self.name))?;
                if !bytes.format().contains("zstd") {
                    return Err(format!(
                        "`{}` bytes cannot be decoded for browsers",
                        bytes.format()
                    ));
                }
                let depth: DepthImage = Codec::<DepthImage>::decode(&Zstd::default(), bytes)
                    .map_err(|e| e.to_string())?;
                Ok(Some(Arc::new(depth)))
            }
            Source::TfFromOdometry => {
                let odometry = any
                    .downcast_ref::<Odometry>()
                    .ok_or_else(|| format!("`/{}` expected odometry", self.name))?;
                let pose = odometry.pose();
                let transform = TransformStamped {
                    stamp: odometry.stamp(),
                    parent_frame_id: odometry.frame_id().into(),
                    child_frame_id: odometry.child_frame_id().into(),
                    translation: pose.position,
                    rotation: pose.orientation,
                };
                let tf = Transforms::new(vec![transform]).map_err(|e| e.to_string())?;
                Ok(Some(Arc::new(tf)))
            }
            Source::Rosout(level) => {
                let record = any
                    .downcast_ref::<LogRecord>()
                    .ok_or_else(|| format!("`/{}` expected log records", self.name))?;
                Ok((record.level >= level).then(|| message.clone()))
            }
        }
    }
}

/// `package/Type` of `package/msg/Type` (or of `package/Type`).
pub(crate) fn short_type(ros_type: &str) -> String {
    ros_type.replacen("/msg/", "/", 1)
}

/// The ROS 2 type of a streamwire type, or the streamwire name of a user's type.
fn ros_type_of(type_name: &'static str) -> &'static str {
    streamwire_ros2::ros_type_of(type_name).unwrap_or(type_name)
}

/// The topics of a run whose streams are `streams` (name, message type; encoded forms
/// included), limited to `only` (stream names) when given.
pub(crate) fn topics_of(
    streams: &[(String, &'static str)],
    only: Option<&[String]>,
    rosout_level: LogLevel,
) -> Vec<Arc<Topic>> {
    // `color_image/compressed` carrying bytes of `color_image` is an encoded form.
    let base_of = |name: &str, message: &str| {
        streams
            .iter()
            .find(|(base, m)| {
                *m != message
                    && name
                        .strip_prefix(base.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .map(|(base, _)| base.clone())
    };
    let bytes_form = |name: &str| {
        streams
            .iter()
            .find(|(n, m)| {
                *m == CompressedImage::TYPE_NAME && base_of(n, m).as_deref() == Some(name)
            })
            .map(|(n, _)| n.clone())
    };
    let wanted =
        |name: &str| only.is_none_or(|only| only.iter().any(|s| s.trim_start_matches('/') == name));
    let mut topics: Vec<Topic> = Vec::new();
    for (name, message) in streams {
        if base_of(name, message).is_some()
            || topics
                .iter()
                .any(|t| t.stream.as_deref() == Some(name.as_str()))
            || !wanted(name)
        {
            continue;
        }
        match (*message, bytes_form(name)) {
            (m, Some(_)) if m == Image::TYPE_NAME => {
                // image_transport: the bytes on `<stream>/compressed`, pixels on `<stream>`.
                let compressed = format!("{name}/compressed");
                topics.push(Topic::new(
                    &compressed,
                    Some(name),
                    CompressedImage::TYPE_NAME,
                    Source::Messages,
                ));
                topics.push(Topic::new(
                    name,
                    Some(name),
                    CompressedImage::TYPE_NAME,
                    Source::DecodedImage,
                ));
            }
            // Depth is tapped as it travels ("16UC1; zstd", a seventh of the pixels'
            // size between processes) and decoded once by the feed.
            (m, Some(_)) if m == DepthImage::TYPE_NAME => {
                topics.push(Topic::new(
                    name,
                    Some(name),
                    CompressedImage::TYPE_NAME,
                    Source::DecodedDepth,
                ));
            }
            (m, _) => topics.push(Topic::new(name, Some(name), m, Source::Messages)),
        }
    }
    let has_topic = |topics: &[Topic], name: &str| topics.iter().any(|t| t.name == name);
    if !has_topic(&topics, "tf")
        && let Some((odometry, _)) = streams
            .iter()
            .find(|(n, m)| *m == Odometry::TYPE_NAME && wanted(n))
    {
        topics.push(Topic::new(
            "tf",
            Some(odometry),
            Odometry::TYPE_NAME,
            Source::TfFromOdometry,
        ));
    }
    if !has_topic(&topics, "rosout") {
        let records = streams
            .iter()
            .find(|(n, m)| *m == LogRecord::TYPE_NAME && wanted(n))
            .map(|(n, _)| n.as_str());
        topics.push(Topic::new(
            "rosout",
            records,
            LogRecord::TYPE_NAME,
            Source::Rosout(rosout_level),
        ));
    }
    topics.into_iter().map(Arc::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_msgs::{PointCloud, Quaternion, Vector3};

    #[test]
    fn each_stream_is_a_ros_2_topic() {
        let streams = [
            ("color_image".to_owned(), Image::TYPE_NAME),
            (
                "color_image/compressed".to_owned(),
                CompressedImage::TYPE_NAME,
            ),
            ("depth".to_owned(), DepthImage::TYPE_NAME),
            ("depth/zstd".to_owned(), CompressedImage::TYPE_NAME),
            ("raw".to_owned(), Image::TYPE_NAME),
            ("odom".to_owned(), Odometry::TYPE_NAME),
            ("odom".to_owned(), Odometry::TYPE_NAME),
            ("cloud".to_owned(), PointCloud::TYPE_NAME),
            ("map".to_owned(), streamwire_msgs::OccupancyGrid::TYPE_NAME),
            (
                "detections".to_owned(),
                streamwire_msgs::Detections::TYPE_NAME,
            ),
            ("acme/beep".to_owned(), "acme/Beep"),
        ];
        let topics = topics_of(&streams, None, LogLevel::Warn);
        let text: Vec<String> = topics
            .iter()
            .map(|t| {
                format!(
                    "/{} {} (from {:?} tapped as {}, {:?}, definition: {})",
                    t.name,
                    t.ros_type,
                    t.stream,
                    t.tap_as,
                    t.source,
                    t.schema.is_some()
                )
            })
            .collect();
        insta::assert_snapshot!(text.join("\n"));
        let only = topics_of(&streams, Some(&["/odom".to_owned()]), LogLevel::Warn);
        let names: Vec<&str> = only.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["odom", "tf", "rosout"]);
    }

    #[test]
    fn types_are_matched_in_either_spelling() {
        let topic = Topic::new("odom", Some("odom"), Odometry::TYPE_NAME, Source::Messages);
        assert!(topic.has_type("nav_msgs/Odometry"));
        assert!(topic.has_type("nav_msgs/msg/Odometry"));
        assert!(!topic.has_type("sensor_msgs/msg/Image"));
    }

    fn depth_topic() -> Topic {
        Topic::new(
            "depth",
            Some("depth"),
            CompressedImage::TYPE_NAME,
            Source::DecodedDepth,
        )
    }

    #[test]
    fn zstd_depth_is_decoded_once_into_16uc1() {
        let mm: Vec<u16> = (0..12).map(|i| i * 250).collect();
        let depth = DepthImage::from_mm(4, 3, &mm).expect("valid");
        let bytes = Codec::<DepthImage>::encode(&Zstd::default(), &depth).expect("encodes");
        let topic = depth_topic();
        assert_eq!(topic.ros_type, "sensor_msgs/msg/Image");
        let message: Arc<dyn AnyMessage> = Arc::new(bytes);
        let decoded = topic.convert(&message).expect("decodes").expect("kept");
        assert_eq!(decoded.downcast_ref::<DepthImage>(), Some(&depth));
        // A corrupt frame is an error (counted by the feed), not a panic.
        let corrupt = CompressedImage::new("16UC1; zstd", vec![1u8, 2, 3], 4, 3).expect("valid");
        assert!(
            topic
                .convert(&(Arc::new(corrupt) as Arc<dyn AnyMessage>))
                .is_err()
        );
        // Bytes of another codec are refused, not sent as something else than the
        // `sensor_msgs/msg/Image` clients were told.
        let png = CompressedImage::new("16UC1; png", vec![1u8, 2, 3], 4, 3).expect("valid");
        let refused = topic
            .convert(&(Arc::new(png) as Arc<dyn AnyMessage>))
            .expect_err("not decodable");
        assert!(refused.contains("16UC1; png"), "{refused}");
    }

    #[test]
    fn odometry_is_the_transform_of_its_frames() {
        let topic = Topic::new(
            "tf",
            Some("odom"),
            Odometry::TYPE_NAME,
            Source::TfFromOdometry,
        );
        let pose = streamwire_msgs::Pose {
            position: Vector3::new(1.0, 2.0, 0.0),
            orientation: Quaternion::from_yaw(0.5),
        };
        let odometry = Odometry::new("odom", "base_link", pose, streamwire_msgs::Twist::default())
            .expect("valid");
        let message: Arc<dyn AnyMessage> = Arc::new(odometry);
        let tf = topic.convert(&message).expect("converts").expect("kept");
        let tf = tf.downcast_ref::<Transforms>().expect("transforms");
        let [t] = tf.transforms() else {
            panic!("one transform")
        };
        assert_eq!(
            (&*t.parent_frame_id, &*t.child_frame_id),
            ("odom", "base_link")
        );
        assert_eq!(t.translation, pose.position);
        assert_eq!(t.rotation, pose.orientation);
    }

    #[test]
    fn rosout_keeps_warnings_and_above() {
        let topic = Topic::new(
            "rosout",
            Some("log"),
            LogRecord::TYPE_NAME,
            Source::Rosout(LogLevel::Warn),
        );
        assert_eq!(topic.ros_type, "rcl_interfaces/msg/Log");
        let record =
            |level| -> Arc<dyn AnyMessage> { Arc::new(LogRecord::new(level, "camera", "x")) };
        assert!(
            topic
                .convert(&record(LogLevel::Info))
                .expect("ok")
                .is_none()
        );
        assert!(
            topic
                .convert(&record(LogLevel::Error))
                .expect("ok")
                .is_some()
        );
    }
}
