//! Fuzzes the H.264 decoder path: the input is a sequence of access units separated by
//! the byte string `AU!`, fed to one decoder (limits 512x512) in turn. Each must decode or
//! be an error; a panic (one caught inside is `H264Error::Engine`) or a crash fails.
//! Seeds: any Annex B stream of ours, e.g. the access units `tests/h264.rs` encodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use streamwire_codec::h264::{DecodeLimits, H264Decoder, H264Error};
use streamwire_codec::jpeg::PixelFormat;

fuzz_target!(|input: &[u8]| {
    let mut decoder = H264Decoder::new(DecodeLimits {
        max_width: 512,
        max_height: 512,
    });
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let end = rest.windows(3).position(|w| w == b"AU!").unwrap_or(rest.len());
        let (unit, tail) = rest.split_at(end);
        if let Err(H264Error::Engine(reason)) =
            decoder.decode_rgb(unit, PixelFormat::Rgb8, None, &mut out)
        {
            panic!("engine failure: {reason}");
        }
        rest = tail.get(3..).unwrap_or_default();
    }
});
