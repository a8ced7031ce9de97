//! Where the shared real data lives and how to load it, in one place for every test,
//! bench and example of the workspace.
//!
//! The data is read-only and never copied into the repository: `$STREAMWIRE_DATA` if set,
//! else `../shared/data` beside the workspace (where CI puts it). It holds
//! `cockatoo_720p/frames/000000.jpg..000279.jpg` (280 real 1280x720 JPEG frames) and
//! `rgbd_pointcloud/` (two 640x480 clouds, their 16-bit depth PNGs and RGB PNGs).
//!
//! Tests that need the data start with [`data_or_skip`]: where it is missing they say
//! `skipped:` and why, and fail instead under `STREAMWIRE_REQUIRE=all` (as CI runs them).
//! The readers ([`require_dir`], [`read`], ...) panic with a clear message when it is
//! missing. Benches and examples that can fall back to synthetic input check [`dir`]
//! themselves.
//!
//! [`alloc`] holds the one counting allocator of the workspace's tests; [`require`] the
//! one rule for tests that would skip for a missing tool (`STREAMWIRE_REQUIRE=all`); [`shm`]
//! the shared-memory files a test must not leave behind.
//!
//! Every function here panics on a missing or malformed file: it is test support, where a
//! panic with the path in the message is the useful outcome.

use std::path::{Path, PathBuf};

pub mod alloc;
pub mod djpeg;
#[cfg(target_os = "linux")]
pub mod fifo;
pub mod process;
pub mod require;
pub mod shm;

pub use require::skip;

/// Number of frames of the cockatoo sequence.
pub const COCKATOO_FRAMES: usize = 280;

/// The two RGB-D captures, by the prefix of their files in `rgbd_pointcloud/`.
pub const RGBD_CAPTURES: [&str; 2] = ["milk_cartoon", "table_scene_mug"];

/// The data folder, whether or not it exists: `$STREAMWIRE_DATA`, else
/// `<workspace>/../shared/data`.
pub fn dir() -> PathBuf {
    match std::env::var_os("STREAMWIRE_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

/// Whether the shared data is here. Where it is not, says why the calling test skips (the
/// caller then returns), or under `STREAMWIRE_REQUIRE=all` fails it ([`skip`]).
pub fn data_or_skip() -> bool {
    let dir = dir();
    if dir.is_dir() {
        return true;
    }
    skip(format!(
        "the shared real data is not at {} (set STREAMWIRE_DATA to its folder)",
        dir.display()
    ));
    false
}

/// The data folder; panics, naming where it looked, when it is missing.
pub fn require_dir() -> PathBuf {
    let dir = dir();
    assert!(
        dir.is_dir(),
        "real test data not found at {} (set STREAMWIRE_DATA to the folder holding \
         cockatoo_720p/ and rgbd_pointcloud/; on CI it is ../shared/data beside the repo)",
        dir.display()
    );
    dir
}

/// The bytes of `relative` inside the data folder.
pub fn read(relative: &str) -> Vec<u8> {
    let path = require_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Path of cockatoo frame `index` (0..280) relative to the data folder.
pub fn cockatoo_frame(index: usize) -> String {
    format!("cockatoo_720p/frames/{index:06}.jpg")
}

/// Path of the 16-bit depth PNG of `capture` (one of [`RGBD_CAPTURES`]).
pub fn depth_png(capture: &str) -> String {
    format!("rgbd_pointcloud/{capture}_depth16.png")
}

/// Path of the 8-bit RGB PNG of `capture`.
pub fn rgb_png(capture: &str) -> String {
    format!("rgbd_pointcloud/{capture}_rgb.png")
}

/// A decoded PNG: size, format, and its packed rows as stored (16-bit samples big-endian,
/// as PNG has them).
pub struct Png {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bits per sample.
    pub bit_depth: png::BitDepth,
    /// Channels.
    pub color_type: png::ColorType,
    /// Packed rows.
    pub data: Vec<u8>,
}

/// Decodes the PNG `relative` inside the data folder.
pub fn read_png(relative: &str) -> Png {
    let decoder = png::Decoder::new(std::io::Cursor::new(read(relative)));
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{relative}: PNG header: {e}"));
    let size = reader
        .output_buffer_size()
        .unwrap_or_else(|| panic!("{relative}: PNG too large"));
    let mut data = vec![0; size];
    let info = reader
        .next_frame(&mut data)
        .unwrap_or_else(|e| panic!("{relative}: PNG data: {e}"));
    data.truncate(info.buffer_size());
    Png {
        width: info.width,
        height: info.height,
        bit_depth: info.bit_depth,
        color_type: info.color_type,
        data,
    }
}

/// The depth PNG of `capture` as millimetres, row by row: `(width, height, mm)`.
pub fn read_depth_mm(capture: &str) -> (u32, u32, Vec<u16>) {
    let relative = depth_png(capture);
    let png = read_png(&relative);
    assert_eq!(
        png.bit_depth,
        png::BitDepth::Sixteen,
        "{relative}: not 16-bit"
    );
    assert_eq!(
        png.color_type,
        png::ColorType::Grayscale,
        "{relative}: not greyscale"
    );
    let mm = png
        .data
        .chunks_exact(2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .collect();
    (png.width, png.height, mm)
}

/// The RGB PNG of `capture` as packed rgb8 rows: `(width, height, rgb)`.
pub fn read_rgb(capture: &str) -> (u32, u32, Vec<u8>) {
    let relative = rgb_png(capture);
    let png = read_png(&relative);
    assert_eq!(png.bit_depth, png::BitDepth::Eight, "{relative}: not 8-bit");
    assert_eq!(png.color_type, png::ColorType::Rgb, "{relative}: not RGB");
    (png.width, png.height, png.data)
}
