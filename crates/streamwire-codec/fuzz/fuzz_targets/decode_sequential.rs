//! Fuzzes the JPEG decoder, sequential (threads: `Threads::Unsplit`), with a counting allocator.
#![no_main]

#[path = "../alloc.rs"]
mod alloc;
#[path = "../check.rs"]
mod check;

use libfuzzer_sys::fuzz_target;
use streamwire_codec::jpeg::Threads;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

fuzz_target!(|input: &[u8]| {
    check::check(input, Threads::Unsplit, alloc::peak_during);
});
