//! The check every blueprint fuzz input gets, shared by the fuzz target and the corpus
//! replay test (`tests/blueprint_fuzz_corpus.rs`): the text (not UTF-8 is left out: a
//! file is read as text) is loaded by streamwire-graph's parser with the registry of the
//! built-in modules linked. Loading must return (never panic), and the heap the counting
//! allocator saw at its peak must stay within a limit linear in the text's length (an
//! alias does not multiply what a file holds). A file that loads is saved as YAML and as
//! JSON, each loads again and saves the same, and it builds (or says why not).

use std::path::Path;

use streamwire_graph::{BlueprintFile, FileFormat};
use streamwire_testdata::alloc::peak_during;

/// Heap any load may take, whatever the text (the registry's names, the parser's own).
pub(crate) const HEAP_BASE: usize = 256 * 1024;

/// Heap per byte of text a load may take on top of [`HEAP_BASE`]: a scalar of one
/// character is a node with its place, a value, and a module's field.
pub(crate) const HEAP_PER_BYTE: usize = 512;

/// Keeps the built-in modules in the binary: a crate whose items nothing uses is left out
/// of it, and their registrations with it (the registry would be empty).
pub(crate) fn link_builtin_modules() {
    use streamwire_modules::{
        BusySink, ByteConsumer, Detector, Mapper, RecordingSink, ReplaySource, SimCamera, SimDepth,
        SimLidar, SimOdometry,
    };
    let defaults: [fn() -> Box<dyn std::any::Any>; 10] = [
        || Box::new(BusySink::default()),
        || Box::new(ByteConsumer::default()),
        || Box::new(Detector::default()),
        || Box::new(Mapper::default()),
        || Box::new(RecordingSink::default()),
        || Box::new(ReplaySource::default()),
        || Box::new(SimCamera::default()),
        || Box::new(SimDepth::default()),
        || Box::new(SimLidar::default()),
        || Box::new(SimOdometry::default()),
    ];
    std::hint::black_box(defaults);
}

/// What loading one input came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not UTF-8.
    NotText,
    /// Refused by the parser.
    Refused,
    /// Loaded; the blueprint does not build.
    Unbuilt,
    /// Loaded and built.
    Built,
}

fn load(text: &str) -> Result<BlueprintFile, streamwire_graph::FileError> {
    BlueprintFile::parse(text, FileFormat::Yaml, Path::new("fuzz.yaml"))
}

/// Loads `input`; panics (a fuzz finding) when the heap peak passes the limit or a file
/// that loaded does not save and load again the same.
pub(crate) fn check(input: &[u8]) -> Outcome {
    link_builtin_modules();
    let Ok(text) = std::str::from_utf8(input) else {
        return Outcome::NotText;
    };
    let (loaded, peak) = peak_during(|| load(text));
    let limit = HEAP_BASE + HEAP_PER_BYTE * text.len();
    assert!(
        peak <= limit,
        "loading {} bytes took {peak} bytes of heap, over the limit of {limit}",
        text.len()
    );
    let file = match loaded {
        Ok(file) => file,
        Err(error) => {
            let _ = error.to_string();
            return Outcome::Refused;
        }
    };
    let yaml = file
        .to_yaml()
        .unwrap_or_else(|error| panic!("a file that loaded does not save as YAML: {error}"));
    let json = file
        .to_json()
        .unwrap_or_else(|error| panic!("a file that loaded does not save as JSON: {error}"));
    for saved in [&yaml, &json] {
        let again = load(saved)
            .unwrap_or_else(|error| panic!("a saved file does not load: {error}\n{saved}"));
        let resaved = again.to_yaml().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(resaved, yaml, "a saved file loads as another");
    }
    match file.into_blueprint().build() {
        Ok(_) => Outcome::Built,
        Err(error) => {
            let _ = error.to_string();
            Outcome::Unbuilt
        }
    }
}
