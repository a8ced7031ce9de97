//! Encodes (or decodes) one real 720p frame once with one contender, for instruction counts
//! that do not depend on the machine's load:
//!
//! ```text
//! cargo build --release -p streamwire-codec --features turbo --example encode_once
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
//!     target/release/examples/encode_once CONTENDER
//! ```
//!
//! CONTENDER is `none` (load the frame only: subtract its count from the others), `unsplit`,
//! `strips1`, `strips2`, `turbo` (libjpeg-turbo single-threaded through `turbojpeg`),
//! `turbo-strips2` (the `turbo` backend, feature `turbo`), `decode-seq`, `decode-par2`,
//! `decode-turbo`. Callgrind's total counts every thread, so it is the CPU work of the
//! contender, not its wall time.

use std::num::NonZeroUsize;

use streamwire_codec::jpeg::{
    Backend, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Threads, encode,
};
use streamwire_testdata as data;

fn main() {
    let contender = std::env::args().nth(1).unwrap_or_else(|| "none".to_owned());
    let two = Threads::Fixed(NonZeroUsize::new(2).expect("nonzero"));
    let one = Threads::Fixed(NonZeroUsize::MIN);
    let file = data::read(&data::cockatoo_frame(0));
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    let source = sequential
        .decode(&file, PixelFormat::Rgb8)
        .expect("decode source");
    let pixels =
        PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, &source.data).expect("layout");
    let ours = |threads, backend| {
        let options = EncodeOptions {
            threads,
            backend,
            ..EncodeOptions::default()
        };
        encode(&pixels, &options).expect("encode").data
    };
    let mut buffer = Vec::new();
    let bytes = match contender.as_str() {
        "none" => 0,
        "unsplit" => ours(Threads::Unsplit, Backend::JpegEncoder).len(),
        "strips1" => ours(one, Backend::JpegEncoder).len(),
        "strips2" => ours(two, Backend::JpegEncoder).len(),
        "turbo-strips2" => ours(two, Backend::Turbo).len(),
        "turbo" => {
            let image = turbojpeg::Image {
                pixels: source.data.as_slice(),
                width: 1280,
                pitch: 1280 * 3,
                height: 720,
                format: turbojpeg::PixelFormat::RGB,
            };
            turbojpeg::compress(image, 75, turbojpeg::Subsamp::Sub2x2)
                .expect("turbo")
                .len()
        }
        decode => {
            // The file to decode is made outside the counted difference by also running
            // `strips1`, which encodes the same file: subtract that count.
            let strips = ours(one, Backend::JpegEncoder);
            match decode {
                "decode-seq" => sequential.decode_into(&strips, PixelFormat::Rgb8, &mut buffer),
                "decode-par2" => JpegDecoder::default().with_threads(two).decode_into(
                    &strips,
                    PixelFormat::Rgb8,
                    &mut buffer,
                ),
                "decode-turbo" => {
                    let image = turbojpeg::decompress(&strips, turbojpeg::PixelFormat::RGB)
                        .expect("turbo decode");
                    buffer = image.pixels;
                    Ok(sequential.read_header(&strips).expect("header"))
                }
                other => panic!("unknown contender {other}"),
            }
            .expect("decode");
            buffer.len()
        }
    };
    println!("{contender}: {bytes} bytes");
}
