//! Printing types as people write them. The naming rules themselves live in
//! `streamwire-names`, shared with the blueprint builder.

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
    fn types_print_like_source() {
        let ty: syn::Type = syn::parse_quote!(Out<Compressed<Image, Jpeg>>);
        assert_eq!(type_to_string(&ty), "Out<Compressed<Image, Jpeg>>");
        let ty: syn::Type = syn::parse_quote!(streamwire::In<crate::msgs::Image>);
        assert_eq!(type_to_string(&ty), "streamwire::In<crate::msgs::Image>");
    }
}
