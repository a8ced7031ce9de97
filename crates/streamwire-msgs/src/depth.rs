//! Depth images.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

use crate::layout::{self, Layout, LayoutError, ParseEncodingError};

/// Pixel layout of a [`DepthImage`] (the ROS names `16UC1` and `32FC1`). Values are
/// little-endian.
///
/// ```
/// # use streamwire_msgs::DepthEncoding;
/// assert_eq!("32FC1".parse::<DepthEncoding>()?, DepthEncoding::M32F);
/// assert_eq!(DepthEncoding::Mm16.to_string(), "16UC1");
/// # Ok::<(), streamwire_msgs::ParseEncodingError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DepthEncoding {
    /// 16-bit unsigned depth in millimetres; 0 means no measurement.
    #[serde(rename = "16UC1")]
    Mm16,
    /// 32-bit float depth in metres; NaN means no measurement.
    #[serde(rename = "32FC1")]
    M32F,
}

impl DepthEncoding {
    /// Both encodings.
    pub const ALL: [DepthEncoding; 2] = [DepthEncoding::Mm16, DepthEncoding::M32F];

    /// The ROS name: `16UC1` or `32FC1`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DepthEncoding::Mm16 => "16UC1",
            DepthEncoding::M32F => "32FC1",
        }
    }

    /// Bytes per pixel: 2 or 4.
    pub const fn bytes_per_pixel(self) -> u32 {
        match self {
            DepthEncoding::Mm16 => 2,
            DepthEncoding::M32F => 4,
        }
    }
}

impl fmt::Display for DepthEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DepthEncoding {
    type Err = ParseEncodingError;

    fn from_str(name: &str) -> Result<Self, ParseEncodingError> {
        DepthEncoding::ALL
            .into_iter()
            .find(|e| e.as_str() == name)
            .ok_or_else(|| ParseEncodingError {
                kind: "depth",
                name: layout::clip(name),
                expected: "16UC1, 32FC1",
            })
    }
}

/// A depth image: `16UC1` (millimetres, 0 = none) or `32FC1` (metres, NaN = none),
/// little-endian, rows `step` bytes apart as in [`Image`](crate::Image).
///
/// ```
/// use streamwire::msgs::DepthImage;
///
/// let depth = DepthImage::from_mm(3, 1, &[0, 1500, 65535])?.with_frame_id("depth_optical");
/// assert_eq!(depth.depth_mm(1, 0), Some(1500));
/// assert_eq!(depth.depth_m(1, 0), Some(1.5));
/// assert_eq!(depth.depth_m(0, 0), None); // 0 = no measurement
/// assert_eq!(depth.depth_m(3, 0), None); // outside the image
/// # Ok::<(), streamwire_msgs::LayoutError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/DepthImage", kind = sensor, crate = streamwire_core)]
#[serde(try_from = "DepthImageRepr")]
pub struct DepthImage {
    width: u32,
    height: u32,
    encoding: DepthEncoding,
    step: u32,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

/// The unchecked wire form of a [`DepthImage`].
#[derive(Deserialize)]
struct DepthImageRepr {
    width: u32,
    height: u32,
    encoding: DepthEncoding,
    step: u32,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

impl TryFrom<DepthImageRepr> for DepthImage {
    type Error = LayoutError;

    fn try_from(repr: DepthImageRepr) -> Result<DepthImage, LayoutError> {
        Ok(
            DepthImage::new(repr.width, repr.height, repr.encoding, repr.step, repr.data)?
                .with_stamp(repr.stamp)
                .with_frame_id(repr.frame_id),
        )
    }
}

impl DepthImage {
    /// A depth image of `width x height` pixels, rows `step` bytes apart, values
    /// little-endian. Same rules as [`Image::new`](crate::Image::new).
    pub fn new(
        width: u32,
        height: u32,
        encoding: DepthEncoding,
        step: u32,
        data: impl Into<Bytes>,
    ) -> Result<DepthImage, LayoutError> {
        let data = data.into();
        Layout::check(width, height, encoding.bytes_per_pixel(), step, data.len())?;
        Ok(DepthImage {
            width,
            height,
            encoding,
            step,
            data,
            stamp: Timestamp::ZERO,
            frame_id: Arc::from(""),
        })
    }

    /// A depth image whose rows have no padding.
    pub fn from_packed(
        width: u32,
        height: u32,
        encoding: DepthEncoding,
        data: impl Into<Bytes>,
    ) -> Result<DepthImage, LayoutError> {
        let step = Layout::packed_step(width, encoding.bytes_per_pixel())?;
        DepthImage::new(width, height, encoding, step, data)
    }

    /// A `16UC1` image from `width * height` values in millimetres, row by row.
    pub fn from_mm(
        width: u32,
        height: u32,
        millimetres: &[u16],
    ) -> Result<DepthImage, LayoutError> {
        let data: Vec<u8> = millimetres.iter().flat_map(|v| v.to_le_bytes()).collect();
        DepthImage::from_packed(width, height, DepthEncoding::Mm16, data)
    }

    /// A `32FC1` image from `width * height` values in metres, row by row. Every value is
    /// kept bit for bit (NaN payloads too).
    pub fn from_m(width: u32, height: u32, metres: &[f32]) -> Result<DepthImage, LayoutError> {
        let data: Vec<u8> = metres.iter().flat_map(|v| v.to_le_bytes()).collect();
        DepthImage::from_packed(width, height, DepthEncoding::M32F, data)
    }

    /// This image with the sensor time `stamp`.
    pub fn with_stamp(mut self, stamp: Timestamp) -> DepthImage {
        self.stamp = stamp;
        self
    }

    /// This image with the coordinate frame `frame_id`.
    pub fn with_frame_id(mut self, frame_id: impl Into<Arc<str>>) -> DepthImage {
        self.frame_id = frame_id.into();
        self
    }

    /// Width in pixels (at least 1).
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels (at least 1).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// `16UC1` or `32FC1`.
    pub fn encoding(&self) -> DepthEncoding {
        self.encoding
    }

    /// Bytes from the start of one row to the start of the next (padding included).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// All `height * step` bytes, padding included.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The sensor time: when the depth was captured.
    pub fn stamp(&self) -> Timestamp {
        self.stamp
    }

    /// The coordinate frame of the depth camera (empty when not set).
    pub fn frame_id(&self) -> &str {
        &self.frame_id
    }

    /// The frame id, shared (codecs pass it on without copying the string).
    pub(crate) fn frame_id_shared(&self) -> std::sync::Arc<str> {
        self.frame_id.clone()
    }

    /// Bytes of one row's values, without padding.
    pub fn row_bytes(&self) -> usize {
        self.layout().row_bytes
    }

    /// True when the rows have no padding.
    pub fn is_packed(&self) -> bool {
        self.layout().is_packed()
    }

    /// The bytes of row `y` without padding, or `None` past the last row.
    pub fn row(&self, y: u32) -> Option<&[u8]> {
        self.data.get(self.layout().row_range(y)?)
    }

    /// Every row, top to bottom, without padding.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        layout::rows(&self.data, self.layout())
    }

    /// The values without row padding: the shared buffer itself when already packed.
    pub fn packed(&self) -> Bytes {
        layout::packed(&self.data, self.layout())
    }

    /// The stored `16UC1` value at `(x, y)` as it is (0 included), or `None` outside the
    /// image or for a `32FC1` image.
    pub fn raw_mm(&self, x: u32, y: u32) -> Option<u16> {
        match self.encoding {
            DepthEncoding::Mm16 => self.value_bytes(x, y).map(u16::from_le_bytes),
            DepthEncoding::M32F => None,
        }
    }

    /// The stored `32FC1` value at `(x, y)` as it is (NaN included), or `None` outside the
    /// image or for a `16UC1` image.
    pub fn raw_m(&self, x: u32, y: u32) -> Option<f32> {
        match self.encoding {
            DepthEncoding::M32F => self.value_bytes(x, y).map(f32::from_le_bytes),
            DepthEncoding::Mm16 => None,
        }
    }

    /// The depth at `(x, y)` in millimetres, or `None` outside the image or where there
    /// is no measurement. A `32FC1` value is rounded, and is `None` unless it is finite
    /// and rounds to `1..=65535` mm.
    pub fn depth_mm(&self, x: u32, y: u32) -> Option<u16> {
        match self.encoding {
            DepthEncoding::Mm16 => self.raw_mm(x, y).filter(|&mm| mm != 0),
            DepthEncoding::M32F => {
                let mm = (self.raw_m(x, y)? * 1000.0).round();
                // `as` saturates, so the range check must come first.
                (mm.is_finite() && (1.0..=65535.0).contains(&mm)).then_some(mm as u16)
            }
        }
    }

    /// The depth at `(x, y)` in metres, or `None` outside the image or where there is no
    /// measurement (`0` in `16UC1`; NaN, infinite or not positive in `32FC1`, as
    /// REP 117 has it).
    pub fn depth_m(&self, x: u32, y: u32) -> Option<f32> {
        match self.encoding {
            DepthEncoding::Mm16 => self.depth_mm(x, y).map(|mm| f32::from(mm) / 1000.0),
            DepthEncoding::M32F => self.raw_m(x, y).filter(|m| m.is_finite() && *m > 0.0),
        }
    }

    fn value_bytes<const N: usize>(&self, x: u32, y: u32) -> Option<[u8; N]> {
        let range = self
            .layout()
            .pixel_range(x, y, self.encoding.bytes_per_pixel())?;
        self.data.get(range)?.try_into().ok()
    }

    fn layout(&self) -> Layout {
        // Checked at construction; a fallback keeps the accessors panic-free regardless.
        Layout::check(
            self.width,
            self.height,
            self.encoding.bytes_per_pixel(),
            self.step,
            self.data.len(),
        )
        .unwrap_or(Layout {
            height: 0,
            step: 0,
            row_bytes: 0,
        })
    }
}
