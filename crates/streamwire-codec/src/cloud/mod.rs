//! Point-cloud engines: [`cloudini`] (lossy at a declared resolution per field, then zstd)
//! and [`fields`] (lossless zstd of the points, plain or with each field's bytes shuffled into
//! planes first).
//!
//! Both work on packed points (`width * height` points of `point_step` bytes, no row padding)
//! described by a [`CloudLayout`], whose fields carry the `sensor_msgs/PointField` datatype
//! constants (`INT8 = 1` .. `FLOAT64 = 8`).
//!
//! # Limits, and why
//!
//! A decoder reads bytes that came over a network, and a cloudini stream's text header says
//! how many points follow. The crate's own decoder allocates `width * height * point_step`
//! bytes from that header before it reads one chunk, and its field decoders index and add
//! without checks (a hostile varint overflows, an empty chunk is read past its end). So
//! [`cloudini::decode`] reads the header with the crate's parser only after checking the
//! magic and version itself, then refuses, before allocating anything sized by the header:
//! more points than [`CloudLimits::max_points`] or bytes than [`CloudLimits::max_bytes`],
//! a field outside the point, a resolution of 0, negative, infinite or NaN, chunk framing that
//! does not account for every point, and a zstd chunk whose recorded content size cannot hold
//! its points; it then decodes with field decoders of its own (the crate's, with every read
//! bounded and every sum wrapping as the C++ reference's), refusing a truncated chunk.

pub mod cloudini;
pub mod fields;

/// One field of a point: `name` at byte `offset`, of a `sensor_msgs/PointField` datatype.
#[derive(Clone, Debug, PartialEq)]
pub struct CloudField {
    /// Field name, e.g. `x`.
    pub name: String,
    /// Byte offset within a point.
    pub offset: u32,
    /// `sensor_msgs/PointField` datatype: `INT8 = 1` .. `FLOAT64 = 8`.
    pub datatype: u8,
    /// The quantization step of a float field (cloudini only); `None` keeps it exact.
    pub resolution: Option<f32>,
}

impl CloudField {
    /// Bytes of one value of this field's datatype (0 for an unknown datatype).
    pub fn size(&self) -> u32 {
        match self.datatype {
            1 | 2 => 1,
            3 | 4 => 2,
            5..=7 => 4,
            8 => 8,
            _ => 0,
        }
    }

    /// Whether the datatype is FLOAT32 or FLOAT64.
    pub fn is_float(&self) -> bool {
        matches!(self.datatype, 7 | 8)
    }
}

/// The shape of packed points: `width * height` points of `point_step` bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct CloudLayout {
    /// Points per row.
    pub width: u32,
    /// Rows (1 for an unorganized cloud).
    pub height: u32,
    /// Bytes per point.
    pub point_step: u32,
    /// The fields, in the order of the message.
    pub fields: Vec<CloudField>,
}

impl CloudLayout {
    /// `width * height`, in u64 (cannot overflow).
    pub fn points(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Checks the fields against the point and the resolutions, and the point count and
    /// size against `limits`; returns the packed length.
    pub fn check(&self, limits: &CloudLimits) -> Result<usize, CloudError> {
        let points = self.points();
        if points > limits.max_points {
            return Err(CloudError::TooManyPoints {
                declared: points,
                limit: limits.max_points,
            });
        }
        if self.point_step == 0 && points > 0 {
            return Err(CloudError::Layout("point step is 0".to_owned()));
        }
        let bytes = points.saturating_mul(u64::from(self.point_step));
        let len = usize::try_from(bytes)
            .ok()
            .filter(|&len| len <= limits.max_bytes)
            .ok_or(CloudError::TooLarge {
                bytes,
                limit: limits.max_bytes,
            })?;
        for field in &self.fields {
            self.check_field(field)?;
        }
        Ok(len)
    }

    fn check_field(&self, field: &CloudField) -> Result<(), CloudError> {
        if field.size() == 0 {
            return Err(CloudError::Layout(format!(
                "field `{}` has datatype {}, not one of sensor_msgs/PointField's 1..=8",
                field.name, field.datatype
            )));
        }
        if u64::from(field.offset) + u64::from(field.size()) > u64::from(self.point_step) {
            return Err(CloudError::Layout(format!(
                "field `{}` at offset {} ends past the point step {}",
                field.name, field.offset, self.point_step
            )));
        }
        if let Some(resolution) = field.resolution {
            if !(resolution.is_finite() && resolution > 0.0) {
                return Err(CloudError::BadResolution {
                    field: field.name.clone(),
                    resolution,
                });
            }
            if !field.is_float() {
                return Err(CloudError::Layout(format!(
                    "field `{}` is an integer field: it has no resolution, it stays exact",
                    field.name
                )));
            }
        }
        Ok(())
    }
}

/// What a decoder accepts: a header declaring more is refused before anything is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloudLimits {
    /// Points (`width * height`).
    pub max_points: u64,
    /// Bytes of packed points (`width * height * point_step`).
    pub max_bytes: usize,
}

impl CloudLimits {
    /// The largest cloud a stream takes unless it declares another maximum: 4,194,304 points
    /// (a 128-beam lidar at 2048 columns, 16 times over) and 256 MiB, the image codecs' limit.
    pub const DEFAULT: CloudLimits = CloudLimits {
        max_points: 1 << 22,
        max_bytes: 256 << 20,
    };
}

impl Default for CloudLimits {
    fn default() -> Self {
        CloudLimits::DEFAULT
    }
}

/// Why a cloud could not be encoded or a stream decoded, by kind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloudError {
    /// The stream does not start with a cloudini header this decoder reads.
    #[error("not a cloudini stream: {0}")]
    NotCloudini(String),
    /// The header's text is malformed.
    #[error("the cloudini header is malformed: {0}")]
    Header(String),
    /// The header declares more points than the decoder's limit.
    #[error("the header declares {declared} points, over the limit of {limit}")]
    TooManyPoints {
        /// `width * height`.
        declared: u64,
        /// [`CloudLimits::max_points`].
        limit: u64,
    },
    /// The points would take more bytes than the decoder's limit.
    #[error("the points take {bytes} bytes, over the limit of {limit}")]
    TooLarge {
        /// `width * height * point_step`.
        bytes: u64,
        /// [`CloudLimits::max_bytes`].
        limit: usize,
    },
    /// The header declares more points than its bytes can hold.
    #[error("the header declares {declared} points, more than its {bytes} bytes can hold")]
    PointsExceedData {
        /// Points declared (by the header, or for one chunk).
        declared: u64,
        /// Bytes there are for them.
        bytes: u64,
    },
    /// A resolution of 0, negative, infinite or NaN.
    #[error("field `{field}` has resolution {resolution}: it must be finite and over 0")]
    BadResolution {
        /// The field.
        field: String,
        /// The resolution found.
        resolution: f32,
    },
    /// The fields do not fit the point.
    #[error("the point layout is invalid: {0}")]
    Layout(String),
    /// The stream ends (or a chunk ends) before every point is read.
    #[error("the stream is truncated: {0}")]
    Truncated(String),
    /// A value cannot be quantized at its field's resolution.
    #[error(
        "field `{field}` holds {value}, which resolution {resolution} cannot represent \
         (|value| / resolution must stay under 2^30, and infinities have no step)"
    )]
    OutOfRange {
        /// The field.
        field: String,
        /// The value.
        value: f64,
        /// The field's resolution.
        resolution: f32,
    },
    /// The data does not match the layout (not a whole number of points, wrong length).
    #[error("the data holds {actual} bytes, the layout needs {expected}")]
    WrongLength {
        /// What the layout implies.
        expected: usize,
        /// What was given.
        actual: usize,
    },
    /// zstd failed.
    #[error("zstd failed")]
    Zstd(#[source] std::io::Error),
    /// The lossless engine refused (a frame of another size than the header's, a truncated
    /// or corrupt frame).
    #[error("the lossless zstd frame is unusable")]
    Lossless(#[source] crate::lossless::LosslessError),
    /// The cloudini crate refused to encode.
    #[error("the cloudini encoder failed")]
    Encoder(#[source] ::cloudini::Error),
}
