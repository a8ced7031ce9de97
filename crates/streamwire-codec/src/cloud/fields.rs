//! Lossless zstd of packed points, either as they lie (`Plain`) or byte-shuffled first
//! (`Shuffled`: byte `b` of every point, then byte `b + 1` of every point, ..., the transpose
//! Blosc calls shuffle), so that the slowly changing high bytes of neighbouring floats sit
//! together. One plain zstd frame either way, with its content size, so the decoder checks the
//! size it expects before allocating ([`crate::lossless::decompress_exact`]).

use crate::lossless;

use super::CloudError;

/// How the points are laid out before zstd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The points as they are.
    Plain,
    /// Byte planes: byte 0 of every point, then byte 1, ...
    Shuffled,
}

/// Compresses `points` (`point_step` bytes each) at zstd `level`.
pub fn compress(
    points: &[u8],
    point_step: usize,
    layout: Layout,
    level: i32,
) -> Result<Vec<u8>, CloudError> {
    let data = match layout {
        Layout::Plain => std::borrow::Cow::Borrowed(points),
        Layout::Shuffled => std::borrow::Cow::Owned(shuffle(points, point_step)?),
    };
    lossless::compress_rows(std::iter::once(&data[..]), data.len(), level)
        .map_err(CloudError::Lossless)
}

/// Decompresses a frame of exactly `expected` bytes of points and undoes the layout.
pub fn decompress(
    frame: &[u8],
    expected: usize,
    point_step: usize,
    layout: Layout,
) -> Result<Vec<u8>, CloudError> {
    let data = lossless::decompress_exact(frame, expected).map_err(CloudError::Lossless)?;
    match layout {
        Layout::Plain => Ok(data),
        Layout::Shuffled => unshuffle(&data, point_step),
    }
}

/// The content size a zstd frame's header records, if it records one.
pub fn frame_content_size(frame: &[u8]) -> Option<u64> {
    zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
}

fn whole_points(len: usize, point_step: usize) -> Result<usize, CloudError> {
    if point_step == 0 || !len.is_multiple_of(point_step) {
        return Err(CloudError::WrongLength {
            expected: len.next_multiple_of(point_step.max(1)),
            actual: len,
        });
    }
    Ok(len / point_step)
}

/// Byte `b` of point `p` goes to `b * points + p`.
pub fn shuffle(points: &[u8], point_step: usize) -> Result<Vec<u8>, CloudError> {
    let count = whole_points(points.len(), point_step)?;
    let mut out = vec![0u8; points.len()];
    for (p, point) in points.chunks_exact(point_step).enumerate() {
        for (b, &byte) in point.iter().enumerate() {
            out[b * count + p] = byte;
        }
    }
    Ok(out)
}

/// The inverse of [`shuffle`].
pub fn unshuffle(planes: &[u8], point_step: usize) -> Result<Vec<u8>, CloudError> {
    let count = whole_points(planes.len(), point_step)?;
    let mut out = vec![0u8; planes.len()];
    for (p, point) in out.chunks_exact_mut(point_step).enumerate() {
        for (b, byte) in point.iter_mut().enumerate() {
            *byte = planes[b * count + p];
        }
    }
    Ok(out)
}
