//! Each built-in message as its ROS 2 type (the rules are RFC.md's "ROS 2 types").

use std::sync::Arc;

use streamwire_core::Timestamp;
use streamwire_msgs::{
    CompressedImage, DepthEncoding, DepthImage, DetectionBox, Detections, Image, ImageEncoding,
    LogLevel, LogRecord, OccupancyGrid, Odometry, PointCloud, PointDatatype, PointField, Pose,
    Quaternion, Raster, RasterEncoding, RasterMessage, RawEncoding, TransformStamped, Transforms,
    Twist, Vector3,
};

use crate::cdr::{CdrReader, CdrWriter};
use crate::{
    DecodeError, EncodeError, RosMessage, read_header, read_time, write_header, write_time,
};

/// At most 64 characters of an untrusted value, for errors.
fn clip(value: &str) -> String {
    match value.char_indices().nth(64) {
        None => value.to_owned(),
        // infallible: `cut` comes from `char_indices`, a character boundary
        Some((cut, _)) => format!("{}...", value.get(..cut).unwrap_or_default()),
    }
}

// ---- sensor_msgs/msg/Image ------------------------------------------------------------

const IMAGE: &str = "sensor_msgs/msg/Image";

/// A `sensor_msgs/msg/Image` read without knowing its encoding beforehand: `16UC1` and
/// `32FC1` are depth, `rgb8`, `bgr8`, `rgba8`, `bgra8` and `mono8` colour or grey; any
/// other encoding is refused ([`DecodeError::Unmapped`]).
#[derive(Clone, Debug, PartialEq)]
pub enum SensorImage {
    /// A colour or greyscale image.
    Color(Image),
    /// A depth image.
    Depth(DepthImage),
}

impl RosMessage for SensorImage {
    const ROS_TYPE: &'static str = IMAGE;

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        match self {
            SensorImage::Color(image) => write_raster(w, image),
            SensorImage::Depth(depth) => write_raster(w, depth),
        }
    }

    fn read_cdr(r: &mut CdrReader) -> Result<SensorImage, DecodeError> {
        RosImage::read(r)?.into_sensor_image()
    }
}

impl SensorImage {
    /// The refusal of this image by a reader of the other kind.
    fn wrong_kind(self) -> DecodeError {
        let (value, rule) = match self {
            SensorImage::Color(image) => (
                image.encoding().to_string(),
                "a colour encoding is an Image, not a DepthImage",
            ),
            SensorImage::Depth(depth) => (
                depth.encoding().to_string(),
                "a depth encoding is a DepthImage, not an Image",
            ),
        };
        DecodeError::Unmapped {
            ros_type: IMAGE,
            field: "encoding",
            value,
            rule,
        }
    }
}

/// The fields of `sensor_msgs/msg/Image` as read, before the encoding picks the message
/// (the same layout for colour and depth).
struct RosImage {
    stamp: Timestamp,
    frame_id: Arc<str>,
    height: u32,
    width: u32,
    encoding: Arc<str>,
    is_bigendian: u8,
    step: u32,
    data: bytes::Bytes,
}

impl RosImage {
    fn read(r: &mut CdrReader) -> Result<RosImage, DecodeError> {
        let (stamp, frame_id) = read_header(r, IMAGE)?;
        Ok(RosImage {
            stamp,
            frame_id,
            height: r.u32("height")?,
            width: r.u32("width")?,
            encoding: r.string("encoding")?,
            is_bigendian: r.u8("is_bigendian")?,
            step: r.u32("step")?,
            data: r.bytes("data")?,
        })
    }

    fn into_sensor_image(self) -> Result<SensorImage, DecodeError> {
        if let Ok(encoding) = self.encoding.parse::<DepthEncoding>() {
            return self.into_raster(encoding).map(SensorImage::Depth);
        }
        let Ok(encoding) = self.encoding.parse::<ImageEncoding>() else {
            return Err(DecodeError::Unmapped {
                ros_type: IMAGE,
                field: "encoding",
                value: clip(&self.encoding),
                rule: "images are rgb8, bgr8, rgba8, bgra8, mono8 (colour) or 16UC1, 32FC1 (depth)",
            });
        };
        self.into_raster(encoding).map(SensorImage::Color)
    }

    /// The image as the raster message `M`, whose encoding `encoding` is.
    fn into_raster<M: RasterMessage>(self, encoding: M::Encoding) -> Result<M, DecodeError> {
        // Colour has one byte per channel, where the byte order does not matter.
        if matches!(encoding.raw(), RawEncoding::Depth(_)) && self.is_bigendian != 0 {
            return Err(DecodeError::Unmapped {
                ros_type: IMAGE,
                field: "is_bigendian",
                value: self.is_bigendian.to_string(),
                rule: "depth values are little-endian in streamwire",
            });
        }
        let raster = Raster::new(self.width, self.height, encoding, self.step, self.data)
            .map_err(|e| DecodeError::invalid(IMAGE, e))?;
        Ok(M::from(
            raster.with_stamp(self.stamp).with_frame_id(self.frame_id),
        ))
    }
}

fn write_raster<M: RasterMessage>(w: &mut CdrWriter, image: &M) -> Result<(), EncodeError> {
    write_header(w, image.stamp(), image.frame_id())?;
    w.u32(image.height());
    w.u32(image.width());
    w.string(image.encoding().as_str(), "encoding")?;
    // Streamwire's pixels are bytes or little-endian values.
    w.u8(0);
    w.u32(image.step());
    w.bytes(image.data(), "data")?;
    Ok(())
}

/// Reads an image of `M`'s encodings; one of the other kind is refused, after the checks
/// a read of that kind makes (read it as the other message or as [`SensorImage`]).
fn read_raster<M: RasterMessage>(r: &mut CdrReader) -> Result<M, DecodeError> {
    let image = RosImage::read(r)?;
    match image.encoding.parse::<M::Encoding>() {
        Ok(encoding) => image.into_raster(encoding),
        Err(_) => Err(image.into_sensor_image()?.wrong_kind()),
    }
}

/// `Image` and `DepthImage` are one raster (`streamwire_msgs::Raster`), mapped once.
macro_rules! raster_ros_message {
    ($($message:ty),+) => {$(
        impl RosMessage for $message {
            const ROS_TYPE: &'static str = IMAGE;

            fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
                write_raster(w, self)
            }

            /// Reads an image of this message's encodings; the other kind is refused.
            fn read_cdr(r: &mut CdrReader) -> Result<$message, DecodeError> {
                read_raster(r)
            }
        }
    )+};
}

raster_ros_message!(Image, DepthImage);

// ---- sensor_msgs/msg/CompressedImage --------------------------------------------------

const COMPRESSED_IMAGE: &str = "sensor_msgs/msg/CompressedImage";

/// The size of a JPEG (read by the JPEG codec's header reader) or a PNG (its IHDR chunk).
fn encoded_size(data: &bytes::Bytes) -> Option<(u32, u32)> {
    const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if data.starts_with(PNG_SIGNATURE) {
        let be32 = |at: usize| Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?));
        return (data.get(12..16)? == b"IHDR").then_some((be32(16)?, be32(20)?));
    }
    if !data.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let jpeg = CompressedImage::from_jpeg(data.clone()).ok()?;
    Some((jpeg.original_width(), jpeg.original_height()))
}

impl RosMessage for CompressedImage {
    const ROS_TYPE: &'static str = COMPRESSED_IMAGE;

    /// Writes the header, the format string and the bytes; the original size is not a
    /// field of the ROS type (a JPEG or PNG carries its own).
    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_header(w, self.stamp(), self.frame_id())?;
        w.string(self.format(), "format")?;
        w.bytes(self.data(), "data")?;
        Ok(())
    }

    /// Reads a compressed image whose size its JPEG or PNG header gives (the original
    /// size of the streamwire message); other data (streamwire's own zstd) is refused.
    fn read_cdr(r: &mut CdrReader) -> Result<CompressedImage, DecodeError> {
        let (stamp, frame_id) = read_header(r, COMPRESSED_IMAGE)?;
        let format = r.string("format")?;
        let data = r.bytes("data")?;
        let Some((width, height)) = encoded_size(&data) else {
            return Err(DecodeError::Unmapped {
                ros_type: COMPRESSED_IMAGE,
                field: "data",
                value: format!("{} bytes of `{}`", data.len(), clip(&format)),
                rule: "a compressed image's size is read from its JPEG or PNG header; other data has none",
            });
        };
        let image = CompressedImage::new(format, data, width, height)
            .map_err(|e| DecodeError::invalid(COMPRESSED_IMAGE, e))?;
        Ok(image.with_stamp(stamp).with_frame_id(frame_id))
    }
}

// ---- sensor_msgs/msg/PointCloud2 ------------------------------------------------------

const POINT_CLOUD2: &str = "sensor_msgs/msg/PointCloud2";
/// The fewest CDR bytes of one `sensor_msgs/msg/PointField` (an empty name, aligned).
const MIN_POINT_FIELD_BYTES: usize = 13;

impl RosMessage for PointCloud {
    const ROS_TYPE: &'static str = POINT_CLOUD2;

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_header(w, self.stamp(), self.frame_id())?;
        w.u32(self.height());
        w.u32(self.width());
        w.sequence_len(self.fields().len(), "fields")?;
        for field in self.fields() {
            w.string(&field.name, "fields.name")?;
            w.u32(field.offset);
            w.u8(field.datatype.ros_id());
            w.u32(field.count);
        }
        w.bool(self.is_bigendian());
        w.u32(self.point_step());
        w.u32(self.row_step());
        w.bytes(self.data(), "data")?;
        w.bool(self.is_dense());
        Ok(())
    }

    fn read_cdr(r: &mut CdrReader) -> Result<PointCloud, DecodeError> {
        let (stamp, frame_id) = read_header(r, POINT_CLOUD2)?;
        let height = r.u32("height")?;
        let width = r.u32("width")?;
        let count = r.sequence_len(MIN_POINT_FIELD_BYTES, "fields")?;
        let mut fields = Vec::with_capacity(count);
        for _ in 0..count {
            let name = r.string("fields.name")?;
            let offset = r.u32("fields.offset")?;
            let id = r.u8("fields.datatype")?;
            let datatype = PointDatatype::from_ros_id(id).ok_or_else(|| DecodeError::Unmapped {
                ros_type: POINT_CLOUD2,
                field: "fields.datatype",
                value: id.to_string(),
                rule: "a point field's datatype is 1..=8 (INT8..FLOAT64)",
            })?;
            let values = r.u32("fields.count")?;
            fields.push(PointField::new(name.as_ref(), offset, datatype, values));
        }
        let is_bigendian = r.bool("is_bigendian")?;
        let point_step = r.u32("point_step")?;
        let row_step = r.u32("row_step")?;
        let data = r.bytes("data")?;
        let is_dense = r.bool("is_dense")?;
        let cloud = PointCloud::new(fields, width, height, point_step, row_step, data)
            .map_err(|e| DecodeError::invalid(POINT_CLOUD2, e))?;
        Ok(cloud
            .with_bigendian(is_bigendian)
            .with_dense(is_dense)
            .with_stamp(stamp)
            .with_frame_id(frame_id))
    }
}

// ---- geometry ---------------------------------------------------------------------------

fn write_vector3(w: &mut CdrWriter, v: &Vector3) {
    w.f64(v.x);
    w.f64(v.y);
    w.f64(v.z);
}

fn read_vector3(r: &mut CdrReader, what: &'static str) -> Result<Vector3, DecodeError> {
    Ok(Vector3::new(r.f64(what)?, r.f64(what)?, r.f64(what)?))
}

fn write_quaternion(w: &mut CdrWriter, q: &Quaternion) {
    w.f64(q.x);
    w.f64(q.y);
    w.f64(q.z);
    w.f64(q.w);
}

fn read_quaternion(r: &mut CdrReader, what: &'static str) -> Result<Quaternion, DecodeError> {
    Ok(Quaternion::new(
        r.f64(what)?,
        r.f64(what)?,
        r.f64(what)?,
        r.f64(what)?,
    ))
}

fn write_pose(w: &mut CdrWriter, pose: &Pose) {
    write_vector3(w, &pose.position);
    write_quaternion(w, &pose.orientation);
}

fn read_pose(r: &mut CdrReader, what: &'static str) -> Result<Pose, DecodeError> {
    Ok(Pose {
        position: read_vector3(r, what)?,
        orientation: read_quaternion(r, what)?,
    })
}

fn write_twist(w: &mut CdrWriter, twist: &Twist) {
    write_vector3(w, &twist.linear);
    write_vector3(w, &twist.angular);
}

fn read_twist(r: &mut CdrReader, what: &'static str) -> Result<Twist, DecodeError> {
    Ok(Twist {
        linear: read_vector3(r, what)?,
        angular: read_vector3(r, what)?,
    })
}

fn write_covariance(w: &mut CdrWriter, covariance: &[[f64; 6]; 6]) {
    for row in covariance {
        w.f64_array(row);
    }
}

fn read_covariance(r: &mut CdrReader, what: &'static str) -> Result<[[f64; 6]; 6], DecodeError> {
    let mut covariance = [[0.0; 6]; 6];
    for row in &mut covariance {
        *row = r.f64_array::<6>(what)?;
    }
    Ok(covariance)
}

impl RosMessage for Twist {
    const ROS_TYPE: &'static str = "geometry_msgs/msg/Twist";

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_twist(w, self);
        Ok(())
    }

    fn read_cdr(r: &mut CdrReader) -> Result<Twist, DecodeError> {
        read_twist(r, "twist")
    }
}

// ---- nav_msgs/msg/Odometry ------------------------------------------------------------

const ODOMETRY: &str = "nav_msgs/msg/Odometry";

impl RosMessage for Odometry {
    const ROS_TYPE: &'static str = ODOMETRY;

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_header(w, self.stamp(), self.frame_id())?;
        w.string(self.child_frame_id(), "child_frame_id")?;
        write_pose(w, self.pose());
        write_covariance(w, self.pose_covariance());
        write_twist(w, self.twist());
        write_covariance(w, self.twist_covariance());
        Ok(())
    }

    fn read_cdr(r: &mut CdrReader) -> Result<Odometry, DecodeError> {
        let (stamp, frame_id) = read_header(r, ODOMETRY)?;
        let child_frame_id = r.string("child_frame_id")?;
        let pose = read_pose(r, "pose.pose")?;
        let pose_covariance = read_covariance(r, "pose.covariance")?;
        let twist = read_twist(r, "twist.twist")?;
        let twist_covariance = read_covariance(r, "twist.covariance")?;
        let invalid = |e| DecodeError::invalid(ODOMETRY, e);
        Odometry::new(frame_id, child_frame_id, pose, twist)
            .map_err(invalid)?
            .with_stamp(stamp)
            .with_pose_covariance(pose_covariance)
            .map_err(invalid)?
            .with_twist_covariance(twist_covariance)
            .map_err(invalid)
    }
}

// ---- nav_msgs/msg/OccupancyGrid -------------------------------------------------------

const OCCUPANCY_GRID: &str = "nav_msgs/msg/OccupancyGrid";

impl RosMessage for OccupancyGrid {
    const ROS_TYPE: &'static str = OCCUPANCY_GRID;

    /// `info.map_load_time` is the stamp, `info.resolution` the nearest `float32`, and
    /// `info.origin` the grid's origin at z = 0 without rotation.
    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_header(w, self.stamp(), self.frame_id())?;
        write_time(w, self.stamp())?;
        w.f32(self.resolution() as f32);
        w.u32(self.width());
        w.u32(self.height());
        let (x, y) = self.origin();
        write_pose(
            w,
            &Pose {
                position: Vector3::new(x, y, 0.0),
                orientation: Quaternion::IDENTITY,
            },
        );
        let cells: Vec<u8> = self.cells().map(|c| c as u8).collect();
        w.bytes(&cells, "data")?;
        Ok(())
    }

    /// Refuses an origin off the z = 0 plane or rotated; `info.map_load_time` is not
    /// kept (the header's stamp is).
    fn read_cdr(r: &mut CdrReader) -> Result<OccupancyGrid, DecodeError> {
        let (stamp, frame_id) = read_header(r, OCCUPANCY_GRID)?;
        read_time(r, OCCUPANCY_GRID, "info.map_load_time")?;
        let resolution = f64::from(r.f32("info.resolution")?);
        let width = r.u32("info.width")?;
        let height = r.u32("info.height")?;
        let origin = read_pose(r, "info.origin")?;
        if origin.position.z != 0.0 || origin.orientation != Quaternion::IDENTITY {
            return Err(DecodeError::Unmapped {
                ros_type: OCCUPANCY_GRID,
                field: "info.origin",
                value: format!("{:?}", origin),
                rule: "a grid's origin is at z = 0 with no rotation",
            });
        }
        let data = r.bytes("data")?;
        let cells: Vec<i8> = data.iter().map(|&b| b as i8).collect();
        let grid = OccupancyGrid::new(
            frame_id,
            resolution,
            (origin.position.x, origin.position.y),
            width,
            height,
            cells,
        )
        .map_err(|e| DecodeError::invalid(OCCUPANCY_GRID, e))?;
        Ok(grid.with_stamp(stamp))
    }
}

// ---- vision_msgs/msg/Detection2DArray -------------------------------------------------

const DETECTION_2D_ARRAY: &str = "vision_msgs/msg/Detection2DArray";
/// The fewest CDR bytes of one `vision_msgs/msg/Detection2D` (empty strings and lists).
const MIN_DETECTION_BYTES: usize = 64;
/// The fewest CDR bytes of one `vision_msgs/msg/ObjectHypothesisWithPose`.
const MIN_HYPOTHESIS_BYTES: usize = 64;

impl RosMessage for Detections {
    const ROS_TYPE: &'static str = DETECTION_2D_ARRAY;

    /// Each box is a `Detection2D` with the array's header, one hypothesis (the label as
    /// `class_id`, the score; an identity pose with zero covariance), an unrotated box
    /// centred on the box's centre, and an empty `id`.
    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_header(w, self.stamp, &self.frame_id)?;
        w.sequence_len(self.boxes.len(), "detections")?;
        for b in &self.boxes {
            write_header(w, self.stamp, &self.frame_id)?;
            w.sequence_len(1, "results")?;
            w.string(b.label(), "results.hypothesis.class_id")?;
            w.f64(f64::from(b.score()));
            write_pose(w, &Pose::default());
            write_covariance(w, &[[0.0; 6]; 6]);
            let (width, height) = (f64::from(b.width()), f64::from(b.height()));
            w.f64(f64::from(b.x()) + width / 2.0);
            w.f64(f64::from(b.y()) + height / 2.0);
            w.f64(0.0);
            w.f64(width);
            w.f64(height);
            w.string("", "id")?;
        }
        Ok(())
    }

    /// Each detection becomes a box labelled with its highest-scoring hypothesis (the
    /// first of equals; an empty label and score 0 when it has none); the other
    /// hypotheses, their poses, the detection's own header and `id` are not kept, and a
    /// rotated box (`theta` not 0) is refused.
    fn read_cdr(r: &mut CdrReader) -> Result<Detections, DecodeError> {
        let (stamp, frame_id) = read_header(r, DETECTION_2D_ARRAY)?;
        let count = r.sequence_len(MIN_DETECTION_BYTES, "detections")?;
        let mut boxes = Vec::with_capacity(count);
        for _ in 0..count {
            read_header(r, DETECTION_2D_ARRAY)?;
            let results = r.sequence_len(MIN_HYPOTHESIS_BYTES, "results")?;
            let mut best: Option<(Arc<str>, f64)> = None;
            for _ in 0..results {
                let class_id = r.string("results.hypothesis.class_id")?;
                let score = r.f64("results.hypothesis.score")?;
                read_pose(r, "results.pose.pose")?;
                read_covariance(r, "results.pose.covariance")?;
                if best.as_ref().is_none_or(|(_, s)| score > *s) {
                    best = Some((class_id, score));
                }
            }
            let (cx, cy) = (r.f64("bbox.center")?, r.f64("bbox.center")?);
            let theta = r.f64("bbox.center.theta")?;
            let (width, height) = (r.f64("bbox.size_x")?, r.f64("bbox.size_y")?);
            r.string("id")?;
            if theta != 0.0 {
                return Err(DecodeError::Unmapped {
                    ros_type: DETECTION_2D_ARRAY,
                    field: "detections.bbox.center.theta",
                    value: theta.to_string(),
                    rule: "a detection box is axis-aligned",
                });
            }
            let (label, score) = best.unwrap_or_else(|| (Arc::from(""), 0.0));
            let detection = DetectionBox::new(
                (cx - width / 2.0) as f32,
                (cy - height / 2.0) as f32,
                width as f32,
                height as f32,
                label,
                score as f32,
            )
            .map_err(|e| DecodeError::invalid(DETECTION_2D_ARRAY, e))?;
            boxes.push(detection);
        }
        Ok(Detections {
            stamp,
            frame_id,
            boxes,
        })
    }
}

// ---- tf2_msgs/msg/TFMessage -----------------------------------------------------------

const TF_MESSAGE: &str = "tf2_msgs/msg/TFMessage";
/// The fewest CDR bytes of one `geometry_msgs/msg/TransformStamped`.
const MIN_TRANSFORM_BYTES: usize = 72;

impl RosMessage for Transforms {
    const ROS_TYPE: &'static str = TF_MESSAGE;

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        w.sequence_len(self.transforms().len(), "transforms")?;
        for t in self.transforms() {
            write_header(w, t.stamp, &t.parent_frame_id)?;
            w.string(&t.child_frame_id, "transforms.child_frame_id")?;
            write_vector3(w, &t.translation);
            write_quaternion(w, &t.rotation);
        }
        Ok(())
    }

    fn read_cdr(r: &mut CdrReader) -> Result<Transforms, DecodeError> {
        let count = r.sequence_len(MIN_TRANSFORM_BYTES, "transforms")?;
        let mut transforms = Vec::with_capacity(count);
        for _ in 0..count {
            let (stamp, parent_frame_id) = read_header(r, TF_MESSAGE)?;
            transforms.push(TransformStamped {
                stamp,
                parent_frame_id,
                child_frame_id: r.string("transforms.child_frame_id")?,
                translation: read_vector3(r, "transforms.transform.translation")?,
                rotation: read_quaternion(r, "transforms.transform.rotation")?,
            });
        }
        Transforms::new(transforms).map_err(|e| DecodeError::invalid(TF_MESSAGE, e))
    }
}

// ---- rcl_interfaces/msg/Log -----------------------------------------------------------

const LOG: &str = "rcl_interfaces/msg/Log";

impl RosMessage for LogRecord {
    const ROS_TYPE: &'static str = LOG;

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_time(w, self.stamp)?;
        w.u8(self.level.ros_level());
        w.string(&self.name, "name")?;
        w.string(&self.msg, "msg")?;
        w.string(&self.file, "file")?;
        w.string(&self.function, "function")?;
        w.u32(self.line);
        Ok(())
    }

    /// Refuses a level other than ROS 2's five (10, 20, 30, 40, 50).
    fn read_cdr(r: &mut CdrReader) -> Result<LogRecord, DecodeError> {
        let stamp = read_time(r, LOG, "stamp")?;
        let level = r.u8("level")?;
        let level = LogLevel::from_ros_level(level).ok_or_else(|| DecodeError::Unmapped {
            ros_type: LOG,
            field: "level",
            value: level.to_string(),
            rule: "a log level is DEBUG (10), INFO (20), WARN (30), ERROR (40) or FATAL (50)",
        })?;
        Ok(LogRecord {
            stamp,
            level,
            name: r.string("name")?,
            msg: r.string("msg")?,
            file: r.string("file")?,
            function: r.string("function")?,
            line: r.u32("line")?,
        })
    }
}
