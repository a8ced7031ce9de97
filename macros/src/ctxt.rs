//! Collects every error of one derive, so a user sees all their mistakes in one compile
//! (as serde_derive's `internals/ctxt.rs` does).

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Records an error spanning `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error produced by syn.
    pub(crate) fn syn_error(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// All recorded errors as `compile_error!` invocations (empty when there are none).
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors
            .into_iter()
            .map(syn::Error::into_compile_error)
            .collect()
    }
}
