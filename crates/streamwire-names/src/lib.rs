//! The naming rules of streamwire, in one place.
//!
//! `#[derive(Module)]` checks `#[port(name = "...")]` at compile time and the blueprint
//! builder checks remaps and instance names at build time; both call these functions, so
//! a name accepted by one is accepted by the other. No dependencies: the proc-macro crate
//! uses it too.
//!
//! ```
//! use streamwire_names::{did_you_mean, stream_name_problem};
//!
//! assert_eq!(stream_name_problem("left/color_image"), None);
//! assert_eq!(stream_name_problem("/tf"), None); // absolute: not prefixed by namespaces
//! assert!(stream_name_problem("color image").is_some());
//! assert_eq!(did_you_mean("colour_image", ["color_image", "depth"]), Some("color_image"));
//! ```

/// Why `name` is not a valid stream name, if it is not: segments of ASCII letters,
/// digits and `_`, joined by `/`; a leading `/` marks an absolute name.
pub fn stream_name_problem(name: &str) -> Option<String> {
    let relative = name.strip_prefix('/').unwrap_or(name);
    if relative.is_empty() {
        return Some("a stream name cannot be empty".to_owned());
    }
    segments_problem(relative, "stream")
}

/// Why `name` is not a valid instance or namespace name, if it is not: segments of ASCII
/// letters, digits and `_`, joined by `/` (no leading `/`).
pub fn instance_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an instance name cannot be empty".to_owned());
    }
    segments_problem(name, "instance")
}

/// Why `name` cannot be one chunk of a zenoh key expression, if it cannot: a placement's
/// host or process name is one (`<run>/<host>/<process>/...`). A chunk is not empty and
/// holds no `/`; zenoh reserves `*` (wildcards), `$` (`$*` sub-chunk wildcards), `#` and
/// `?` (reserved for selectors and future use) and a leading `@` (verbatim chunks, the
/// admin space `@/...`), so a name with one of them would match other keys or none.
pub fn key_chunk_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a name cannot be empty".to_owned());
    }
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, '/' | '*' | '$' | '#' | '?') || c.is_whitespace() || c.is_control())
    {
        return Some(format!(
            "`{}` is reserved in zenoh key expressions (`/` separates, `*` and `$` are \
             wildcards, `#` and `?` are reserved): use letters, digits, `_`, `-` and `.`",
            c.escape_debug()
        ));
    }
    if name.starts_with('@') {
        return Some(
            "a leading `@` makes a verbatim chunk in zenoh key expressions (the admin space \
             `@/...`): start with a letter or digit"
                .to_owned(),
        );
    }
    None
}

fn segments_problem(name: &str, what: &str) -> Option<String> {
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '/'))
    {
        return Some(format!(
            "`{c}` is not allowed in {what} names (use ASCII letters, digits, `_` and `/`)"
        ));
    }
    if name.split('/').any(str::is_empty) {
        return Some(format!(
            "{what} names cannot have an empty segment (`//`, or a leading or trailing `/`)"
        ));
    }
    None
}

/// The candidate closest to `word` by edit distance, if close enough to be a likely typo
/// (at most 2 edits, or a third of the candidate's length). An exact match is not a
/// suggestion.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, c)| *d > 0 && *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_chunks_refuse_what_zenoh_reserves() {
        for ok in ["robot", "sensors", "base-station.local", "laptop_2", "a@b"] {
            assert_eq!(key_chunk_problem(ok), None, "{ok}");
        }
        for bad in [
            "", "**", "robot*", "$*", "a#b", "what?", "@cluster", "a/b", "a b", "\t",
        ] {
            assert!(key_chunk_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn stream_names() {
        assert_eq!(stream_name_problem("color_image"), None);
        assert_eq!(stream_name_problem("/tf"), None);
        assert_eq!(stream_name_problem("front/color_image"), None);
        for bad in ["", "/", "a//b", "a/", "a-b", "a*", "a b", "é"] {
            assert!(stream_name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn instance_names() {
        assert_eq!(instance_name_problem("front_cam"), None);
        assert_eq!(instance_name_problem("left/cam"), None);
        assert!(instance_name_problem("/front_cam").is_some());
        assert!(instance_name_problem("front-cam").is_some());
        assert!(instance_name_problem("").is_some());
    }

    #[test]
    fn suggestions() {
        let keys = ["name", "optional", "lossless", "depth"];
        assert_eq!(did_you_mean("nmae", keys), Some("name"));
        assert_eq!(did_you_mean("optinal", keys), Some("optional"));
        assert_eq!(did_you_mean("colour", keys), None);
        assert_eq!(
            did_you_mean("depth", keys),
            None,
            "an exact match is not a suggestion"
        );
    }
}
