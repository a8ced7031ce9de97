//! Replays the decoder fuzz corpus (`fuzz/corpus/decode`) through the fuzz targets' own check
//! (`fuzz/check.rs`), sequentially and in parallel, with the targets' counting allocator: no
//! input panics, reports a caught panic, or takes more heap than the fuzzed limits. Its own
//! test binary with a single test, because the allocator counts the whole process.
#![expect(
    unsafe_code,
    reason = "the fuzz targets' counting allocator implements the unsafe GlobalAlloc trait"
)]

#[path = "../fuzz/alloc.rs"]
mod alloc;
#[path = "../fuzz/check.rs"]
mod check;

use std::num::NonZeroUsize;

use streamwire_codec::jpeg::Threads;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

#[test]
fn fuzz_corpus_replays_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        for threads in [
            Threads::Unsplit,
            Threads::Fixed(NonZeroUsize::MIN.saturating_add(2)),
        ] {
            check::check(&input, threads, alloc::peak_during);
        }
        inputs += 1;
    }
    println!("replayed {inputs} inputs from {}", dir.display());
    assert!(inputs >= 40, "corpus has only {inputs} inputs");
}
