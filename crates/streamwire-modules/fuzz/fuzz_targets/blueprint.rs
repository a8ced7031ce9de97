//! Fuzzes blueprint files, YAML and JSON, through streamwire-graph's parser with the
//! built-in modules registered (`../check.rs`), with a counting allocator.
#![no_main]

#[path = "../check.rs"]
mod check;

use libfuzzer_sys::fuzz_target;
use streamwire_testdata::alloc::CountingAlloc;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fuzz_target!(|input: &[u8]| {
    check::check(input);
});
