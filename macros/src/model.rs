//! The semantic model of a `#[derive(Module)]` struct, parsed and checked before any code
//! is generated.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitInt, LitStr, Path, Type, Visibility};

use crate::ctxt::Ctxt;
use streamwire_names::{did_you_mean, stream_name_problem};

/// Attribute names, in one place.
pub(crate) mod attr {
    pub(crate) const MODULE: &str = "module";
    pub(crate) const PORT: &str = "port";
    pub(crate) const CONFIG: &str = "config";
    pub(crate) const STATE: &str = "state";

    pub(crate) const MODULE_KEYS: &[&str] = &["crate", "name", "internal", "validate"];
    /// `#[config(..)]` and `#[state(..)]` share one grammar (`field_attr`); a new key is
    /// one more entry here and one more arm there. The range keys apply to `#[config]`.
    pub(crate) const CONFIG_KEYS: &[&str] = &["default", "range", "min", "max", "finite"];
    pub(crate) const STATE_KEYS: &[&str] = &["default"];
    pub(crate) const PORT_KEYS: &[&str] = &[
        "name",
        "optional",
        "lossless",
        "reliable",
        "best_effort",
        "volatile",
        "transient_local",
        "depth",
        "keep_all",
    ];
}

/// A module struct.
pub(crate) struct ModuleDef {
    pub(crate) ident: Ident,
    pub(crate) vis: Visibility,
    pub(crate) krate: Path,
    pub(crate) type_name: String,
    pub(crate) ports: Vec<PortDef>,
    /// The `#[config]` fields.
    pub(crate) config: Vec<FieldDef>,
    /// The `#[state]` fields.
    pub(crate) state: Vec<FieldDef>,
    /// The first line of the struct's doc comment (for `streamwire list`).
    pub(crate) doc: String,
    /// `#[module(internal)]`: built in code by a tool (a benchmark's pinger), so not
    /// registered: not in `list`, not loadable from a blueprint file.
    pub(crate) internal: bool,
    /// `#[module(validate = f)]`: the module's cross-field check, `fn(&Self) -> Result<(), String>`.
    pub(crate) validate: Option<Path>,
}

/// Which way a port points, read from its type's last path segment (`In` / `Out`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Direction {
    Input,
    Output,
}

/// One port field.
pub(crate) struct PortDef {
    pub(crate) field: Ident,
    pub(crate) ty: Type,
    pub(crate) doc: Vec<syn::Attribute>,
    /// `None` when the type is not syntactically `In<..>` or `Out<..>` (an alias, or not a
    /// port at all): the trait check on the field reports the latter.
    pub(crate) direction: Option<Direction>,
    pub(crate) stream: String,
    pub(crate) stream_span: Span,
    pub(crate) optional: bool,
    pub(crate) lossless: bool,
    pub(crate) reliability: Option<(&'static str, Span)>,
    pub(crate) durability: Option<(&'static str, Span)>,
    pub(crate) history: Option<(History, Span)>,
}

/// A `#[config]` or `#[state]` field.
pub(crate) struct FieldDef {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// Its declared default, the value a blueprint file that leaves it out gets.
    pub(crate) default: Option<FieldDefault>,
    /// Its declared range (`#[config]` only).
    pub(crate) range: Option<RangeDecl>,
}

/// `range`, `min`, `max`, `finite` in `#[config(..)]`, checked: not empty, each key once.
pub(crate) struct RangeDecl {
    pub(crate) min: Option<Bound>,
    pub(crate) max: Option<Bound>,
    /// `a..b`: the end is not accepted.
    pub(crate) end_exclusive: bool,
    /// `finite`: the span of the key, for the check that the field is a float.
    pub(crate) finite: Option<Span>,
    /// The first range key, for the check that the field is a number.
    pub(crate) span: Span,
}

/// One bound: a number literal, possibly negated.
pub(crate) struct Bound {
    pub(crate) expr: syn::Expr,
    /// For comparing the bounds at compile time.
    pub(crate) value: f64,
    /// As written, without a suffix (`16384`, `0.01`, `-1.5`).
    pub(crate) text: String,
}

impl RangeDecl {
    /// What the field accepts, for people: `1..=16384`, `finite, >= 0.01`.
    pub(crate) fn accepts(&self) -> String {
        let bounds = match (&self.min, &self.max) {
            (Some(min), Some(max)) => {
                let dots = if self.end_exclusive { ".." } else { "..=" };
                Some(format!("{}{dots}{}", min.text, max.text))
            }
            (Some(min), None) => Some(format!(">= {}", min.text)),
            (None, Some(max)) if self.end_exclusive => Some(format!("< {}", max.text)),
            (None, Some(max)) => Some(format!("<= {}", max.text)),
            (None, None) => None,
        };
        match (self.finite.is_some(), bounds) {
            (true, Some(b)) => format!("finite, {b}"),
            (true, None) => "finite".to_owned(),
            (false, Some(b)) => b,
            (false, None) => String::new(),
        }
    }
}

/// `default` in `#[config(..)]` / `#[state(..)]`.
pub(crate) enum FieldDefault {
    /// `default`: the field type's `Default` (the span of the key, for a missing impl).
    TypeDefault(Span),
    /// `default = <expr>`.
    Expr(Box<syn::Expr>),
}

#[derive(Clone, Copy)]
pub(crate) enum History {
    KeepLast(u32),
    KeepAll,
}

impl ModuleDef {
    /// Parses `input`, recording every problem in `cx`. Returns a model even when there
    /// were problems (skipping what could not be understood), so that type errors of
    /// the fields are reported in the same compile.
    pub(crate) fn parse(cx: &mut Ctxt, input: &DeriveInput) -> Option<ModuleDef> {
        let (krate, type_name, internal, validate) = parse_module_attrs(cx, input);

        if !input.generics.params.is_empty() {
            cx.error_spanned_by(
                &input.generics,
                "a module cannot be generic: its port metadata is static and shared by all \
                 instances; use a concrete type for each port (or a type alias per variant)",
            );
            // Nothing sensible can be generated for a generic struct.
            return None;
        }

        let fields = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => &named.named,
                Fields::Unnamed(_) | Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        "`#[derive(Module)]` needs a struct with named fields: each port is \
                         named after its field (the default stream name)",
                    );
                    return None;
                }
            },
            Data::Enum(data) => {
                cx.error_spanned_by(
                    data.enum_token,
                    "`#[derive(Module)]` needs a struct: an enum cannot be a module (its \
                     ports would depend on the variant)",
                );
                return None;
            }
            Data::Union(data) => {
                cx.error_spanned_by(
                    data.union_token,
                    "`#[derive(Module)]` needs a struct: a union cannot be a module",
                );
                return None;
            }
        };

        let mut ports = Vec::new();
        let mut config = Vec::new();
        let mut state = Vec::new();
        for field in fields {
            let Some(ident) = field.ident.clone() else {
                continue;
            };
            // `#[state]`: the module's own run-time state (buffers, counters), neither a
            // port nor configuration.
            if let Some(state_attr) = field.attrs.iter().find(|a| a.path().is_ident(attr::STATE)) {
                let FieldAttrs { default, .. } =
                    field_attr(cx, state_attr, attr::STATE, attr::STATE_KEYS);
                for other in field
                    .attrs
                    .iter()
                    .filter(|a| a.path().is_ident(attr::PORT) || a.path().is_ident(attr::CONFIG))
                {
                    cx.error_spanned_by(
                        other,
                        "a `#[state]` field is neither a port nor configuration: keep one of the attributes",
                    );
                }
                state.push(FieldDef {
                    ident,
                    ty: field.ty.clone(),
                    default,
                    range: None,
                });
                continue;
            }
            let config_attr = field.attrs.iter().find(|a| a.path().is_ident(attr::CONFIG));
            let port_attrs: Vec<_> = field
                .attrs
                .iter()
                .filter(|a| a.path().is_ident(attr::PORT))
                .collect();
            if let Some(config_attr) = config_attr {
                let FieldAttrs { default, range } =
                    field_attr(cx, config_attr, attr::CONFIG, attr::CONFIG_KEYS);
                for port_attr in &port_attrs {
                    cx.error_spanned_by(
                        port_attr,
                        "a `#[config]` field is not a port: remove `#[port(..)]` or `#[config]`",
                    );
                }
                config.push(FieldDef {
                    ident,
                    ty: field.ty.clone(),
                    default,
                    range,
                });
                continue;
            }
            // `Compressed<Compressed<M>>` as written: say so, once, instead of the trait
            // error it would cause (which would advise a `DefaultCodec` impl for
            // `Compressed<M>`, wrong and impossible). The field is then left out, so no
            // further check reports it again.
            if let Some(inner) = compressed_twice(&field.ty) {
                cx.error_spanned_by(
                    &field.ty,
                    format!(
                        "`Compressed` wraps a message, not another `Compressed`: write \
                         `Compressed<{inner}>` (the codec is chosen once per port)"
                    ),
                );
                continue;
            }
            ports.push(parse_port(cx, field, ident, &port_attrs));
        }

        check_duplicate_streams(cx, &ports);

        Some(ModuleDef {
            ident: input.ident.clone(),
            vis: input.vis.clone(),
            krate,
            type_name,
            ports,
            config,
            state,
            doc: first_doc_line(&input.attrs),
            internal,
            validate,
        })
    }
}

fn parse_module_attrs(cx: &mut Ctxt, input: &DeriveInput) -> (Path, String, bool, Option<Path>) {
    let mut krate: Path = syn::parse_quote!(::streamwire);
    let mut type_name = input.ident.to_string();
    let mut internal = false;
    let mut validate = None;
    for a in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident(attr::MODULE))
    {
        let result = a.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                krate = meta.value()?.parse::<Path>()?;
            } else if meta.path.is_ident("name") {
                let name: LitStr = meta.value()?.parse()?;
                if name.value().is_empty() {
                    cx.error_spanned_by(&name, "a module name cannot be empty");
                }
                type_name = name.value();
            } else if meta.path.is_ident("internal") {
                internal = true;
            } else if meta.path.is_ident("validate") {
                if validate.is_some() {
                    cx.error_spanned_by(
                        &meta.path,
                        "`validate` is given twice in `#[module(..)]`: keep one",
                    );
                }
                validate = Some(meta.value()?.parse::<Path>()?);
            } else {
                let key = path_to_string(&meta.path);
                cx.error_spanned_by(&meta.path, unknown_key("module", &key, attr::MODULE_KEYS));
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    (krate, type_name, internal, validate)
}

/// What `#[config(..)]` or `#[state(..)]` declares.
pub(crate) struct FieldAttrs {
    pub(crate) default: Option<FieldDefault>,
    pub(crate) range: Option<RangeDecl>,
}

/// The range keys as written, before they are checked together.
#[derive(Default)]
struct RangeKeys {
    range: Option<(Span, Option<Bound>, Option<Bound>, bool)>,
    min: Option<(Span, Bound)>,
    max: Option<(Span, Bound)>,
    finite: Option<Span>,
}

/// The arguments of `#[config(..)]` or `#[state(..)]` (`name`): `#[config]` alone, or a
/// list of keys, each checked against `keys`.
fn field_attr(cx: &mut Ctxt, attribute: &syn::Attribute, name: &str, keys: &[&str]) -> FieldAttrs {
    let mut attrs = FieldAttrs {
        default: None,
        range: None,
    };
    match &attribute.meta {
        syn::Meta::Path(_) => return attrs,
        syn::Meta::NameValue(_) => {
            cx.error_spanned_by(
                attribute,
                format!(
                    "`#[{name} = ..]` is not a form of `#[{name}]`: write `#[{name}]`, \
                     `#[{name}(default)]` (the type's `Default`) or `#[{name}(default = <expr>)]`"
                ),
            );
            return attrs;
        }
        syn::Meta::List(_) => {}
    }
    let mut ranges = RangeKeys::default();
    let result = attribute.parse_nested_meta(|meta| {
        let key = path_to_string(&meta.path);
        let span = meta.path.span();
        let twice = |cx: &mut Ctxt| {
            cx.error_spanned_by(
                &meta.path,
                format!("`{key}` is given twice in `#[{name}(..)]`: keep one"),
            );
        };
        match key.as_str() {
            "default" => {
                let value = if meta.input.peek(syn::Token![=]) {
                    FieldDefault::Expr(Box::new(meta.value()?.parse()?))
                } else {
                    FieldDefault::TypeDefault(span)
                };
                if attrs.default.is_some() {
                    twice(cx);
                }
                attrs.default = Some(value);
            }
            "range" | "min" | "max" | "finite" if keys.contains(&key.as_str()) => {
                if key == "finite" {
                    if meta.input.peek(syn::Token![=]) {
                        cx.error_spanned_by(
                            &meta.path,
                            "`finite` takes no value: write `#[config(finite)]` (NaN and \
                             infinities refused)",
                        );
                        skip_value(&meta)?;
                    }
                    if ranges.finite.is_some() {
                        twice(cx);
                    }
                    ranges.finite = Some(span);
                    return Ok(());
                }
                let expr: syn::Expr = meta.value()?.parse()?;
                if key == "range" {
                    let Some(parsed) = range_bounds(cx, &expr) else {
                        return Ok(());
                    };
                    if ranges.range.is_some() {
                        twice(cx);
                    }
                    ranges.range = Some((span, parsed.0, parsed.1, parsed.2));
                    return Ok(());
                }
                let Some(bound) = bound(cx, &expr) else {
                    return Ok(());
                };
                let slot = if key == "min" {
                    &mut ranges.min
                } else {
                    &mut ranges.max
                };
                if slot.is_some() {
                    twice(cx);
                }
                *slot = Some((span, bound));
            }
            _ => {
                cx.error_spanned_by(&meta.path, unknown_key(name, &key, keys));
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
    attrs.range = range_decl(cx, ranges);
    attrs
}

/// The range keys checked together: `range` or `min`/`max`, not both; not empty.
fn range_decl(cx: &mut Ctxt, keys: RangeKeys) -> Option<RangeDecl> {
    let RangeKeys {
        range,
        min,
        max,
        finite,
    } = keys;
    let decl = match (range, min, max) {
        (None, None, None) => RangeDecl {
            min: None,
            max: None,
            end_exclusive: false,
            finite,
            span: finite?,
        },
        (Some((span, low, high, end_exclusive)), min, max) => {
            if let Some((other, _)) = min.as_ref().or(max.as_ref()) {
                cx.syn_error(syn::Error::new(
                    *other,
                    "`range` already bounds this setting: give `range = a..=b`, or `min` \
                     and `max`, not both",
                ));
            }
            RangeDecl {
                min: low,
                max: high,
                end_exclusive,
                finite,
                span,
            }
        }
        (None, min, max) => {
            let span = min
                .as_ref()
                .or(max.as_ref())
                .map(|(span, _)| *span)
                .unwrap_or_else(Span::call_site);
            RangeDecl {
                min: min.map(|(_, b)| b),
                max: max.map(|(_, b)| b),
                end_exclusive: false,
                finite,
                span,
            }
        }
    };
    if let (Some(low), Some(high)) = (&decl.min, &decl.max) {
        let empty = if decl.end_exclusive {
            low.value >= high.value
        } else {
            low.value > high.value
        };
        if empty {
            cx.error_spanned_by(
                &high.expr,
                format!(
                    "the range accepts nothing: its end {} is not above its start {}; \
                     write the smaller bound first",
                    high.text, low.text
                ),
            );
            return None;
        }
    }
    Some(decl)
}

/// `a..=b`, `a..b`, `a..`, `..=b`, `..b` as (start, end, end exclusive).
fn range_bounds(cx: &mut Ctxt, expr: &syn::Expr) -> Option<(Option<Bound>, Option<Bound>, bool)> {
    let syn::Expr::Range(range) = expr else {
        cx.error_spanned_by(
            expr,
            "`range` is a range of number literals: `1..=16384`, `0.0..=1.0`, `1..` or `..=100`",
        );
        return None;
    };
    if range.start.is_none() && range.end.is_none() {
        cx.error_spanned_by(
            expr,
            "`..` bounds nothing: give a start, an end or both (`1..=16384`, `1..`)",
        );
        return None;
    }
    let start = match &range.start {
        Some(e) => Some(bound(cx, e)?),
        None => None,
    };
    let end = match &range.end {
        Some(e) => Some(bound(cx, e)?),
        None => None,
    };
    let end_exclusive = matches!(range.limits, syn::RangeLimits::HalfOpen(_)) && end.is_some();
    Some((start, end, end_exclusive))
}

/// A bound: an integer or float literal, possibly negated.
fn bound(cx: &mut Ctxt, expr: &syn::Expr) -> Option<Bound> {
    let (negative, lit) = match expr {
        syn::Expr::Lit(lit) => (false, Some(&lit.lit)),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr: inner,
            ..
        }) => match &**inner {
            syn::Expr::Lit(lit) => (true, Some(&lit.lit)),
            _ => (false, None),
        },
        _ => (false, None),
    };
    let digits = match lit {
        Some(syn::Lit::Int(i)) => i.base10_digits().to_owned(),
        Some(syn::Lit::Float(f)) => f.base10_digits().to_owned(),
        _ => {
            cx.error_spanned_by(
                expr,
                "a bound is a number literal (`16384`, `0.5`, `-1.0`): a setting's range is \
                 fixed where the module is written",
            );
            return None;
        }
    };
    let text = if negative {
        format!("-{digits}")
    } else {
        digits
    };
    let value = text.parse::<f64>().ok()?;
    Some(Bound {
        expr: expr.clone(),
        value,
        text,
    })
}

fn parse_port(
    cx: &mut Ctxt,
    field: &syn::Field,
    ident: Ident,
    port_attrs: &[&syn::Attribute],
) -> PortDef {
    let direction = port_direction(&field.ty);
    let mut port = PortDef {
        stream: ident.to_string(),
        stream_span: ident.span(),
        field: ident,
        ty: field.ty.clone(),
        doc: field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect(),
        direction,
        optional: false,
        lossless: false,
        reliability: None,
        durability: None,
        history: None,
    };
    for a in port_attrs {
        let result = a.parse_nested_meta(|meta| {
            let key = path_to_string(&meta.path);
            let span = meta.path.span();
            match key.as_str() {
                "name" => {
                    let name: LitStr = meta.value()?.parse()?;
                    if let Some(problem) = stream_name_problem(&name.value()) {
                        cx.error_spanned_by(&name, format!("invalid stream name: {problem}"));
                    }
                    port.stream = name.value();
                    port.stream_span = name.span();
                }
                "optional" | "lossless" => {
                    if direction == Some(Direction::Output) {
                        cx.error_spanned_by(
                            &meta.path,
                            format!(
                                "`{key}` applies to inputs: an output cannot be `{key}` \
                                 (it is the inputs that may stay unfed or refuse lossy data)"
                            ),
                        );
                    }
                    if key == "optional" {
                        port.optional = true;
                    } else {
                        port.lossless = true;
                    }
                }
                "reliable" | "best_effort" => {
                    let value = if key == "reliable" { "Reliable" } else { "BestEffort" };
                    if port.reliability.is_some() {
                        cx.error_spanned_by(
                            &meta.path,
                            "reliability is given twice: choose one of `reliable`, `best_effort`",
                        );
                    }
                    port.reliability = Some((value, span));
                }
                "volatile" | "transient_local" => {
                    let value = if key == "volatile" { "Volatile" } else { "TransientLocal" };
                    if port.durability.is_some() {
                        cx.error_spanned_by(
                            &meta.path,
                            "durability is given twice: choose one of `volatile`, `transient_local`",
                        );
                    }
                    port.durability = Some((value, span));
                }
                "depth" | "keep_all" => {
                    let history = if key == "depth" {
                        let depth: LitInt = meta.value()?.parse()?;
                        match depth.base10_parse::<u32>() {
                            Ok(0) | Err(_) => {
                                cx.error_spanned_by(
                                    &depth,
                                    "`depth` must be a whole number from 1 (the newest message \
                                     only) to 4294967295",
                                );
                                History::KeepLast(1)
                            }
                            Ok(n) => History::KeepLast(n),
                        }
                    } else {
                        History::KeepAll
                    };
                    if port.history.is_some() {
                        cx.error_spanned_by(
                            &meta.path,
                            "the queue policy is given twice: choose one of `depth = N`, `keep_all`",
                        );
                    }
                    port.history = Some((history, span));
                }
                _ => {
                    cx.error_spanned_by(&meta.path, unknown_key("port", &key, attr::PORT_KEYS));
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    port
}

/// Two ports of one direction may not share a stream name; an input and an output may
/// (a filter).
fn check_duplicate_streams(cx: &mut Ctxt, ports: &[PortDef]) {
    let mut seen: HashMap<(Direction, &str), &PortDef> = HashMap::new();
    for port in ports {
        let Some(direction) = port.direction else {
            continue;
        };
        if let Some(first) = seen.get(&(direction, port.stream.as_str())) {
            let kind = match direction {
                Direction::Input => "inputs",
                Direction::Output => "outputs",
            };
            cx.syn_error(syn::Error::new(
                port.stream_span,
                format!(
                    "fields `{}` and `{}` are both {kind} of stream `{}`: two {kind} of one \
                     module cannot share a stream name; give one `#[port(name = \"...\")]`",
                    first.field, port.field, port.stream
                ),
            ));
        } else {
            seen.insert((direction, port.stream.as_str()), port);
        }
    }
}

/// `In<..>` or `Out<..>` by the last segment of the type's path.
/// The first type argument of the last path segment named `name`, if `ty` is one.
fn generic_of<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// For `In<Compressed<Compressed<M..>>>` (or `Out<..>`), the text of `M..`.
fn compressed_twice(ty: &Type) -> Option<String> {
    let payload = generic_of(ty, "In").or_else(|| generic_of(ty, "Out"))?;
    let inner = generic_of(payload, "Compressed")?;
    let message = generic_of(inner, "Compressed")?;
    Some(crate::names::type_to_string(message))
}

fn port_direction(ty: &Type) -> Option<Direction> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    match last.ident.to_string().as_str() {
        "In" => Some(Direction::Input),
        "Out" => Some(Direction::Output),
        _ => None,
    }
}

fn path_to_string(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn unknown_key(attribute: &str, key: &str, known: &[&str]) -> String {
    let hint = match did_you_mean(key, known.iter().copied()) {
        Some(suggestion) => format!("; did you mean `{suggestion}`?"),
        None => String::new(),
    };
    format!(
        "unknown `#[{attribute}(..)]` attribute `{key}`{hint} (expected one of: {})",
        known.join(", ")
    )
}

/// Consumes `= value` or `(..)` after an unknown key so parsing can go on to the next key.
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _group: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(())
}

/// The first sentence of the `#[doc = "..."]` attributes' first paragraph, whole (its
/// lines joined), with link syntax reduced to the link's text: what `streamwire list`
/// prints of a module.
fn first_doc_line(attrs: &[syn::Attribute]) -> String {
    let lines = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        });
    let paragraph: Vec<String> = lines
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty())
        .collect();
    let text = without_links(&paragraph.join(" "));
    // The first sentence: up to the first full stop that ends a word before a space.
    match text.find(". ") {
        Some(end) => text[..=end].to_owned(),
        None => text,
    }
}

/// `[text](target)` and `[text][target]` as `text`; `[`Item`]` (an intra-doc link) as
/// `` `Item` ``.
fn without_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        out.push_str(&after[..close]);
        rest = &after[close + 1..];
        // Skip the target of `(...)` or `[...]` right after the text.
        for (start, end) in [('(', ')'), ('[', ']')] {
            if let Some(target) = rest.strip_prefix(start)
                && let Some(stop) = target.find(end)
            {
                rest = &target[stop + 1..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{first_doc_line, without_links};

    #[test]
    fn links_read_as_their_text() {
        assert_eq!(
            without_links("Drives a [simulated world](crate::world) of [`Image`]s [x][y]."),
            "Drives a simulated world of `Image`s x."
        );
        assert_eq!(without_links("an [unclosed link"), "an [unclosed link");
    }

    #[test]
    fn the_summary_is_the_first_sentence_whole() {
        let item: syn::ItemStruct = syn::parse_quote! {
            /// A camera in a [simulated world](crate::world), publishing
            /// frames at a set rate. More about it.
            ///
            /// Another paragraph.
            struct Camera;
        };
        assert_eq!(
            first_doc_line(&item.attrs),
            "A camera in a simulated world, publishing frames at a set rate."
        );
    }
}
