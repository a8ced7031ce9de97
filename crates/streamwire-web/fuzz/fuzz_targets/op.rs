//! Fuzzes the web relay's rosbridge op parser, JSON text and CBOR frames (`../check.rs`),
//! with a counting allocator.
#![no_main]

#[path = "../check.rs"]
mod check;

use libfuzzer_sys::fuzz_target;
use streamwire_testdata::alloc::CountingAlloc;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fuzz_target!(|input: &[u8]| {
    check::op(input);
});
