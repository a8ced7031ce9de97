//! Measures how a JPEG's size follows its quality and width on the 280 real 1280x720
//! cockatoo frames: the mean size at each quality 5..=100 (step 5) at full width, and at
//! quality 20 for each of the bit-rate controller's width steps, each relative to q75 at
//! full width. `streamwire_codec::budget`'s prior table comes from this output.
//!
//! ```text
//! cargo run --release -p streamwire-codec --example measure_quality [-- EVERY_NTH]
//! ```
//!
//! Sizes only (the engine is deterministic), so one pass is exact; `EVERY_NTH` (default 4)
//! takes every n-th frame to keep the run short.

use streamwire_codec::budget::WIDTH_STEPS;
use streamwire_codec::jpeg::{EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, encode};
use streamwire_testdata as data;

fn main() {
    let every: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    let decoder = JpegDecoder::default();
    let mut frames = Vec::new();
    for index in (0..data::COCKATOO_FRAMES).step_by(every.max(1)) {
        let mut pixels = Vec::new();
        decoder
            .decode_into(
                &data::read(&data::cockatoo_frame(index)),
                PixelFormat::Rgb8,
                &mut pixels,
            )
            .expect("a real frame decodes");
        frames.push(pixels);
    }
    let mean_size = |options: &EncodeOptions| -> f64 {
        let total: usize = frames
            .iter()
            .map(|pixels| {
                let image = PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, pixels)
                    .expect("a 1280x720 frame");
                encode(&image, options).expect("encodes").data.len()
            })
            .sum();
        total as f64 / frames.len() as f64
    };
    let reference = mean_size(&EncodeOptions::default());
    println!(
        "{} frames; q75 full width: {reference:.0} bytes/frame",
        frames.len()
    );
    println!("quality  bytes/frame  relative to q75");
    for quality in (5..=100).step_by(5) {
        let size = mean_size(&EncodeOptions {
            quality,
            ..EncodeOptions::default()
        });
        println!("{quality:>7}  {size:>11.0}  {:.3}", size / reference);
    }
    println!("width (at q20)  bytes/frame  relative to q20 full width");
    let q20 = mean_size(&EncodeOptions {
        quality: 20,
        ..EncodeOptions::default()
    });
    for (num, den) in WIDTH_STEPS {
        let width = 1280 * num / den;
        let size = mean_size(&EncodeOptions {
            quality: 20,
            max_width: Some(width),
            ..EncodeOptions::default()
        });
        println!("{width:>14}  {size:>11.0}  {:.3}", size / q20);
    }
}
