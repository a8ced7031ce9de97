//! Fuzzes the JPEG encoder: random sizes, pixel formats, options and backends (every backend
//! the fuzz crate builds: all of them) must never panic, never refuse valid options, never
//! exceed `max_encoded_len`, and write files zune-jpeg decodes (`../encode_check.rs`).
#![no_main]

#[path = "../encode_check.rs"]
mod encode_check;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    encode_check::check(input);
});
