//! The docs state what a test can check only where a test checks it: the number of
//! compile-fail cases the README gives, and the compiler's and the planner's words where a
//! doc quotes them (README, RFC, ARCHITECTURE and every doc comment).

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace's root (this crate is `tests/` in it).
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace's root")
}

/// Every file under `dir` (recursively) whose name ends in one of `suffixes`, leaving out
/// build output, git's folder and the interop tests' installed packages.
fn files(dir: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if path.is_dir() {
                if !matches!(name, "target" | ".git" | "node_modules" | ".venv") {
                    pending.push(path);
                }
            } else if suffixes.iter().any(|suffix| name.ends_with(suffix)) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` with every run of white space (line ends and indentation included) made one
/// space, so that a quote wrapped over lines reads as one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The compile-fail cases, as `ui.rs` runs them: `ui/<area>/fail/<case>.rs`.
fn compile_fail_cases() -> Vec<PathBuf> {
    files(&workspace().join("tests/ui"), &[".rs"])
        .into_iter()
        .filter(|path| path.parent().and_then(Path::file_name) == Some("fail".as_ref()))
        .collect()
}

/// The numbers the docs give before `what` ("28 compile-fail cases"), with the file.
fn numbers_before(what: &str) -> Vec<(String, usize)> {
    let mut stated = Vec::new();
    for doc in ["README.md", "RFC.md", "ARCHITECTURE.md"] {
        let text = one_line(&read(&workspace().join(doc)));
        let mut rest = text.as_str();
        while let Some(at) = rest.find(what) {
            let number: String = rest[..at]
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if let Ok(number) = number.parse() {
                stated.push((doc.to_owned(), number));
            }
            rest = &rest[at + what.len()..];
        }
    }
    stated
}

#[test]
fn the_readme_gives_the_number_of_compile_fail_cases_there_are() {
    let cases = compile_fail_cases().len();
    let stated = numbers_before(" compile-fail cases");
    assert!(
        stated.iter().any(|(doc, _)| doc == "README.md"),
        "README.md gives no number of compile-fail cases: {stated:?}"
    );
    for (doc, number) in stated {
        assert_eq!(
            number, cases,
            "{doc} says {number} compile-fail cases; tests/ui has {cases}"
        );
    }
}

/// What the compiler and the planner say: the first line of every compile-fail case's
/// error (`error[E0277]: <message>`) and every snapshot's text, each on one line.
fn printed_texts() -> Vec<String> {
    let root = workspace();
    let mut texts = Vec::new();
    for dir in ["tests", "crates", "examples", "macros"] {
        for path in files(&root.join(dir), &[".stderr", ".snap"]) {
            texts.push(one_line(&read(&path)));
        }
    }
    texts
}

/// The words that open each compile-fail error's message, up to its first code span, at
/// most three and at least two ("an output of", "JPEG carries 8-bit"): a doc that quotes
/// text opening with them is quoting that error.
fn error_openings() -> Vec<String> {
    let mut openings = Vec::new();
    for path in files(&workspace().join("tests/ui"), &[".stderr"]) {
        for line in read(&path).lines().filter(|line| line.starts_with("error")) {
            let Some((_, message)) = line.split_once(": ") else {
                continue;
            };
            let before_code = message.split('`').next().unwrap_or_default();
            let words: Vec<&str> = before_code.split_whitespace().take(3).collect();
            if words.len() >= 2 {
                openings.push(words.join(" "));
            }
        }
    }
    openings.sort();
    openings.dedup();
    openings
}

/// The prose of every doc: the markdown files, and the doc comments of the Rust sources.
fn docs() -> Vec<(PathBuf, String)> {
    let root = workspace();
    let mut docs: Vec<(PathBuf, String)> = files(root, &[".md"])
        .into_iter()
        .map(|path| {
            let text = one_line(&read(&path));
            (path, text)
        })
        .collect();
    for dir in ["crates", "macros", "examples", "tests"] {
        for path in files(&root.join(dir), &[".rs"]) {
            let comments: Vec<String> = read(&path)
                .lines()
                .filter_map(|line| {
                    let line = line.trim_start();
                    line.strip_prefix("///")
                        .or_else(|| line.strip_prefix("//!"))
                        .map(str::to_owned)
                })
                .collect();
            docs.push((path, one_line(&comments.join(" "))));
        }
    }
    docs
}

#[test]
fn quoted_errors_are_what_the_compiler_or_the_planner_prints() {
    let printed = printed_texts();
    let openings = error_openings();
    assert!(
        openings.iter().any(|o| o == "an output of"),
        "the mismatched `connect` case's error opens with \"an output of\": {openings:?}"
    );
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in docs() {
        for opening in &openings {
            let needle = format!("\"{opening}");
            for (at, _) in text.match_indices(&needle) {
                let quote = &text[at + 1..];
                let quote = &quote[..quote.find('"').unwrap_or(quote.len())];
                checked += 1;
                if !printed.iter().any(|p| p.contains(quote)) {
                    wrong.push(format!("{}: \"{quote}\"", path.display()));
                }
            }
        }
    }
    assert!(checked > 0, "no doc quotes a compile error");
    assert!(
        wrong.is_empty(),
        "quoted as an error, printed by no compile-fail case (tests/ui/*/fail/*.stderr) \
         and no snapshot:\n{}",
        wrong.join("\n")
    );
}
