//! The docs state what a test can check only where a test checks it: the number of
//! compile-fail cases the guide gives, the compiler's and the planner's words where a doc
//! quotes them (README, RFC, ARCHITECTURE, BENCHMARKS, the guide and every doc comment),
//! the guide's table of crates against the workspace's packages, and its table of
//! commands against the stock binary's.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

#[path = "common/metadata.rs"]
mod metadata;

use metadata::workspace;

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

/// The guide's chapters (docs/guide/src), as paths from the workspace's root.
fn guide_chapters() -> Vec<String> {
    files(&workspace().join("docs/guide/src"), &[".md"])
        .into_iter()
        .filter_map(|path| {
            let path = path.strip_prefix(workspace()).ok()?;
            Some(path.to_string_lossy().into_owned())
        })
        .collect()
}

/// The numbers the docs give before `what` ("28 compile-fail cases"), with the file.
fn numbers_before(what: &str) -> Vec<(String, usize)> {
    let mut stated = Vec::new();
    let mut docs: Vec<String> = ["README.md", "RFC.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .map(str::to_owned)
        .to_vec();
    docs.extend(guide_chapters());
    for doc in docs {
        let text = one_line(&read(&workspace().join(&doc)));
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
                stated.push((doc.clone(), number));
            }
            rest = &rest[at + what.len()..];
        }
    }
    stated
}

#[test]
fn the_guide_gives_the_number_of_compile_fail_cases_there_are() {
    let cases = compile_fail_cases().len();
    let stated = numbers_before(" compile-fail cases");
    let concepts = "docs/guide/src/concepts.md";
    assert!(
        stated.iter().any(|(doc, _)| doc == concepts),
        "{concepts} gives no number of compile-fail cases: {stated:?}"
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

/// The rows of the first table after `doc`'s heading `heading` (`# <heading>` at any
/// level), each as its cells with backticks and spaces trimmed, without the header and the
/// separator.
fn table_rows(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let text = read(&workspace().join(doc));
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|line| line.starts_with('#') && line.trim_start_matches('#').trim() == heading)
        .unwrap_or_else(|| panic!("{doc} has no heading \"{heading}\""));
    lines
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // the header and the separator
        .map(|row| {
            let cells: Vec<&str> = row.split('|').collect();
            // `| a | b |` splits into an empty cell at both ends.
            cells[1..cells.len().saturating_sub(1)]
                .iter()
                .map(|cell| cell.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect()
}

/// Every package of the workspace with its folder relative to the workspace's root
/// (`crates/streamwire-core`, `macros`), from `cargo metadata --no-deps` (no resolution,
/// no network).
fn workspace_packages() -> BTreeSet<(String, String)> {
    let metadata = metadata::cargo_metadata();
    let root = Path::new(
        metadata["workspace_root"]
            .as_str()
            .expect("a workspace root"),
    );
    let packages = metadata["packages"].as_array().expect("a list of packages");
    packages
        .iter()
        .map(|package| {
            let name = package["name"].as_str().expect("a name").to_owned();
            let manifest = Path::new(package["manifest_path"].as_str().expect("a manifest"));
            let folder = manifest
                .parent()
                .and_then(|dir| dir.strip_prefix(root).ok())
                .expect("a package's folder is in the workspace");
            (name, folder.to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn the_guide_names_every_package_of_the_workspace_with_its_folder() {
    let doc = "docs/guide/src/crates.md";
    let rows = table_rows(doc, "The crates");
    let in_guide: BTreeSet<(String, String)> = rows
        .iter()
        .map(|cells| (cells[0].clone(), cells[1].clone()))
        .collect();
    assert_eq!(rows.len(), in_guide.len(), "{doc} names a package twice");
    let packages = workspace_packages();
    let missing: Vec<_> = packages.difference(&in_guide).collect();
    let unknown: Vec<_> = in_guide.difference(&packages).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "{doc}'s table lacks {missing:?} (package, folder) and names {unknown:?}, which are \
         not packages of the workspace (cargo metadata)"
    );
}

/// The commands of the stock binary, as its test snapshots `streamwire --help`
/// (crates/streamwire-bin/tests/stock.rs, `the_stock_binary_has_these_commands`),
/// without clap's own `help`.
fn stock_commands() -> BTreeSet<String> {
    let path = workspace().join("crates/streamwire-bin/tests/snapshots/stock__commands.snap");
    let snapshot = read(&path);
    // An insta snapshot: a `---` header of metadata, then the content.
    let content = snapshot
        .splitn(3, "---\n")
        .nth(2)
        .unwrap_or_else(|| panic!("{}: no snapshot header", path.display()));
    content
        .lines()
        .map(str::trim)
        .filter(|name| !name.is_empty() && *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_guide_lists_every_command_of_the_stock_binary() {
    let doc = "docs/guide/src/cli.md";
    let in_guide: BTreeSet<String> = table_rows(doc, "The commands")
        .into_iter()
        .map(|cells| cells[0].clone())
        .collect();
    let commands = stock_commands();
    assert!(commands.contains("run"), "no `run` in {commands:?}");
    let missing: Vec<_> = commands.difference(&in_guide).collect();
    let unknown: Vec<_> = in_guide.difference(&commands).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "{doc}'s table of commands lacks {missing:?} and names {unknown:?}, which \
         `streamwire --help` does not list"
    );
}

/// A heading's anchor as GitHub and mdBook make it: lower case, letters, digits, `-` and
/// `_` kept, white space made `-`, everything else (backticks, dots, brackets) left out.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            c if c.is_whitespace() => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors of `doc`'s headings (`#` to `######` outside code blocks).
fn anchors(doc: &Path) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut in_code = false;
    for line in read(doc).lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            let heading = line.trim_start_matches('#');
            if heading.starts_with(' ') {
                anchors.insert(anchor_of(heading));
            }
        }
    }
    anchors
}

/// The relative links of `text` to a markdown file with an anchor (`[x](file.md#anchor)`,
/// `[x](#anchor)`), as (file, anchor); web links left out.
fn links_with_anchors(text: &str) -> Vec<(String, String)> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let target = &text[at + 2..];
            let target = &target[..target.find(')')?];
            let (file, anchor) = target.split_once('#')?;
            let local = !file.contains("://") && (file.is_empty() || file.ends_with(".md"));
            local.then(|| (file.to_owned(), anchor.to_owned()))
        })
        .collect()
}

/// mdbook-linkcheck (in `.ci/run`) checks that a linked file exists, not its anchor: this
/// checks the anchors of every link in the README, BENCHMARKS.md and the guide.
#[test]
fn links_to_a_heading_name_one_that_exists() {
    let root = workspace();
    let mut docs: Vec<PathBuf> = ["README.md", "BENCHMARKS.md"]
        .iter()
        .map(|doc| root.join(doc))
        .collect();
    docs.extend(files(&root.join("docs/guide/src"), &[".md"]));
    let mut checked = 0;
    let mut broken = Vec::new();
    for doc in &docs {
        for (file, anchor) in links_with_anchors(&read(doc)) {
            let target = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().expect("a doc is in a folder").join(&file)
            };
            checked += 1;
            if !target.is_file() || !anchors(&target).contains(&anchor) {
                broken.push(format!("{}: {file}#{anchor}", doc.display()));
            }
        }
    }
    assert!(checked > 0, "no link with an anchor in {docs:?}");
    assert!(
        broken.is_empty(),
        "links to a heading that does not exist:\n{}",
        broken.join("\n")
    );
}
