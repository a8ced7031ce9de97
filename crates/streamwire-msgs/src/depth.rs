//! Depth images.

use serde::{Deserialize, Serialize};

use crate::LayoutError;
use crate::raster::raster_message;

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

raster_message! {
    /// A depth image: `16UC1` (millimetres, 0 = none) or `32FC1` (metres, NaN = none),
    /// little-endian, rows `step` bytes apart as in [`Image`](crate::Image): a
    /// [`Raster`](crate::Raster) of [`DepthEncoding`] (its accessors are the raster's).
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
    DepthImage: "streamwire/DepthImage",
    DepthEncoding: "depth", raw Depth, "compressedDepth", expected "16UC1, 32FC1",
}

impl DepthImage {
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

    /// The stored `16UC1` value at `(x, y)` as it is (0 included), or `None` outside the
    /// image or for a `32FC1` image.
    pub fn raw_mm(&self, x: u32, y: u32) -> Option<u16> {
        match self.encoding() {
            DepthEncoding::Mm16 => self.value_bytes(x, y).map(u16::from_le_bytes),
            DepthEncoding::M32F => None,
        }
    }

    /// The stored `32FC1` value at `(x, y)` as it is (NaN included), or `None` outside the
    /// image or for a `16UC1` image.
    pub fn raw_m(&self, x: u32, y: u32) -> Option<f32> {
        match self.encoding() {
            DepthEncoding::M32F => self.value_bytes(x, y).map(f32::from_le_bytes),
            DepthEncoding::Mm16 => None,
        }
    }

    /// The depth at `(x, y)` in millimetres, or `None` outside the image or where there
    /// is no measurement. A `32FC1` value is rounded, and is `None` unless it is finite
    /// and rounds to `1..=65535` mm.
    pub fn depth_mm(&self, x: u32, y: u32) -> Option<u16> {
        match self.encoding() {
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
        match self.encoding() {
            DepthEncoding::Mm16 => self.depth_mm(x, y).map(|mm| f32::from(mm) / 1000.0),
            DepthEncoding::M32F => self.raw_m(x, y).filter(|m| m.is_finite() && *m > 0.0),
        }
    }

    fn value_bytes<const N: usize>(&self, x: u32, y: u32) -> Option<[u8; N]> {
        self.pixel(x, y)?.try_into().ok()
    }
}
