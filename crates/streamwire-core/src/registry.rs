//! Module types by name: what a blueprint file's `type: Camera` finds.
//!
//! `#[derive(Module)]` registers every module type under its stable tag (its
//! `TYPE_NAME`, `#[module(name = "...")]`), one concrete registration per type (typetag
//! cannot deserialize generic impls, and the derive refuses generic modules). A module
//! value serializes as its `#[config]` fields; its ports are not data and are rebuilt
//! (`In::new()`, `Out::new()`) when it is loaded, its `#[state]` fields start from
//! `Default`.

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
