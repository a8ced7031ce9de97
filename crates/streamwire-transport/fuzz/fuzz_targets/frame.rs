//! Fuzzes the wire frame parser, every version, and the message read from it through the
//! registry of streamwire-msgs, with a counting allocator (`../check.rs`).
#![no_main]

#[path = "../check.rs"]
mod check;

use libfuzzer_sys::fuzz_target;
use streamwire_testdata::alloc::CountingAlloc;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

// The messages a frame may carry register themselves by linking their crate.
use streamwire_msgs as _;

fuzz_target!(|input: &[u8]| {
    check::check(input);
});
