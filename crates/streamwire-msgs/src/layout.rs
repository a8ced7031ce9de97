//! The layout rules shared by [`Image`](crate::Image) and [`DepthImage`](crate::DepthImage):
//! `height` rows of `step` bytes each, a row holding `width` pixels and maybe padding.

/// Why an image's size, row length (`step`) and buffer do not fit together.
///
/// ```
/// # use streamwire_msgs::{Image, ImageEncoding, LayoutError};
/// // 4 pixels of rgb8 need 12 bytes per row: a step of 10 is too short.
/// let err = Image::new(4, 2, ImageEncoding::Rgb8, 10, vec![0u8; 20]).unwrap_err();
/// assert!(matches!(err, LayoutError::StepTooShort { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// Width or height is zero: an image has at least one pixel.
    #[error("an image needs at least one pixel, got {width}x{height}")]
    Empty {
        /// The width given.
        width: u32,
        /// The height given.
        height: u32,
    },
    /// The row length `step` is shorter than one row of pixels.
    #[error(
        "step {step} is shorter than a row of {width} pixels x {bytes_per_pixel} bytes = {row_bytes} bytes"
    )]
    StepTooShort {
        /// The step given.
        step: u32,
        /// The width given.
        width: u32,
        /// Bytes per pixel of the encoding.
        bytes_per_pixel: u32,
        /// The shortest possible step.
        row_bytes: u64,
    },
    /// The buffer is not exactly `height * step` bytes long.
    #[error("the buffer holds {actual} bytes, but {height} rows x step {step} = {expected} bytes")]
    WrongLength {
        /// `height * step`.
        expected: u64,
        /// The buffer's length.
        actual: usize,
        /// The height given.
        height: u32,
        /// The step given.
        step: u32,
    },
    /// A size does not fit the integer type that must hold it.
    #[error("the image is too large: {what} overflows")]
    Overflow {
        /// Which product overflowed, e.g. `width x bytes per pixel`.
        what: &'static str,
    },
}

/// A checked image layout: every product below fits, and `len == height * step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) height: usize,
    pub(crate) step: usize,
    /// `width * bytes_per_pixel`: the bytes of one row without padding.
    pub(crate) row_bytes: usize,
}

impl Layout {
    /// Checks `width x height` pixels of `bytes_per_pixel`, rows `step` bytes apart, in a
    /// buffer of `len` bytes.
    pub(crate) fn check(
        width: u32,
        height: u32,
        bytes_per_pixel: u32,
        step: u32,
        len: usize,
    ) -> Result<Layout, LayoutError> {
        if width == 0 || height == 0 {
            return Err(LayoutError::Empty { width, height });
        }
        // u32 x u32 always fits u64; only the conversions to usize can fail (32-bit targets).
        let row_bytes = u64::from(width) * u64::from(bytes_per_pixel);
        if u64::from(step) < row_bytes {
            return Err(LayoutError::StepTooShort {
                step,
                width,
                bytes_per_pixel,
                row_bytes,
            });
        }
        let expected = u64::from(height) * u64::from(step);
        let too_large = |what| LayoutError::Overflow { what };
        let expected_len = usize::try_from(expected).map_err(|_| too_large("height x step"))?;
        if expected_len != len {
            return Err(LayoutError::WrongLength {
                expected,
                actual: len,
                height,
                step,
            });
        }
        Ok(Layout {
            height: usize::try_from(height).map_err(|_| too_large("height"))?,
            step: usize::try_from(step).map_err(|_| too_large("step"))?,
            row_bytes: usize::try_from(row_bytes).map_err(|_| too_large("row length"))?,
        })
    }

    /// The step of packed rows (no padding): `width * bytes_per_pixel`, which must fit a `u32`.
    pub(crate) fn packed_step(width: u32, bytes_per_pixel: u32) -> Result<u32, LayoutError> {
        width
            .checked_mul(bytes_per_pixel)
            .ok_or(LayoutError::Overflow {
                what: "width x bytes per pixel",
            })
    }

    /// The byte range of row `y` without padding, if `y` is in the image.
    pub(crate) fn row_range(&self, y: u32) -> Option<std::ops::Range<usize>> {
        let y = usize::try_from(y).ok()?;
        if y >= self.height {
            return None;
        }
        let start = y.checked_mul(self.step)?;
        Some(start..start.checked_add(self.row_bytes)?)
    }

    /// The byte range of pixel `(x, y)`, if it is in the image.
    pub(crate) fn pixel_range(
        &self,
        x: u32,
        y: u32,
        bytes_per_pixel: u32,
    ) -> Option<std::ops::Range<usize>> {
        let row = self.row_range(y)?;
        let bpp = usize::try_from(bytes_per_pixel).ok()?;
        let start = row
            .start
            .checked_add(usize::try_from(x).ok()?.checked_mul(bpp)?)?;
        let end = start.checked_add(bpp)?;
        (end <= row.end).then_some(start..end)
    }

    /// True when rows follow each other without padding.
    pub(crate) fn is_packed(&self) -> bool {
        self.step == self.row_bytes
    }
}

/// The rows of `data` laid out as `layout`, without padding.
pub(crate) fn rows(data: &[u8], layout: Layout) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
    // step >= row_bytes >= 1 (checked at construction), so chunks are never empty; `get`
    // keeps this panic-free even if that ever changed.
    (0..layout.height).map(move |y| {
        let start = y.saturating_mul(layout.step);
        data.get(start..start.saturating_add(layout.row_bytes))
            // infallible: step >= row_bytes (checked at construction): every row is in range
            .unwrap_or_default()
    })
}

/// The packed rows of `data` (a copy only when the rows are padded).
pub(crate) fn packed(data: &bytes::Bytes, layout: Layout) -> bytes::Bytes {
    if layout.is_packed() {
        return data.clone();
    }
    let mut out = Vec::with_capacity(layout.row_bytes.saturating_mul(layout.height));
    for row in rows(data, layout) {
        out.extend_from_slice(row);
    }
    bytes::Bytes::from(out)
}

/// Why an encoding name could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} encoding `{name}` (expected one of: {expected})")]
pub struct ParseEncodingError {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) expected: &'static str,
}

impl ParseEncodingError {
    /// The name that was not recognised.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// At most 64 characters of `text`, for error messages about untrusted strings.
pub(crate) fn clip(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        None => text.to_owned(),
        // infallible: `cut` comes from `char_indices`, a character boundary
        Some((cut, _)) => format!("{}...", text.get(..cut).unwrap_or_default()),
    }
}
