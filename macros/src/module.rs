//! `#[derive(Module)]`: code generation from a checked [`ModuleDef`].

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::DeriveInput;
use syn::spanned::Spanned;

use crate::ctxt::Ctxt;
use crate::model::{History, ModuleDef, PortDef};
use crate::names::type_to_string;

pub(crate) fn expand(input: &DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let model = ModuleDef::parse(&mut cx, input);
    let errors = cx.into_compile_errors();
    // Generate the impl even when attributes had errors: the per-field type checks in it
    // then report the remaining mistakes in the same compile.
    let generated = model.map(|m| generate(&m)).unwrap_or_default();
    quote! {
        #errors
        #generated
    }
}

fn generate(model: &ModuleDef) -> TokenStream {
    let ModuleDef {
        ident,
        vis,
        krate,
        type_name,
        ports,
        config,
    } = model;
    let ports_ident = format_ident!("{}Ports", ident);
    let port_infos = ports.iter().map(|p| port_info(krate, p));
    let config_names = config.iter().map(|c| c.to_string());
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

    quote! {
        #[automatically_derived]
        impl #krate::Module for #ident {
            const TYPE_NAME: &'static str = #type_name;
            const PORTS: &'static [#krate::PortInfo] = &[#(#port_infos),*];
            const CONFIG_FIELDS: &'static [&'static str] = &[#(#config_names),*];
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
        }

        #[doc = #ports_doc]
        #[derive(Clone, Copy, Debug)]
        #vis struct #ports_ident {
            #(#handle_fields),*
        }
    }
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
