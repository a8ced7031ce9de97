//! Colour and greyscale images.

use serde::{Deserialize, Serialize};

use crate::raster::raster_message;

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

raster_message! {
    /// A colour or greyscale camera image, as `sensor_msgs/Image`.
    ///
    /// A [`Raster`](crate::Raster) of [`ImageEncoding`] (its accessors are the raster's):
    /// `height` rows of `step` bytes; each row holds `width` pixels of the
    /// [`encoding`](crate::Raster::encoding) and maybe padding after them. The pixels are
    /// shared ([`Bytes`](bytes::Bytes)): cloning an image never copies them. Every
    /// constructor (and deserialization) checks the layout, so an `Image` always has at
    /// least one pixel and a buffer of exactly `height * step` bytes.
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
    Image: "streamwire/Image",
    ImageEncoding: "image", raw Image, "compressed", expected "rgb8, bgr8, rgba8, bgra8, mono8",
}
