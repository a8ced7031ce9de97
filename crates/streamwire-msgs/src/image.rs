//! Colour and greyscale images.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

use crate::layout::{self, Layout, LayoutError, ParseEncodingError};

/// Pixel layout of an [`Image`] (the ROS `sensor_msgs/Image` encoding names).
///
/// ```
/// # use streamwire_msgs::ImageEncoding;
/// let encoding: ImageEncoding = "bgra8".parse()?;
/// assert_eq!(encoding, ImageEncoding::Bgra8);
/// assert_eq!(encoding.bytes_per_pixel(), 4);
/// assert_eq!(encoding.to_string(), "bgra8");
/// # Ok::<(), streamwire_msgs::ParseEncodingError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageEncoding {
    /// 8-bit red, green, blue.
    Rgb8,
    /// 8-bit blue, green, red (OpenCV's order).
    Bgr8,
    /// 8-bit red, green, blue, alpha.
    Rgba8,
    /// 8-bit blue, green, red, alpha.
    Bgra8,
    /// 8-bit greyscale.
    Mono8,
}

impl ImageEncoding {
    /// Every encoding, in declaration order.
    pub const ALL: [ImageEncoding; 5] = [
        ImageEncoding::Rgb8,
        ImageEncoding::Bgr8,
        ImageEncoding::Rgba8,
        ImageEncoding::Bgra8,
        ImageEncoding::Mono8,
    ];

    /// The ROS name: `rgb8`, `bgr8`, `rgba8`, `bgra8`, `mono8`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ImageEncoding::Rgb8 => "rgb8",
            ImageEncoding::Bgr8 => "bgr8",
            ImageEncoding::Rgba8 => "rgba8",
            ImageEncoding::Bgra8 => "bgra8",
            ImageEncoding::Mono8 => "mono8",
        }
    }

    /// Channels per pixel: 3, 4 or 1.
    pub const fn channels(self) -> u32 {
        match self {
            ImageEncoding::Rgb8 | ImageEncoding::Bgr8 => 3,
            ImageEncoding::Rgba8 | ImageEncoding::Bgra8 => 4,
            ImageEncoding::Mono8 => 1,
        }
    }

    /// Bytes per pixel (every channel is one byte).
    pub const fn bytes_per_pixel(self) -> u32 {
        self.channels()
    }

    /// True for `rgba8` and `bgra8`.
    pub const fn has_alpha(self) -> bool {
        matches!(self, ImageEncoding::Rgba8 | ImageEncoding::Bgra8)
    }
}

impl fmt::Display for ImageEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ImageEncoding {
    type Err = ParseEncodingError;

    fn from_str(name: &str) -> Result<Self, ParseEncodingError> {
        ImageEncoding::ALL
            .into_iter()
            .find(|e| e.as_str() == name)
            .ok_or_else(|| ParseEncodingError {
                kind: "image",
                name: layout::clip(name),
                expected: "rgb8, bgr8, rgba8, bgra8, mono8",
            })
    }
}

/// A colour or greyscale camera image, as `sensor_msgs/Image`.
///
/// `height` rows of `step` bytes; each row holds `width` pixels of the
/// [`encoding`](Image::encoding) and maybe padding after them. The pixels are shared
/// ([`Bytes`]): cloning an image never copies them. Every constructor (and
/// deserialization) checks the layout, so an `Image` always has at least one pixel and a
/// buffer of exactly `height * step` bytes.
///
/// ```
/// use streamwire::Timestamp;
/// use streamwire::msgs::{Image, ImageEncoding};
///
/// // 2x2 mono8 with rows padded to 4 bytes.
/// let image = Image::new(2, 2, ImageEncoding::Mono8, 4, vec![1, 2, 0, 0, 3, 4, 0, 0])?
///     .with_stamp(Timestamp::from_nanos(42))
///     .with_frame_id("camera");
/// assert_eq!(image.row(1), Some(&[3, 4][..]));
/// assert_eq!(image.pixel(0, 1), Some(&[3][..]));
/// assert_eq!(&image.packed()[..], &[1, 2, 3, 4]);
/// assert_eq!(image.frame_id(), "camera");
/// # Ok::<(), streamwire_msgs::LayoutError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Image", kind = sensor, crate = streamwire_core)]
#[serde(try_from = "ImageRepr")]
pub struct Image {
    width: u32,
    height: u32,
    encoding: ImageEncoding,
    step: u32,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

/// The unchecked wire form of an [`Image`]; deserialization goes through
/// [`Image::new`]'s checks.
#[derive(Deserialize)]
struct ImageRepr {
    width: u32,
    height: u32,
    encoding: ImageEncoding,
    step: u32,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

impl TryFrom<ImageRepr> for Image {
    type Error = LayoutError;

    fn try_from(repr: ImageRepr) -> Result<Image, LayoutError> {
        Ok(
            Image::new(repr.width, repr.height, repr.encoding, repr.step, repr.data)?
                .with_stamp(repr.stamp)
                .with_frame_id(repr.frame_id),
        )
    }
}

impl Image {
    /// An image of `width x height` pixels of `encoding`, rows `step` bytes apart.
    ///
    /// `data` must be exactly `height * step` bytes, and `step` at least `width *
    /// bytes_per_pixel`. A `Vec<u8>` or [`Bytes`] is taken without copying. The stamp is
    /// [`Timestamp::ZERO`] and the frame id empty until set.
    pub fn new(
        width: u32,
        height: u32,
        encoding: ImageEncoding,
        step: u32,
        data: impl Into<Bytes>,
    ) -> Result<Image, LayoutError> {
        let data = data.into();
        Layout::check(width, height, encoding.bytes_per_pixel(), step, data.len())?;
        Ok(Image {
            width,
            height,
            encoding,
            step,
            data,
            stamp: Timestamp::ZERO,
            frame_id: Arc::from(""),
        })
    }

    /// An image whose rows follow each other without padding (`step = width *
    /// bytes_per_pixel`).
    ///
    /// ```
    /// # use streamwire_msgs::{Image, ImageEncoding};
    /// let image = Image::from_packed(2, 1, ImageEncoding::Rgb8, vec![255, 0, 0, 0, 255, 0])?;
    /// assert_eq!(image.step(), 6);
    /// # Ok::<(), streamwire_msgs::LayoutError>(())
    /// ```
    pub fn from_packed(
        width: u32,
        height: u32,
        encoding: ImageEncoding,
        data: impl Into<Bytes>,
    ) -> Result<Image, LayoutError> {
        let step = Layout::packed_step(width, encoding.bytes_per_pixel())?;
        Image::new(width, height, encoding, step, data)
    }

    /// This image with the sensor time `stamp` (when the pixels were captured).
    pub fn with_stamp(mut self, stamp: Timestamp) -> Image {
        self.stamp = stamp;
        self
    }

    /// This image with the coordinate frame `frame_id` (the camera's optical frame).
    pub fn with_frame_id(mut self, frame_id: impl Into<Arc<str>>) -> Image {
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

    /// The pixel layout.
    pub fn encoding(&self) -> ImageEncoding {
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

    /// The sensor time: when the pixels were captured.
    pub fn stamp(&self) -> Timestamp {
        self.stamp
    }

    /// The coordinate frame of the camera (empty when not set).
    pub fn frame_id(&self) -> &str {
        &self.frame_id
    }

    /// The frame id, shared (codecs pass it on without copying the string).
    pub(crate) fn frame_id_shared(&self) -> std::sync::Arc<str> {
        self.frame_id.clone()
    }

    /// Bytes of one row's pixels, without padding: `width * bytes_per_pixel`.
    pub fn row_bytes(&self) -> usize {
        self.layout().row_bytes
    }

    /// True when the rows have no padding (`step == row_bytes`).
    pub fn is_packed(&self) -> bool {
        self.layout().is_packed()
    }

    /// The pixels of row `y` without padding, or `None` past the last row.
    pub fn row(&self, y: u32) -> Option<&[u8]> {
        self.data.get(self.layout().row_range(y)?)
    }

    /// Every row, top to bottom, without padding.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        layout::rows(&self.data, self.layout())
    }

    /// The bytes of pixel `(x, y)` (one per channel), or `None` outside the image.
    pub fn pixel(&self, x: u32, y: u32) -> Option<&[u8]> {
        let range = self
            .layout()
            .pixel_range(x, y, self.encoding.bytes_per_pixel())?;
        self.data.get(range)
    }

    /// The pixels without row padding: the shared buffer itself when the rows are already
    /// packed, else a packed copy.
    pub fn packed(&self) -> Bytes {
        layout::packed(&self.data, self.layout())
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
