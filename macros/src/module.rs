//! `#[derive(Module)]`: code generation from a checked [`ModuleDef`].

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::DeriveInput;
use syn::spanned::Spanned;

use crate::ctxt::Ctxt;
use crate::model::{FieldDefault, History, ModuleDef, PortDef};
use crate::names::type_to_string;

pub(crate) fn expand(input: &DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let model = ModuleDef::parse(&mut cx, input);
    let errors = cx.into_compile_errors();
    // Generate the impl even when attributes had errors: the per-field type checks in it
    // then report the remaining mistakes in the same compile.
    // The file support (serde impls, registration) only for a struct without attribute
    // mistakes and whose ports are written `In<..>`/`Out<..>` (rebuilt with `new()`): one
    // mistake, one error, not a second one from the generated serde code. (A port type
    // behind an alias gets no file support.)
    let file_support = errors.is_empty()
        && model
            .as_ref()
            .is_some_and(|m| m.ports.iter().all(|p| p.direction.is_some()));
    let generated = model
        .map(|m| {
            let file = if file_support {
                file_support_tokens(&m)
            } else {
                TokenStream::new()
            };
            let main = generate(&m, file_support);
            quote!(#main #file)
        })
        // infallible: a struct that does not parse reports its errors through `cx`; nothing more to generate
        .unwrap_or_default();
    quote! {
        #errors
        #generated
    }
}

fn generate(model: &ModuleDef, file_support: bool) -> TokenStream {
    let ModuleDef {
        ident,
        vis,
        krate,
        type_name,
        ports,
        config,
        ..
    } = model;
    let ports_ident = format_ident!("{}Ports", ident);
    let (config_ranges, check_config) = range_tokens(model);
    let port_infos = ports.iter().map(|p| port_info(krate, p));
    let config_names = config.iter().map(|c| c.ident.to_string());
    let config_idents: Vec<&syn::Ident> = config.iter().map(|c| &c.ident).collect();
    let handle_fields = ports.iter().map(|p| {
        let field = &p.field;
        let ty = &p.ty;
        // The field's own docs, or a line saying what it is: generated public items must
        // not trip a user's `missing_docs`.
        let doc = if p.doc.is_empty() {
            let line = format!("Handle of port `{field}` (`{}`).", type_to_string(ty));
            quote!(#[doc = #line])
        } else {
            let doc = &p.doc;
            quote!(#(#doc)*)
        };
        quote! {
            #doc
            pub #field: #krate::PortHandle<#ty>
        }
    });
    // Through the probes: a field that is not a port (already reported by its metadata)
    // is skipped instead of failing a second time here.
    let visits = ports.iter().enumerate().map(|(index, p)| {
        let field = &p.field;
        quote! {
            if let ::core::option::Option::Some(port) =
                #krate::__private::probe::Probe(&mut self.#field).erase_port()
            {
                visit(#index, port);
            }
        }
    });
    // Only when there are ports to probe: an unused import would warn in the user's crate.
    let probe_imports = if ports.is_empty() {
        quote!(let _ = visit;)
    } else {
        quote!(use #krate::__private::probe::{IsPort as _, NotPort as _};)
    };
    let handle_inits = ports.iter().enumerate().map(|(index, p)| {
        let field = &p.field;
        quote! { #field: #krate::PortHandle::new(instance, #index) }
    });
    let ports_doc = format!(
        "Typed handles of the ports of one [`{ident}`] instance, for `Blueprint::connect`."
    );

    // With file support the value serializes as its `#[config]` fields: tools show them.
    let as_config = if file_support {
        quote! {
            fn as_config(&self) -> ::core::option::Option<&dyn #krate::ModuleConfig> {
                ::core::option::Option::Some(self)
            }
        }
    } else {
        TokenStream::new()
    };

    quote! {
        #[automatically_derived]
        impl #krate::Module for #ident {
            const TYPE_NAME: &'static str = #type_name;
            const PORTS: &'static [#krate::PortInfo] = &[#(#port_infos),*];
            const CONFIG_FIELDS: &'static [&'static str] = &[#(#config_names),*];
            #config_ranges
            type Ports = #ports_ident;

            fn port_handles(instance: #krate::InstanceId) -> #ports_ident {
                #ports_ident { #(#handle_inits),* }
            }

            fn visit_ports(
                &mut self,
                visit: &mut dyn ::core::ops::FnMut(usize, &mut dyn #krate::AnyPort),
            ) {
                #probe_imports
                #(#visits)*
            }

            fn behaviour(&mut self) -> ::core::option::Option<&mut dyn #krate::Node> {
                use #krate::__private::probe::{IsNode as _, NotNode as _};
                #krate::__private::probe::Probe(self).erase_node()
            }

            fn taps(&self) -> #krate::Taps {
                use #krate::__private::probe::{IsNodeRef as _, NotNodeRef as _};
                #krate::__private::probe::RefProbe(self).node_taps()
            }

            fn take_config(&mut self, from: &mut Self) {
                #(::core::mem::swap(&mut self.#config_idents, &mut from.#config_idents);)*
            }

            #as_config
            #check_config
        }

        #[doc = #ports_doc]
        #[derive(Clone, Copy, Debug)]
        #vis struct #ports_ident {
            #(#handle_fields),*
        }
    }
}

/// `CONFIG_RANGES` and `check_config` from the declared ranges and `#[module(validate)]`
/// (nothing when there are neither: the trait's defaults). Each check is spanned on what
/// the user wrote: a range on a field that is not a number is reported on the range key,
/// `finite` on an integer on `finite`, a bound of another type on the bound.
fn range_tokens(model: &ModuleDef) -> (TokenStream, TokenStream) {
    let krate = &model.krate;
    let ranged: Vec<_> = model
        .config
        .iter()
        .filter_map(|c| c.range.as_ref().map(|r| (c, r)))
        .collect();
    if ranged.is_empty() && model.validate.is_none() {
        return (TokenStream::new(), TokenStream::new());
    }
    let infos = ranged.iter().map(|(c, r)| {
        let field = c.ident.to_string();
        let accepts = r.accepts();
        quote! { #krate::FieldRange { field: #field, accepts: #accepts } }
    });
    let checks = ranged.iter().map(|(c, r)| {
        let field = &c.ident;
        let name = field.to_string();
        let ty = &c.ty;
        let accepts = r.accepts();
        let some = |b: &Option<crate::model::Bound>| match b {
            Some(b) => {
                let expr = &b.expr;
                quote_spanned! {expr.span()=> ::core::option::Option::Some(#expr) }
            }
            None => quote!(::core::option::Option::None),
        };
        let min = some(&r.min);
        let max = some(&r.max);
        let end_exclusive = r.end_exclusive;
        let finite = r.finite.is_some();
        let float_check = r.finite.map(|span| {
            quote_spanned! {span=> #krate::__private::assert_float::<#ty>(); }
        });
        let check = quote_spanned! {r.span=> #krate::__private::check_field::<#ty, _> };
        quote! {
            #float_check
            if let ::core::option::Option::Some(__problem) = #check(
                #name,
                &self.#field,
                #krate::__private::Bounds {
                    min: #min,
                    max: #max,
                    end_exclusive: #end_exclusive,
                    finite: #finite,
                },
                #accepts,
            ) {
                __problems.push(__problem);
            }
        }
    });
    let validate = model.validate.as_ref().map(|path| {
        let check = quote_spanned! {path.span()=>
            let __validate: fn(&Self) -> ::core::result::Result<(), ::std::string::String> = #path;
        };
        quote! {
            if __problems.is_empty() {
                #check
                if let ::core::result::Result::Err(message) = __validate(self) {
                    __problems.push(#krate::ConfigProblem::Invalid { message });
                }
            }
        }
    });
    let ranges = quote! {
        const CONFIG_RANGES: &'static [#krate::FieldRange] = &[#(#infos),*];
    };
    let check_config = quote! {
        fn check_config(&self) -> ::std::vec::Vec<#krate::ConfigProblem> {
            let mut __problems = ::std::vec::Vec::new();
            #(#checks)*
            #validate
            __problems
        }
    };
    (ranges, check_config)
}

/// `PortInfo::new::<FieldType>(..)`, spanned on the field's type so that a field whose
/// type is not a port (or whose message is not a message) is reported on that field.
fn port_info(krate: &syn::Path, port: &PortDef) -> TokenStream {
    let ty = &port.ty;
    let field = port.field.to_string();
    let stream = &port.stream;
    let type_name = type_to_string(ty);
    let optional = port.optional;
    let lossless = port.lossless;
    let some = |value: Option<TokenStream>| match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let reliability = some(port.reliability.map(|(r, _)| {
        let r = format_ident!("{}", r);
        quote!(#krate::Reliability::#r)
    }));
    let durability = some(port.durability.map(|(d, _)| {
        let d = format_ident!("{}", d);
        quote!(#krate::Durability::#d)
    }));
    let history = some(port.history.map(|(h, _)| match h {
        History::KeepLast(n) => quote!(#krate::History::KeepLast(#n)),
        History::KeepAll => quote!(#krate::History::KeepAll),
    }));
    quote_spanned! {ty.span()=>
        #krate::PortInfo::new::<#ty>(
            #field,
            #stream,
            #type_name,
            #krate::PortAttrs {
                optional: #optional,
                lossless: #lossless,
                qos: #krate::QosOverrides {
                    reliability: #reliability,
                    durability: #durability,
                    history: #history,
                },
            },
        )
    }
}

/// What a blueprint file needs: `Serialize`/`Deserialize` of the `#[config]` fields
/// (through hidden mirror structs, so users add neither serde nor typetag), the module
/// value a file builds (see `deserialize_body`), and the registration under its tag.
fn file_support_tokens(model: &ModuleDef) -> TokenStream {
    let ModuleDef {
        ident,
        krate,
        type_name,
        config,
        doc,
        ..
    } = model;
    let serde_path = format!("{}::__private::serde", path_to_string(krate));
    let present = format!("{}::__private::present", path_to_string(krate));
    let config_idents: Vec<&syn::Ident> = config.iter().map(|c| &c.ident).collect();
    let config_types: Vec<&syn::Type> = config.iter().map(|c| &c.ty).collect();
    let config_names: Vec<String> = config.iter().map(|c| c.ident.to_string()).collect();
    let defaulted_names = config
        .iter()
        .filter(|c| c.default.is_some())
        .map(|c| c.ident.to_string());
    // An internal module (built in code by a tool) is not offered to blueprint files.
    let registration = if model.internal {
        TokenStream::new()
    } else {
        quote! {
            #krate::__private::inventory::submit! {
                <dyn #krate::ModuleConfig>::typetag_register(
                    #type_name,
                    #krate::__private::deserialize_module::<#ident>
                        as #krate::__private::DeserializeModuleFn,
                )
            }

            #krate::__private::inventory::submit! {
                #krate::ModuleRegistration {
                    tag: #type_name,
                    doc: #doc,
                    config_fields: &[#(#config_names),*],
                    defaulted_fields: &[#(#defaulted_names),*],
                    ranges: <#ident as #krate::Module>::CONFIG_RANGES,
                    has_default: {
                        fn has_default() -> bool {
                            #[allow(unused_imports)]
                            use #krate::__private::probe::{HasDefault as _, NoDefault as _};
                            (&#krate::__private::probe::DefaultProbe::<#ident>(
                                ::core::marker::PhantomData,
                            ))
                                .exists()
                        }
                        has_default
                    },
                }
            }
        }
    };
    let generics: Vec<syn::Ident> = (0..config.len())
        .map(|i| format_ident!("__C{}", i))
        .collect();
    let bound = generics
        .iter()
        .map(|g| format!("{g}: {serde_path}::Deserialize<'de>"))
        .collect::<Vec<_>>()
        .join(", ");
    let body = deserialize_body(model);
    quote! {
        const _: () = {
            use #krate::__private::serde as __serde;

            // Generic over the field types, so that a config type without serde is one
            // error per serde trait (at the use below), not one per derive and field.
            #[derive(#krate::__private::serde::Serialize)]
            #[serde(crate = #serde_path)]
            struct __Ser<'a, #(#generics),*> {
                #(#config_idents: &'a #generics,)*
                #[serde(skip)]
                __marker: ::core::marker::PhantomData<&'a ()>,
            }

            // Every field optional here: which ones a file must give is decided after
            // (the defaults), in `deserialize`.
            #[derive(#krate::__private::serde::Deserialize)]
            #[serde(crate = #serde_path, deny_unknown_fields, rename = #type_name,
                    bound(deserialize = #bound))]
            struct __De<#(#generics),*> {
                #(
                    #[serde(default, deserialize_with = #present)]
                    #config_idents: ::core::option::Option<#generics>,
                )*
            }

            #[automatically_derived]
            impl __serde::Serialize for #ident {
                fn serialize<S: __serde::Serializer>(
                    &self,
                    serializer: S,
                ) -> ::core::result::Result<S::Ok, S::Error> {
                    __serde::Serialize::serialize(
                        &__Ser::<#(#config_types),*> {
                            #(#config_idents: &self.#config_idents,)*
                            __marker: ::core::marker::PhantomData,
                        },
                        serializer,
                    )
                }
            }

            #[automatically_derived]
            impl<'de> __serde::Deserialize<'de> for #ident {
                fn deserialize<D: __serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> ::core::result::Result<Self, D::Error> {
                    #body
                }
            }

            #registration
        };
    }
}

/// The body of the module's `Deserialize`: the value a code blueprint builds from the
/// same settings. Each field, first found first: the file's value, the field's declared
/// default, the module's own `impl Default` (when it has one: a probe, so nothing to
/// declare), and for a `#[state]` field of a module without `Default` its type's
/// `Default`; a `#[config]` field with none of these is a missing field.
fn deserialize_body(model: &ModuleDef) -> TokenStream {
    let ModuleDef {
        ident,
        krate,
        type_name,
        ports,
        config,
        state,
        ..
    } = model;
    let config_types = config.iter().map(|c| &c.ty);
    let given: Vec<syn::Ident> = config
        .iter()
        .map(|c| format_ident!("__given_{}", c.ident))
        .collect();
    let config_idents = config.iter().map(|c| &c.ident);
    // Starting from the module's `Default`: overwrite what the file or a declaration gives.
    let over_default = config.iter().zip(&given).map(|(c, given)| {
        let field = &c.ident;
        match &c.default {
            Some(d) => {
                let d = default_expr(&c.ty, d);
                quote! { __module.#field = match #given { ::core::option::Option::Some(__v) => __v, ::core::option::Option::None => #d }; }
            }
            None => quote! { if let ::core::option::Option::Some(__v) = #given { __module.#field = __v; } },
        }
    });
    let state_over_default = state.iter().filter_map(|s| {
        let field = &s.ident;
        let d = default_expr(&s.ty, s.default.as_ref()?);
        Some(quote! { __module.#field = #d; })
    });
    // Without the module's `Default`: every field from the file or a declaration.
    let config_fields = config.iter().zip(&given).map(|(c, given)| {
        let field = &c.ident;
        let name = field.to_string();
        let otherwise = match &c.default {
            Some(d) => default_expr(&c.ty, d),
            None => quote! {
                return ::core::result::Result::Err(
                    <D::Error as __serde::de::Error>::missing_field(#name))
            },
        };
        quote! { #field: match #given { ::core::option::Option::Some(__v) => __v, ::core::option::Option::None => #otherwise } }
    });
    let state_fields = state.iter().map(|s| {
        let field = &s.ident;
        let ty = &s.ty;
        let name = field.to_string();
        let value = match &s.default {
            Some(d) => default_expr(ty, d),
            None => quote! {
                match (&#krate::__private::probe::DefaultProbe::<#ty>(::core::marker::PhantomData)).make() {
                    ::core::option::Option::Some(__v) => __v,
                    ::core::option::Option::None => return ::core::result::Result::Err(
                        <D::Error as __serde::de::Error>::custom(::core::concat!(
                            "module `", #type_name, "` cannot be loaded from a file: its `#[state]` field `",
                            #name, "` has no start value (implement `Default` for the module, or write `#[state(default = ...)]`)"))),
                }
            },
        };
        quote! { #field: #value }
    });
    let port_fields = ports.iter().map(|p| &p.field);
    let port_types = ports.iter().map(|p| &p.ty);
    quote! {
        #[allow(unused_imports)]
        use #krate::__private::probe::{HasDefault as _, NoDefault as _};
        let __De { #(#config_idents: #given),* } =
            <__De<#(#config_types),*> as __serde::Deserialize>::deserialize(deserializer)?;
        match (&#krate::__private::probe::DefaultProbe::<#ident>(::core::marker::PhantomData)).make() {
            ::core::option::Option::Some(mut __module) => {
                #(#over_default)*
                #(#state_over_default)*
                ::core::result::Result::Ok(__module)
            }
            ::core::option::Option::None => ::core::result::Result::Ok(#ident {
                #(#config_fields,)*
                #(#port_fields: <#port_types>::new(),)*
                #(#state_fields,)*
            }),
        }
    }
}

/// A declared default as an expression of the field's type. Spanned on what the user
/// wrote: a type without `Default` is reported on the `default` key, an expression of
/// another type on the expression (against the field's type).
fn default_expr(ty: &syn::Type, default: &FieldDefault) -> TokenStream {
    match default {
        FieldDefault::TypeDefault(span) => {
            quote_spanned! {*span=> ::core::default::Default::default() }
        }
        FieldDefault::Expr(expr) => quote_spanned! {expr.span()=>
            {
                let __default: #ty = #expr;
                __default
            }
        },
    }
}

/// `::streamwire` -> "::streamwire", for serde's `crate = "..."`.
fn path_to_string(path: &syn::Path) -> String {
    let mut out = String::new();
    if path.leading_colon.is_some() {
        out.push_str("::");
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    out.push_str(&segments.join("::"));
    out
}
