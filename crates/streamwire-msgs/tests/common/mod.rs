//! Helpers shared by the integration tests: where the real data lives, and PNG loading.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of this module"
)]

use std::path::PathBuf;

/// The shared real-data folder: `$STREAMWIRE_DATA` if set, else `<workspace>/../shared/data`.
///
/// Panics with a clear message if it is missing: tests that need real data must fail, not
/// silently pass, when it is not there.
pub(crate) fn data_dir() -> PathBuf {
    let dir = match std::env::var_os("STREAMWIRE_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    assert!(
        dir.is_dir(),
        "real test data not found at {} (set STREAMWIRE_DATA to the folder holding \
         cockatoo_720p/ and rgbd_pointcloud/; on CI it is ../shared/data beside the repo)",
        dir.display()
    );
    dir
}

/// Reads `relative` inside the data folder, failing with the path in the message.
pub(crate) fn read_data(relative: &str) -> Vec<u8> {
    let path = data_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A decoded PNG: size, bit depth and colour type, and its packed rows as stored (16-bit
/// samples big-endian, as PNG has them).
pub(crate) struct Png {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) bit_depth: png::BitDepth,
    pub(crate) color_type: png::ColorType,
    pub(crate) data: Vec<u8>,
}

pub(crate) fn read_png(relative: &str) -> Png {
    let bytes = read_data(relative);
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut data = vec![0; reader.output_buffer_size().expect("PNG size")];
    let info = reader.next_frame(&mut data).expect("PNG data");
    data.truncate(info.buffer_size());
    Png {
        width: info.width,
        height: info.height,
        bit_depth: info.bit_depth,
        color_type: info.color_type,
        data,
    }
}

/// The 16-bit greyscale depth PNG `relative` as millimetres, row by row.
pub(crate) fn read_depth_png(relative: &str) -> (u32, u32, Vec<u16>) {
    let png = read_png(relative);
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
