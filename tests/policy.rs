//! The failure policy (ARCHITECTURE.md) as checks on the source tree: what clippy cannot
//! see. Every `unwrap_or_default` in non-test code says why a default loses nothing
//! (`// infallible: ...` on its line or the line above); anything else hides a failure and
//! must become a counted, logged error.

use std::path::{Path, PathBuf};

/// Where non-test code lives: every crate's `src`, the macros, the examples.
fn source_roots(workspace: &Path) -> Vec<PathBuf> {
    let mut roots = vec![workspace.join("macros/src")];
    for parent in ["crates", "examples"] {
        let Ok(entries) = std::fs::read_dir(workspace.join(parent)) else {
            continue;
        };
        roots.extend(
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("src"))
                .filter(|p| p.is_dir()),
        );
    }
    roots
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines (1-based) of `text` with an `unwrap_or_default` that does not say why it is
/// infallible. Comments (doc examples included) and `#[cfg(test)]` modules, which close a
/// file here by convention, are not code the policy covers.
fn unexplained_defaults(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut previous = "";
    for (index, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if !code.starts_with("//")
            && line.contains("unwrap_or_default")
            && !line.contains("infallible:")
            && !previous.trim_start().starts_with("// infallible:")
        {
            found.push(index + 1);
        }
        previous = line;
    }
    found
}

#[test]
fn every_unwrap_or_default_outside_tests_says_why_it_is_infallible() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace");
    let mut files = Vec::new();
    for root in source_roots(workspace) {
        rust_files(&root, &mut files);
    }
    assert!(files.len() > 100, "only {} source files found", files.len());
    let mut unexplained = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        for line in unexplained_defaults(&text) {
            unexplained.push(format!("{}:{line}", file.display()));
        }
    }
    assert!(
        unexplained.is_empty(),
        "`unwrap_or_default` without an `// infallible: ...` comment (say why, or make the \
         failure a counted, logged error):\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn the_check_finds_an_unexplained_default_and_accepts_explained_ones() {
    let text = "\
fn a(x: Option<u8>) -> u8 {
    x.unwrap_or_default()
}
fn b(x: Option<u8>) -> u8 {
    // infallible: the caller always passes Some
    x.unwrap_or_default()
}
fn c(x: Option<u8>) -> u8 {
    x.unwrap_or_default() // infallible: likewise
}
/// ```
/// let y = Some(1).unwrap_or_default();
/// ```
fn d() {}
#[cfg(test)]
mod tests {
    fn e(x: Option<u8>) -> u8 { x.unwrap_or_default() }
}
";
    assert_eq!(unexplained_defaults(text), vec![2]);
}
