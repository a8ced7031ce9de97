//! Borrowed pixel buffers with ROS-style row steps.

use std::fmt;

/// Layout of one 8-bit pixel, named as ROS `sensor_msgs/Image` encodings are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    /// Red, green, blue (`rgb8`).
    Rgb8,
    /// Blue, green, red (`bgr8`, OpenCV's order).
    Bgr8,
    /// Red, green, blue, alpha (`rgba8`).
    Rgba8,
    /// Blue, green, red, alpha (`bgra8`).
    Bgra8,
    /// One grey sample (`mono8`).
    Mono8,
}

impl PixelFormat {
    /// Bytes of one pixel: 3, 3, 4, 4 or 1.
    ///
    /// ```
    /// use streamwire_codec::jpeg::PixelFormat;
    /// assert_eq!(PixelFormat::Bgra8.bytes_per_pixel(), 4);
    /// ```
    #[must_use]
    pub const fn bytes_per_pixel(self) -> usize {
        match self {
            Self::Rgb8 | Self::Bgr8 => 3,
            Self::Rgba8 | Self::Bgra8 => 4,
            Self::Mono8 => 1,
        }
    }

    /// Whether the format has an alpha channel (which JPEG cannot carry).
    #[must_use]
    pub const fn has_alpha(self) -> bool {
        matches!(self, Self::Rgba8 | Self::Bgra8)
    }

    /// All formats, for tests and tools that iterate over them.
    pub const ALL: [Self; 5] = [
        Self::Rgb8,
        Self::Bgr8,
        Self::Rgba8,
        Self::Bgra8,
        Self::Mono8,
    ];
}

impl fmt::Display for PixelFormat {
    /// The ROS encoding name: `rgb8`, `bgr8`, `rgba8`, `bgra8`, `mono8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rgb8 => "rgb8",
            Self::Bgr8 => "bgr8",
            Self::Rgba8 => "rgba8",
            Self::Bgra8 => "bgra8",
            Self::Mono8 => "mono8",
        })
    }
}

/// Why a pixel buffer does not match its declared layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// Width or height is zero.
    #[error("image size {width}x{height} has a zero side")]
    ZeroDimension {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
    },
    /// The row step is shorter than one row of pixels.
    #[error("row step {step} is shorter than a row of pixels ({min_step} bytes)")]
    StepTooSmall {
        /// Declared step in bytes.
        step: usize,
        /// Width times bytes per pixel.
        min_step: usize,
    },
    /// The buffer length is not `height * step`.
    #[error("pixel buffer holds {actual} bytes, expected height * step = {expected}")]
    BufferSize {
        /// `height * step`.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// A size computation overflowed `usize`.
    #[error("image size overflows usize")]
    Overflow,
}

/// Borrowed pixels with ROS-style row `step` (bytes per row, may include padding).
///
/// Construction checks the layout once, so the engines can slice rows without further checks.
///
/// ```
/// use streamwire_codec::jpeg::{PixelFormat, PixelsRef};
/// // 2x2 mono with one padding byte per row.
/// let data = [10, 20, 0, 30, 40, 0];
/// let pixels = PixelsRef::new(2, 2, 3, PixelFormat::Mono8, &data)?;
/// assert_eq!(pixels.row(1), Some(&[30u8, 40][..]));
/// assert_eq!(pixels.row(2), None);
/// # Ok::<(), streamwire_codec::jpeg::LayoutError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PixelsRef<'a> {
    width: u32,
    height: u32,
    step: usize,
    format: PixelFormat,
    data: &'a [u8],
}

impl<'a> PixelsRef<'a> {
    /// Checks the layout: both sides at least 1, `step >= width * bytes_per_pixel`,
    /// `data.len() == height * step`, every product overflow-checked.
    ///
    /// # Errors
    /// [`LayoutError`] naming the first violated condition.
    pub fn new(
        width: u32,
        height: u32,
        step: usize,
        format: PixelFormat,
        data: &'a [u8],
    ) -> Result<Self, LayoutError> {
        if width == 0 || height == 0 {
            return Err(LayoutError::ZeroDimension { width, height });
        }
        let width_usize = usize::try_from(width).map_err(|_| LayoutError::Overflow)?;
        let height_usize = usize::try_from(height).map_err(|_| LayoutError::Overflow)?;
        let min_step = width_usize
            .checked_mul(format.bytes_per_pixel())
            .ok_or(LayoutError::Overflow)?;
        if step < min_step {
            return Err(LayoutError::StepTooSmall { step, min_step });
        }
        let expected = height_usize
            .checked_mul(step)
            .ok_or(LayoutError::Overflow)?;
        if data.len() != expected {
            return Err(LayoutError::BufferSize {
                expected,
                actual: data.len(),
            });
        }
        Ok(Self {
            width,
            height,
            step,
            format,
            data,
        })
    }

    /// Width in pixels.
    #[must_use]
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    #[must_use]
    pub const fn height(&self) -> u32 {
        self.height
    }

    /// Bytes from the start of one row to the next.
    #[must_use]
    pub const fn step(&self) -> usize {
        self.step
    }

    /// Pixel layout.
    #[must_use]
    pub const fn format(&self) -> PixelFormat {
        self.format
    }

    /// The whole buffer, padding included (`height * step` bytes).
    #[must_use]
    pub const fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Bytes of one row of pixels (`width * bytes_per_pixel`), without padding.
    #[must_use]
    pub fn row_len(&self) -> usize {
        // Checked in `new`: width * bpp <= step, so this cannot overflow.
        self.width as usize * self.format.bytes_per_pixel()
    }

    /// Whether rows follow each other with no padding.
    #[must_use]
    pub fn is_packed(&self) -> bool {
        self.step == self.row_len()
    }

    /// Row `y` without padding, or `None` past the last row.
    #[must_use]
    pub fn row(&self, y: u32) -> Option<&'a [u8]> {
        let start = usize::try_from(y).ok()?.checked_mul(self.step)?;
        let end = start.checked_add(self.row_len())?;
        self.data.get(start..end)
    }

    /// All rows in order, without padding.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + use<'a> {
        let row_len = self.row_len();
        // `new` checked data.len() == height * step and step >= row_len >= 1, so this yields
        // exactly `height` chunks and each holds a whole row.
        self.data
            .chunks_exact(self.step)
            .map(move |row| row.get(..row_len).unwrap_or(row))
    }
}
