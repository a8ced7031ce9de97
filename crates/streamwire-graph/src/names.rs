//! Names of instances and streams: validation and namespace resolution.

/// Why `name` is not a valid stream name, if it is not: ASCII letters, digits, `_` and `/`,
/// no empty segment; a leading `/` marks an absolute name (not prefixed by namespaces).
/// The derive applies the same rule at compile time.
pub(crate) fn stream_name_problem(name: &str) -> Option<String> {
    let relative = name.strip_prefix('/').unwrap_or(name);
    if relative.is_empty() {
        return Some("a stream name cannot be empty".to_owned());
    }
    segments_problem(relative, "stream")
}

/// Why `name` is not a valid instance or namespace name: segments of ASCII letters,
/// digits and `_`, joined by `/`.
pub(crate) fn instance_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an instance name cannot be empty".to_owned());
    }
    segments_problem(name, "instance")
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

/// `name` resolved in `namespace`: absolute names (`/tf`) lose their `/`; relative ones
/// are prefixed (`color_image` in `left` is `left/color_image`).
pub(crate) fn resolve(namespace: &str, name: &str) -> String {
    match name.strip_prefix('/') {
        Some(absolute) => absolute.to_owned(),
        None if namespace.is_empty() => name.to_owned(),
        None => format!("{namespace}/{name}"),
    }
}

/// `a/b` joined from a namespace and a name in it.
pub(crate) fn join(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// The candidate closest to `word`, if close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(
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
    fn resolution_follows_ros_namespaces() {
        assert_eq!(resolve("", "color_image"), "color_image");
        assert_eq!(resolve("left", "color_image"), "left/color_image");
        assert_eq!(
            resolve("robot/left", "color_image"),
            "robot/left/color_image"
        );
        assert_eq!(resolve("left", "/tf"), "tf");
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(stream_name_problem("a/b_c"), None);
        assert_eq!(stream_name_problem("/tf"), None);
        assert!(stream_name_problem("a b").is_some());
        assert!(stream_name_problem("a//b").is_some());
        assert!(stream_name_problem("").is_some());
        assert_eq!(instance_name_problem("front_cam"), None);
        assert!(instance_name_problem("/front_cam").is_some());
        assert!(instance_name_problem("front-cam").is_some());
    }

    #[test]
    fn suggestions() {
        let streams = ["color_image", "depth", "points"];
        assert_eq!(did_you_mean("colour_image", streams), Some("color_image"));
        assert_eq!(did_you_mean("odometry", streams), None);
        assert_eq!(
            did_you_mean("depth", streams),
            None,
            "an exact match is not a suggestion"
        );
    }
}
