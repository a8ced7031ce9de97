//! `#[derive(Message)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DeriveInput, Ident, LitStr, Path};

use crate::ctxt::Ctxt;
use streamwire_names::did_you_mean;

const MESSAGE_KEYS: &[&str] = &["crate", "name", "kind", "payload_len"];
const KINDS: &[&str] = &["sensor", "state"];

pub(crate) fn expand(input: &DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let mut krate: Path = syn::parse_quote!(::streamwire);
    let mut name: Option<LitStr> = None;
    let mut kind: Option<Ident> = None;
    let mut payload_len: Option<syn::ExprPath> = None;
    for a in input.attrs.iter().filter(|a| a.path().is_ident("message")) {
        let result = a.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                krate = meta.value()?.parse()?;
            } else if meta.path.is_ident("name") {
                let lit: LitStr = meta.value()?.parse()?;
                if let Some(problem) = type_name_problem(&lit.value()) {
                    cx.error_spanned_by(&lit, format!("invalid message type name: {problem}"));
                }
                name = Some(lit);
            } else if meta.path.is_ident("payload_len") {
                payload_len = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("kind") {
                let value: Ident = meta.value()?.parse()?;
                match value.to_string().as_str() {
                    "sensor" => kind = Some(Ident::new("Sensor", value.span())),
                    "state" => kind = Some(Ident::new("State", value.span())),
                    other => {
                        let hint = did_you_mean(other, KINDS.iter().copied())
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            // infallible: no close key is no hint, not a failure
                            .unwrap_or_default();
                        cx.error_spanned_by(
                            &value,
                            format!(
                                "unknown message kind `{other}`{hint}: write `kind = sensor` \
                                 (images, clouds: best effort, newest only) or `kind = state` \
                                 (odometry, poses: reliable, the default)"
                            ),
                        );
                    }
                }
            } else {
                let key = meta
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    // infallible: a path that is not an identifier is an unknown key, reported just below
                    .unwrap_or_default();
                let hint = did_you_mean(&key, MESSAGE_KEYS.iter().copied())
                    .map(|s| format!("; did you mean `{s}`?"))
                    // infallible: no close key is no hint, not a failure
                    .unwrap_or_default();
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "unknown `#[message(..)]` attribute `{key}`{hint} (expected one of: {})",
                        MESSAGE_KEYS.join(", ")
                    ),
                );
                if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    for (index, field) in bytes_fields_without_with(input) {
        let name = field
            .ident
            .as_ref()
            .map_or_else(|| format!("field {index}"), |i| format!("`{i}`"));
        cx.error_spanned_by(
            &field.ty,
            format!(
                "{name} is a `Bytes` field without `#[serde(with = \"streamwire::blob\")]`: \
                 write that attribute on it, so that a large buffer travels beside the message \
                 in a wire frame and is read where it arrives instead of being copied in and \
                 out (or give it a `with` of your own, to say it is inline on purpose)"
            ),
        );
    }
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "a message cannot be generic: it needs one stable type name on the wire",
        );
    }
    let errors = cx.into_compile_errors();
    if !errors.is_empty() {
        return errors;
    }

    let ident = &input.ident;
    let type_name = match &name {
        Some(lit) => quote!(#lit),
        None => {
            let ident_str = ident.to_string();
            quote!(::core::concat!(::core::env!("CARGO_PKG_NAME"), "/", #ident_str))
        }
    };
    let kind = kind.map(|k| quote!(const KIND: #krate::MessageKind = #krate::MessageKind::#k;));
    let payload_len = match payload_len {
        Some(path) => quote! {
            fn payload_len(&self) -> usize {
                #path(self)
            }
        },
        None => {
            let fields = byte_fields(input);
            quote! {
                fn payload_len(&self) -> usize {
                    0 #(+ <[u8]>::len(&self.#fields))*
                }
            }
        }
    };
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #krate::Message for #ident {
                const TYPE_NAME: &'static str = #type_name;
                #kind
                #payload_len
            }

            #[automatically_derived]
            impl #krate::Payload for #ident {
                type Logical = Self;
                type Delivered = Self;
                const FORM: #krate::PayloadForm = #krate::PayloadForm::Raw;
            }

            #krate::__private::inventory::submit! {
                <dyn #krate::AnyMessage>::typetag_register(
                    #type_name,
                    #krate::__private::deserialize_message::<#ident>
                        as #krate::__private::DeserializeFn,
                )
            }

            #krate::__private::inventory::submit! {
                #krate::MessageRegistration::of::<#ident>()
            }
        };
    }
}

/// Type names look like `package/Type`: ASCII letters, digits, `_`, `/` and `.`.
fn type_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it cannot be empty".to_owned());
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.')))
        .map(|c| format!("`{c}` is not allowed (use ASCII letters, digits, `_`, `/` and `.`)"))
}

/// The fields of a struct that hold content bytes (`Bytes`, `bytes::Bytes`, `Vec<u8>`),
/// by name or index: what the derived `payload_len` sums.
fn byte_fields(input: &DeriveInput) -> Vec<syn::Member> {
    let syn::Data::Struct(data) = &input.data else {
        return Vec::new();
    };
    data.fields
        .iter()
        .enumerate()
        .filter(|(_, field)| holds_bytes(&field.ty))
        .map(|(index, field)| match &field.ident {
            Some(ident) => syn::Member::Named(ident.clone()),
            None => syn::Member::Unnamed(index.into()),
        })
        .collect()
}

/// The fields of type `Bytes` with no `#[serde(with | serialize_with | skip...)]`: a
/// message's large buffers are `Bytes`, and each travels as a blob unless its author says
/// otherwise.
fn bytes_fields_without_with(input: &DeriveInput) -> Vec<(usize, &syn::Field)> {
    let syn::Data::Struct(data) = &input.data else {
        return Vec::new();
    };
    data.fields
        .iter()
        .enumerate()
        .filter(|(_, field)| is_bytes(&field.ty) && !has_serde_with(field))
        .collect()
}

fn is_bytes(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    path.path
        .segments
        .last()
        .is_some_and(|last| last.ident == "Bytes" && last.arguments.is_none())
}

/// Whether a field says how serde handles it (`with`, `serialize_with`, a `skip`).
fn has_serde_with(field: &syn::Field) -> bool {
    let mut found = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        // Only the keys matter; a malformed attribute is serde_derive's to report.
        let _ = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(ToString::to_string);
            if matches!(
                key.as_deref(),
                Some("with" | "serialize_with" | "skip" | "skip_serializing")
            ) {
                found = true;
            }
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

/// `Bytes` (any path ending in it) or `Vec<u8>`.
fn holds_bytes(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    match &last.arguments {
        syn::PathArguments::None => last.ident == "Bytes",
        syn::PathArguments::AngleBracketed(args) if last.ident == "Vec" => matches!(
            args.args.first(),
            Some(syn::GenericArgument::Type(syn::Type::Path(inner)))
                if args.args.len() == 1 && inner.path.is_ident("u8")
        ),
        _ => false,
    }
}
