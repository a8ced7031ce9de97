//! Replays the encoder fuzz corpus (`fuzz/corpus/encode`) through the fuzz target's own check
//! (`fuzz/encode_check.rs`): no input panics, refuses valid options, exceeds the output bound
//! or writes a file zune-jpeg rejects. Inputs naming a backend this build lacks check that it
//! is refused as unavailable; CI builds every backend.

#[path = "../fuzz/encode_check.rs"]
mod encode_check;

#[test]
fn encode_fuzz_corpus_replays_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/encode");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        encode_check::check(&input);
        inputs += 1;
    }
    println!("replayed {inputs} inputs from {}", dir.display());
    assert!(inputs >= 40, "corpus has only {inputs} inputs");
}
