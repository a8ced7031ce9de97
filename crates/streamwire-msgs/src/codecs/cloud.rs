//! The codecs of [`PointCloud`]: [`Cloudini`] (lossy at a declared resolution per field, the
//! default of `Compressed<PointCloud>`) and [`CloudZstd`] (lossless), both into a
//! [`CompressedPointCloud`] in point_cloud_transport's formats.

use std::sync::Arc;

use bytes::Bytes;
use streamwire_codec::cloud::{self, CloudError, CloudField, CloudLayout, CloudLimits};
use streamwire_codec::lossless;
use streamwire_core::{Codec, CodecError, CodecParams, DefaultCodec, Fidelity};

use super::cloud_cdr;
use super::{DataError, decode_error, encode_error};
use crate::{CompressedPointCloud, PointCloud, PointDatatype};

/// The format strings: point_cloud_transport's plugins' names, and one of streamwire's own.
pub mod format {
    /// cloudini's stream (the `cloudini` plugin's format).
    pub const CLOUDINI: &str = "cloudini";
    /// zstd of the serialized `sensor_msgs/msg/PointCloud2` (the `zstd` plugin's format).
    pub const ZSTD: &str = "zstd";
    /// streamwire's own: zstd of the packed points byte-shuffled into planes.
    pub const ZSTD_SHUFFLED: &str = "zstd-shuffled";
}

/// The most bytes a serialized PointCloud2 takes besides its points (header, fields).
const SERIALIZED_HEADER_LIMIT: usize = 1 << 20;

/// The most points a cloud codec decodes unless its `max_points` says otherwise.
const DEFAULT_MAX_POINTS: u64 = CloudLimits::DEFAULT.max_points;

/// cloudini for point clouds: every float field named `x`, `y` or `z` quantized at
/// `resolution` (default 1 mm), other float fields exact unless `field_resolutions` names
/// them, integer fields exact; then zstd. Decoded values are within `resolution / 2 + 2^-21
/// |v|` of the originals ([`streamwire_codec::cloud::cloudini::error_bound`]), NaN points stay
/// NaN, packed `rgb` floats are kept bit for bit. The default codec of
/// `Compressed<PointCloud>`; its format string `cloudini` is the one point_cloud_transport's
/// cloudini plugin reads.
///
/// Parameters: `resolution` (metres, > 0, default `0.001`), `field_resolutions` (`none`, or
/// `name:step` pairs separated by spaces, e.g. `intensity:0.5 normal_x:0.001`),
/// `max_points` (the most points a decoder accepts, default 4194304: a header declaring more
/// is refused before anything is allocated).
#[derive(Clone, Debug, PartialEq)]
pub struct Cloudini {
    /// The step of `x`, `y` and `z`, in metres.
    pub resolution: f32,
    /// Steps of other float fields, by name.
    pub field_resolutions: Vec<(String, f32)>,
    /// The most points the decoder accepts.
    pub max_points: u64,
}

impl Default for Cloudini {
    fn default() -> Self {
        Cloudini {
            resolution: 0.001,
            field_resolutions: Vec::new(),
            max_points: DEFAULT_MAX_POINTS,
        }
    }
}

fn invalid(key: &str, value: impl ToString, reason: impl Into<String>) -> CodecError {
    CodecError::InvalidParam {
        key: key.to_owned(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn resolution(key: &str, text: &str) -> Result<f32, CodecError> {
    match text.trim().parse::<f32>() {
        Ok(step) if step.is_finite() && step > 0.0 => Ok(step),
        _ => Err(invalid(
            key,
            text,
            "a resolution is a finite number over 0 (metres for x, y, z)",
        )),
    }
}

fn max_points(params: &CodecParams) -> Result<u64, CodecError> {
    match params.parse::<u64>("max_points")? {
        Some(0) => Err(invalid(
            "max_points",
            0,
            "a cloud codec accepts at least 1 point",
        )),
        Some(n) => Ok(n),
        None => Ok(DEFAULT_MAX_POINTS),
    }
}

impl Cloudini {
    /// Builds the codec from text parameters (see the type's docs for the keys).
    pub fn from_params(params: &CodecParams) -> Result<Cloudini, CodecError> {
        params.expect_only(
            "cloudini",
            &["resolution", "field_resolutions", "max_points"],
        )?;
        let mut codec = Cloudini {
            max_points: max_points(params)?,
            ..Cloudini::default()
        };
        if let Some(text) = params.get("resolution") {
            codec.resolution = resolution("resolution", text)?;
        }
        match params.get("field_resolutions").map(str::trim) {
            None | Some("none" | "") => {}
            Some(text) => {
                for pair in text.split_whitespace() {
                    let (name, step) = pair.split_once(':').ok_or_else(|| {
                        invalid(
                            "field_resolutions",
                            text,
                            "write `name:step` pairs, e.g. `intensity:0.5`",
                        )
                    })?;
                    let step = resolution("field_resolutions", step)?;
                    codec.field_resolutions.push((name.to_owned(), step));
                }
            }
        }
        Ok(codec)
    }

    /// Every parameter, defaults included.
    pub fn params(&self) -> CodecParams {
        let fields = if self.field_resolutions.is_empty() {
            "none".to_owned()
        } else {
            let pairs: Vec<String> = self
                .field_resolutions
                .iter()
                .map(|(name, step)| format!("{name}:{step}"))
                .collect();
            pairs.join(" ")
        };
        CodecParams::new()
            .with("resolution", self.resolution)
            .with("field_resolutions", fields)
            .with("max_points", self.max_points)
    }

    /// The resolution of a field of `cloud`, `None` for an exact one.
    fn field_resolution(&self, name: &str, datatype: PointDatatype) -> Option<f32> {
        if !matches!(datatype, PointDatatype::Float32 | PointDatatype::Float64) {
            return None;
        }
        if let Some((_, step)) = self.field_resolutions.iter().find(|(n, _)| n == name) {
            return Some(*step);
        }
        matches!(name, "x" | "y" | "z").then_some(self.resolution)
    }
}

/// The engine's view of `cloud`'s points, each field with `resolution_of` it.
fn layout(
    cloud: &PointCloud,
    resolution_of: impl Fn(&str, PointDatatype) -> Option<f32>,
) -> Result<CloudLayout, CodecError> {
    if cloud.is_bigendian() {
        return Err(CodecError::Unsupported(
            "big-endian point clouds: the cloud codecs read little-endian values".to_owned(),
        ));
    }
    let mut fields = Vec::with_capacity(cloud.fields().len());
    for field in cloud.fields() {
        if field.count != 1 {
            return Err(CodecError::Unsupported(format!(
                "field `{}` holds {} values: cloudini carries one value per field (its header \
                 and the ROS plugin's check name each field once); use the lossless `zstd`",
                field.name, field.count
            )));
        }
        fields.push(CloudField {
            name: field.name.clone(),
            offset: field.offset,
            datatype: field.datatype.ros_id(),
            resolution: resolution_of(&field.name, field.datatype),
        });
    }
    Ok(CloudLayout {
        width: cloud.width(),
        height: cloud.height(),
        point_step: cloud.point_step(),
        fields,
    })
}

/// The cloud's points without row padding: its data itself when rows are packed.
fn packed_points(cloud: &PointCloud) -> Bytes {
    let row = cloud.width() as usize * cloud.point_step() as usize;
    if cloud.row_step() as usize == row {
        return cloud.data().clone();
    }
    let mut packed = Vec::with_capacity(row * cloud.height() as usize);
    for chunk in cloud.data().chunks(cloud.row_step() as usize) {
        packed.extend_from_slice(&chunk[..row]);
    }
    Bytes::from(packed)
}

/// The encoded message, shaped as the cloud with packed rows.
fn compressed(cloud: &PointCloud, format: &str, data: Vec<u8>) -> CompressedPointCloud {
    CompressedPointCloud {
        fields: cloud.fields().into(),
        width: cloud.width(),
        height: cloud.height(),
        point_step: cloud.point_step(),
        row_step: cloud.width().saturating_mul(cloud.point_step()),
        is_bigendian: false,
        is_dense: cloud.is_dense(),
        format: Arc::from(format),
        compressed_data: Bytes::from(data),
        stamp: cloud.stamp(),
        frame_id: Arc::from(cloud.frame_id()),
    }
}

/// The decoded cloud of `message`'s shape over packed `points`.
fn decoded(message: &CompressedPointCloud, points: Bytes) -> Result<PointCloud, CodecError> {
    let row_step = message.width.saturating_mul(message.point_step);
    let cloud = PointCloud::new(
        message.fields.clone(),
        message.width,
        message.height,
        message.point_step,
        row_step,
        points,
    )
    .map_err(decode_error)?;
    Ok(cloud
        .with_dense(message.is_dense)
        .with_stamp(message.stamp)
        .with_frame_id(message.frame_id_shared()))
}

fn wrong_format(codec: &'static str, message: &CompressedPointCloud) -> CodecError {
    decode_error(DataError::WrongFormat {
        codec,
        message: "PointCloud",
        format: crate::layout::clip(message.format()),
    })
}

fn limits(max_points: u64) -> CloudLimits {
    CloudLimits {
        max_points,
        ..CloudLimits::DEFAULT
    }
}

impl Codec<PointCloud> for Cloudini {
    const NAME: &'static str = "cloudini";
    type Encoded = CompressedPointCloud;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        Cloudini::from_params(params)
    }

    fn params(&self) -> CodecParams {
        Cloudini::params(self)
    }

    fn fidelity(&self) -> Fidelity {
        Fidelity {
            lossy: true,
            downscaled: false,
        }
    }

    fn encode(&self, cloud: &PointCloud) -> Result<CompressedPointCloud, CodecError> {
        let layout = layout(cloud, |name, datatype| {
            self.field_resolution(name, datatype)
        })?;
        let data = cloud::cloudini::encode(&layout, &packed_points(cloud)).map_err(encode_error)?;
        Ok(compressed(cloud, format::CLOUDINI, data))
    }

    fn decode(&self, message: &CompressedPointCloud) -> Result<PointCloud, CodecError> {
        if message.format() != format::CLOUDINI {
            return Err(wrong_format("cloudini", message));
        }
        let limits = limits(self.max_points);
        let (header, _) = cloud::cloudini::read_header(message.compressed_data(), &limits)
            .map_err(decode_error)?;
        check_shape(message, &header)?;
        let (_, points) =
            cloud::cloudini::decode(message.compressed_data(), &limits).map_err(decode_error)?;
        decoded(message, Bytes::from(points))
    }
}

/// The message's shape must be the header's, as the ROS plugin requires.
fn check_shape(message: &CompressedPointCloud, header: &CloudLayout) -> Result<(), CodecError> {
    let same_fields = message.fields.len() == header.fields.len()
        && message.fields.iter().zip(&header.fields).all(|(m, h)| {
            m.name == h.name
                && m.offset == h.offset
                && m.datatype.ros_id() == h.datatype
                && m.count == 1
        });
    if message.width != header.width
        || message.height != header.height
        || message.point_step != header.point_step
        || !same_fields
    {
        return Err(decode_error(CloudError::Layout(format!(
            "the message declares {}x{} points of {} bytes and its fields, the stream's header \
             {}x{} of {} and its own",
            message.width,
            message.height,
            message.point_step,
            header.width,
            header.height,
            header.point_step
        ))));
    }
    Ok(())
}

/// Lossless zstd for point clouds. By default the format point_cloud_transport's `zstd`
/// plugin reads (`zstd`: one zstd frame of the serialized `sensor_msgs/msg/PointCloud2`);
/// with `shuffle=true`, streamwire's own `zstd-shuffled` (the packed points byte-shuffled
/// into planes, then zstd), which no ROS plugin reads.
///
/// Parameters: `level` (1..=19, default 3), `shuffle` (`false` default), `max_points` (as
/// [`Cloudini`]'s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudZstd {
    /// zstd level, 1..=19.
    pub level: i32,
    /// Byte-shuffle the points first (`zstd-shuffled`).
    pub shuffle: bool,
    /// The most points the decoder accepts.
    pub max_points: u64,
}

impl Default for CloudZstd {
    fn default() -> Self {
        CloudZstd {
            level: 3,
            shuffle: false,
            max_points: DEFAULT_MAX_POINTS,
        }
    }
}

impl CloudZstd {
    /// Builds the codec from text parameters.
    pub fn from_params(params: &CodecParams) -> Result<CloudZstd, CodecError> {
        params.expect_only("zstd", &["level", "shuffle", "max_points"])?;
        let mut codec = CloudZstd {
            max_points: max_points(params)?,
            ..CloudZstd::default()
        };
        if let Some(level) = params.parse::<i32>("level")? {
            if !(1..=19).contains(&level) {
                return Err(invalid(
                    "level",
                    level,
                    "zstd levels go from 1 (fastest) to 19 (smallest)",
                ));
            }
            codec.level = level;
        }
        if let Some(shuffle) = params.parse::<bool>("shuffle")? {
            codec.shuffle = shuffle;
        }
        Ok(codec)
    }

    /// Every parameter, defaults included.
    pub fn params(&self) -> CodecParams {
        CodecParams::new()
            .with("level", self.level)
            .with("shuffle", self.shuffle)
            .with("max_points", self.max_points)
    }

    /// The packed points' length `message` declares, within the limits.
    fn declared_len(&self, message: &CompressedPointCloud) -> Result<usize, CodecError> {
        let layout = CloudLayout {
            width: message.width,
            height: message.height,
            point_step: message.point_step,
            fields: Vec::new(),
        };
        layout.check(&limits(self.max_points)).map_err(decode_error)
    }

    fn encode_serialized(&self, cloud: &PointCloud) -> Result<Vec<u8>, CodecError> {
        let (prefix, suffix) = cloud_cdr::frame(cloud);
        let total = prefix.len() + cloud.data().len() + suffix.len();
        let parts = [&prefix[..], &cloud.data()[..], &suffix[..]];
        lossless::compress_rows(parts.into_iter(), total, self.level).map_err(encode_error)
    }

    fn decode_serialized(&self, message: &CompressedPointCloud) -> Result<PointCloud, CodecError> {
        // The serialized message is the points (rows as the publisher had them, padding
        // included) after a header of fields and frame id: bound its size before
        // decompressing, by the points the message declares and the limit on bytes.
        let packed = self.declared_len(message)?;
        let declared = cloud::fields::frame_content_size(message.compressed_data())
            .ok_or_else(|| decode_error(lossless::LosslessError::ContentSizeMissing))?;
        if declared < packed as u64 {
            return Err(decode_error(CloudError::PointsExceedData {
                declared: u64::from(message.width) * u64::from(message.height),
                bytes: declared,
            }));
        }
        let limit = CloudLimits::DEFAULT.max_bytes + SERIALIZED_HEADER_LIMIT;
        if declared > limit as u64 {
            return Err(decode_error(CloudError::TooLarge {
                bytes: declared,
                limit,
            }));
        }
        let bytes = lossless::decompress_exact(message.compressed_data(), declared as usize)
            .map_err(decode_error)?;
        let parsed = cloud_cdr::parse(Bytes::from(bytes)).map_err(decode_error)?;
        if (parsed.width, parsed.height, parsed.point_step)
            != (message.width, message.height, message.point_step)
        {
            return Err(decode_error(CloudError::Layout(
                "the serialized PointCloud2's shape differs from the message's".to_owned(),
            )));
        }
        let cloud = PointCloud::new(
            parsed.fields,
            parsed.width,
            parsed.height,
            parsed.point_step,
            parsed.row_step,
            parsed.data,
        )
        .map_err(decode_error)?;
        Ok(cloud
            .with_bigendian(parsed.is_bigendian)
            .with_dense(parsed.is_dense)
            .with_stamp(parsed.stamp)
            .with_frame_id(parsed.frame_id))
    }
}

impl Codec<PointCloud> for CloudZstd {
    const NAME: &'static str = "zstd";
    type Encoded = CompressedPointCloud;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        CloudZstd::from_params(params)
    }

    fn params(&self) -> CodecParams {
        CloudZstd::params(self)
    }

    fn fidelity(&self) -> Fidelity {
        Fidelity::LOSSLESS
    }

    fn encode(&self, cloud: &PointCloud) -> Result<CompressedPointCloud, CodecError> {
        if !self.shuffle {
            let data = self.encode_serialized(cloud)?;
            let mut message = compressed(cloud, format::ZSTD, data);
            // The serialized message keeps the publisher's rows.
            message.row_step = cloud.row_step();
            message.is_bigendian = cloud.is_bigendian();
            return Ok(message);
        }
        if cloud.is_bigendian() {
            return Err(CodecError::Unsupported(
                "big-endian point clouds through `zstd-shuffled`: use `shuffle=false`".to_owned(),
            ));
        }
        let step = cloud.point_step() as usize;
        let data = cloud::fields::compress(
            &packed_points(cloud),
            step,
            cloud::fields::Layout::Shuffled,
            self.level,
        )
        .map_err(encode_error)?;
        Ok(compressed(cloud, format::ZSTD_SHUFFLED, data))
    }

    fn decode(&self, message: &CompressedPointCloud) -> Result<PointCloud, CodecError> {
        match message.format() {
            format::ZSTD => self.decode_serialized(message),
            format::ZSTD_SHUFFLED => {
                let len = self.declared_len(message)?;
                let step = message.point_step as usize;
                let points = cloud::fields::decompress(
                    message.compressed_data(),
                    len,
                    step,
                    cloud::fields::Layout::Shuffled,
                )
                .map_err(decode_error)?;
                decoded(message, Bytes::from(points))
            }
            _ => Err(wrong_format("zstd", message)),
        }
    }
}

impl DefaultCodec for PointCloud {
    type Codec = Cloudini;
}

// Known by name to settings given as text (`codec=cloudini`, `codec=zstd`).
streamwire_core::register_codec!(PointCloud, Cloudini);
streamwire_core::register_codec!(PointCloud, CloudZstd);
