//! Writes seed inputs for the decoder fuzz targets (`fuzz/`): small synthetic images encoded
//! unsplit and in strips (4:2:0, 4:2:2, 4:4:4, greyscale; padded rows and odd sizes), the
//! hostile files of the tests (a huge declared size, too many scans), and restart-marked
//! files with mangled markers. Each input's first byte picks the output format.
//!
//! ```text
//! cargo run -p streamwire-codec --example fuzz_seeds -- DIR [real]
//! ```
//!
//! With `real`, it also writes the first 20 real cockatoo frames, downscaled to 320 pixels
//! wide and re-encoded in strips (for local fuzz runs: the data stays out of the repository).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;

use common::craft;
use streamwire_codec::jpeg::{
    EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Subsampling, Threads, encode,
};
use streamwire_testdata as data;

fn write(dir: &Path, name: &str, selector: u8, file: &[u8]) {
    let mut input = vec![selector];
    input.extend_from_slice(file);
    std::fs::write(dir.join(name), input).expect("write seed");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: fuzz_seeds DIR [real]");
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("create dir");
    let real = args.next().as_deref() == Some("real");

    let mut count = 0u8;
    for (format, subsampling) in [
        (PixelFormat::Rgb8, Subsampling::S420),
        (PixelFormat::Bgr8, Subsampling::S422),
        (PixelFormat::Rgb8, Subsampling::S444),
        (PixelFormat::Mono8, Subsampling::S420),
    ] {
        for (width, height) in [(8, 8), (33, 17), (40, 72)] {
            let bpp = format.bytes_per_pixel();
            let step = width as usize * bpp;
            let mut rng = common::Rng::new(u64::from(width + height));
            let pixels: Vec<u8> = common::smooth_image(width, height, bpp, step)
                .into_iter()
                .map(|v| v.wrapping_add((rng.next_u64() % 32) as u8))
                .collect();
            let image = PixelsRef::new(width, height, step, format, &pixels).expect("layout");
            for threads in [Threads::Unsplit, Threads::Auto] {
                let options = EncodeOptions {
                    subsampling,
                    threads,
                    ..EncodeOptions::default()
                };
                let file = encode(&image, &options).expect("encode").data;
                let name =
                    format!("{format}-{width}x{height}-{subsampling}-{threads}").replace(':', "");
                write(dir, &name, count, &file);
                count = count.wrapping_add(1);
                if threads == Threads::Auto && height > 16 {
                    // The second restart marker renumbered, and removed.
                    let markers: Vec<usize> = file
                        .windows(2)
                        .enumerate()
                        .filter(|(_, w)| w[0] == 0xFF && (0xD0..=0xD7).contains(&w[1]))
                        .map(|(at, _)| at)
                        .collect();
                    if let Some(&at) = markers.get(1) {
                        let mut renumbered = file.clone();
                        renumbered[at + 1] = 0xD5;
                        write(dir, &format!("{name}-renumbered"), count, &renumbered);
                        let mut removed = file.clone();
                        removed.drain(at..at + 2);
                        write(dir, &format!("{name}-removed"), count, &removed);
                    }
                }
            }
        }
    }
    write(
        dir,
        "huge-header-258-bytes",
        0,
        &craft::huge_header(60000, 60000, 118),
    );
    write(
        dir,
        "huge-header-16000",
        1,
        &craft::huge_header(16000, 16000, 4000),
    );
    write(dir, "many-scans-30", 2, &craft::many_scans(30));
    write(dir, "many-scans-1200", 3, &craft::many_scans(1200));

    if real {
        let decoder = JpegDecoder::default();
        for index in 0..20 {
            let source = data::read(&data::cockatoo_frame(index));
            let rgb = decoder.decode(&source, PixelFormat::Rgb8).expect("decode");
            let pixels = PixelsRef::new(
                rgb.width,
                rgb.height,
                rgb.width as usize * 3,
                PixelFormat::Rgb8,
                &rgb.data,
            )
            .expect("layout");
            let options = EncodeOptions {
                max_width: Some(320),
                ..EncodeOptions::default()
            };
            let file = encode(&pixels, &options).expect("encode").data;
            write(dir, &format!("cockatoo-{index:03}-320"), index as u8, &file);
        }
    }
}
