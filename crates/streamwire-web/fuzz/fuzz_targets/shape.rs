//! Fuzzes the web relay's reading of a ROS 2 message's CDR into its rosbridge shape with
//! typed arrays, written as JSON and CBOR (`../check.rs`), with a counting allocator.
#![no_main]

#[path = "../check.rs"]
mod check;

use libfuzzer_sys::fuzz_target;
use streamwire_testdata::alloc::CountingAlloc;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fuzz_target!(|input: &[u8]| {
    check::shape(input);
});
