//! Module types by name: what a blueprint file's `type: Camera` finds.
//!
//! `#[derive(Module)]` registers every module type under its stable tag (its
//! `TYPE_NAME`, `#[module(name = "...")]`), one concrete registration per type (typetag
//! cannot deserialize generic impls, and the derive refuses generic modules). A module
//! value serializes as its `#[config]` fields; its ports are not data and are rebuilt
//! (`In::new()`, `Out::new()`) when it is loaded.
//!
//! A module loaded from a file is the value a code blueprint builds from the same
//! settings: it starts from the module's own `impl Default` when it has one (found by the
//! derive through a trait probe, nothing to declare), then each field's declared default
//! (`#[config(default = ...)]`, `#[state(default = ...)]`), then the values the file
//! gives. A `#[config]` field is required in a file only when neither default exists; a
//! `#[state]` field of a module without `Default` and without a declared one starts from
//! its type's `Default`.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::module::{Module, ModuleValue};

/// A module value a blueprint file can hold: internally tagged by the module's tag
/// (`{ type: Camera, fps: 15 }`), serialized as its `#[config]` fields.
///
/// Every `#[derive(Module)]` type is one; you never implement it.
#[typetag::serde(tag = "type")]
pub trait ModuleConfig: ModuleValue {
    /// The stable tag of the module type (`Camera`).
    fn tag(&self) -> &'static str;
}

impl<M: Module + Serialize + DeserializeOwned> ModuleConfig for M {
    fn tag(&self) -> &'static str {
        M::TYPE_NAME
    }

    #[doc(hidden)]
    fn typetag_name(&self) -> &'static str {
        M::TYPE_NAME
    }

    #[doc(hidden)]
    fn typetag_deserialize(&self) {}
}

/// A registered module type, as `streamwire list` shows it.
#[derive(Debug)]
pub struct ModuleRegistration {
    /// The stable tag (`Camera`).
    pub tag: &'static str,
    /// The first line of the module's doc comment, or empty.
    pub doc: &'static str,
    /// The names of its `#[config]` fields.
    pub config_fields: &'static [&'static str],
    /// The `#[config]` fields that declare their own default (`#[config(default ...)]`).
    pub defaulted_fields: &'static [&'static str],
    /// Whether the module implements `Default` (then no field is required in a file).
    pub has_default: fn() -> bool,
    /// The declared ranges of its `#[config]` fields ([`Module::CONFIG_RANGES`]).
    pub ranges: &'static [crate::FieldRange],
}

impl ModuleRegistration {
    /// What field `field` accepts, when it declares a range.
    pub fn accepts(&self, field: &str) -> Option<&'static str> {
        self.ranges
            .iter()
            .find(|r| r.field == field)
            .map(|r| r.accepts)
    }

    /// The `#[config]` fields a blueprint file must give: none when the module implements
    /// `Default`, else those without a declared default.
    pub fn required_fields(&self) -> Vec<&'static str> {
        if (self.has_default)() {
            return Vec::new();
        }
        self.config_fields
            .iter()
            .copied()
            .filter(|f| !self.defaulted_fields.contains(f))
            .collect()
    }
}

/// The registration of module type `tag`, if one is linked into this binary.
pub fn registration(tag: &str) -> Option<&'static ModuleRegistration> {
    inventory::iter::<ModuleRegistration>
        .into_iter()
        .find(|r| r.tag == tag)
}

inventory::collect!(ModuleRegistration);

/// Every module type linked into this binary, sorted by tag.
///
/// A module crate that nothing else references is still listed if it is linked: the
/// registrations are `inventory` statics, collected at startup.
pub fn registered_modules() -> Vec<&'static ModuleRegistration> {
    let mut all: Vec<_> = inventory::iter::<ModuleRegistration>.into_iter().collect();
    all.sort_by_key(|r| r.tag);
    all.dedup_by_key(|r| r.tag);
    all
}

/// A module type some of whose `#[config]` fields declare no default
/// ([`Module::declared`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "module `{module}` has a setting without a declared default ({reason}): declare \
     `#[config(default = ..)]` on it, or give the value in code"
)]
pub struct UndeclaredSetting {
    /// The module type.
    pub module: &'static str,
    /// What is missing, as serde says it (`missing field `threshold``).
    pub reason: String,
}

/// See [`Module::declared`]: the module read from an empty map, as a file's instance
/// giving only its `type` is.
pub(crate) fn declared<M: Module + DeserializeOwned>() -> Result<M, UndeclaredSetting> {
    let empty = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(
        std::iter::empty::<(&str, &str)>(),
    );
    M::deserialize(empty).map_err(|error| UndeclaredSetting {
        module: M::TYPE_NAME,
        reason: error.to_string(),
    })
}
