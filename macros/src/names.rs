//! Small helpers on names: stream-name rules, "did you mean", and printing types.

/// Checks a stream name against the rules the graph also applies at run time: ASCII
/// letters, digits, `_` and `/`; not empty; no empty segment; may start with `/`
/// (absolute, not prefixed by namespaces). Returns why a name is refused.
pub(crate) fn stream_name_problem(name: &str) -> Option<String> {
    let relative = name.strip_prefix('/').unwrap_or(name);
    if relative.is_empty() {
        return Some("a stream name cannot be empty".to_owned());
    }
    if let Some(c) = relative
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '/'))
    {
        return Some(format!(
            "`{c}` is not allowed in a stream name (use ASCII letters, digits, `_` and `/`)"
        ));
    }
    if relative.split('/').any(str::is_empty) {
        return Some(
            "a stream name cannot have an empty segment (`//` or a trailing `/`)".to_owned(),
        );
    }
    None
}

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
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

/// A type as a person writes it: `Out<Compressed<Image>>`, not `Out < Compressed < Image > >`.
pub(crate) fn type_to_string(ty: &syn::Type) -> String {
    let raw = quote::quote!(#ty).to_string();
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let glued = |ch: Option<char>| matches!(ch, Some('<' | '>' | ':' | '&'));
            // Keep the space after a comma; drop it around brackets and paths.
            if prev == Some(',') || !(glued(prev) || glued(next) || next == Some(',')) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_names() {
        assert_eq!(stream_name_problem("color_image"), None);
        assert_eq!(stream_name_problem("/tf"), None);
        assert_eq!(stream_name_problem("front/color_image"), None);
        assert!(stream_name_problem("").is_some());
        assert!(stream_name_problem("/").is_some());
        assert!(stream_name_problem("a//b").is_some());
        assert!(stream_name_problem("a/").is_some());
        assert!(stream_name_problem("a-b").is_some());
        assert!(stream_name_problem("a*").is_some());
    }

    #[test]
    fn typo_suggestions() {
        let keys = ["name", "optional", "lossless", "depth"];
        assert_eq!(did_you_mean("nmae", &keys), Some("name"));
        assert_eq!(did_you_mean("optinal", &keys), Some("optional"));
        assert_eq!(did_you_mean("colour", &keys), None);
    }

    #[test]
    fn types_print_like_source() {
        let ty: syn::Type = syn::parse_quote!(Out<Compressed<Image, Jpeg>>);
        assert_eq!(type_to_string(&ty), "Out<Compressed<Image, Jpeg>>");
        let ty: syn::Type = syn::parse_quote!(streamwire::In<crate::msgs::Image>);
        assert_eq!(type_to_string(&ty), "streamwire::In<crate::msgs::Image>");
    }
}
