//! A message type's serde form, traced: the fields, their types and the enums' variants
//! as serde sees them, renames and `with` attributes included. A recorder writes it as a
//! schema for the messages that have no ROS 2 type (an application's own), and a replay
//! compares it with the type it reads into.

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;

pub use serde_reflection::{ContainerFormat, Format, Named, Registry, VariantFormat};

/// A message type's serde form: its root format and every struct and enum it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The message itself (`TypeName` of its struct, usually).
    pub root: Format,
    /// The structs and enums it names, by their serde names.
    pub containers: Registry,
}

/// Why a message type's serde form cannot be traced (a field deserialized with
/// `deserialize_any`: untagged or internally tagged enums, `serde_json::Value`, flattened
/// structs; a type whose `Deserialize` refuses serde's sample values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its serde form cannot be traced: {0}")]
pub struct ShapeError(pub String);

/// Traces `M`'s serde form (not human-readable, as the wire frame's CBOR sees it): what
/// [`Message::describe`](crate::Message::describe) does unless a type says otherwise.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// use streamwire_core::shape::{ContainerFormat, Format, trace};
///
/// #[derive(Deserialize, Serialize)]
/// struct Joint { name: String, position: f64 }
///
/// let shape = trace::<Joint>()?;
/// assert_eq!(shape.root, Format::TypeName("Joint".into()));
/// let ContainerFormat::Struct(fields) = &shape.containers["Joint"] else { panic!() };
/// assert_eq!(fields[1].name, "position");
/// assert_eq!(fields[1].value, Format::F64);
/// # Ok::<(), streamwire_core::shape::ShapeError>(())
/// ```
pub fn trace<M: DeserializeOwned>() -> Result<Shape, ShapeError> {
    let fail = |e: serde_reflection::Error| match e {
        serde_reflection::Error::NotSupported(what) => ShapeError(format!(
            "a field is read with serde's `{what}` (an untagged or internally tagged enum, a \
             `serde_json::Value`, a flattened struct), which tells nothing of its form"
        )),
        e => ShapeError(e.to_string()),
    };
    let samples = serde_reflection::Samples::new();
    // serde-reflection learns one more variant of an enum per visit, and goes on visiting
    // a nested enum only once told it is incomplete: trace again, asking after every enum
    // met so far, until none is; an enum first met inside another's variant shows up as
    // missing at the end, and a new pass asks after it too.
    let mut enums: BTreeSet<String> = BTreeSet::new();
    for _ in 0..PASSES {
        let mut tracer = serde_reflection::Tracer::new(serde_reflection::TracerConfig::default());
        let mut root = Format::unknown();
        for _ in 0..ROUNDS {
            root = tracer.trace_type_once::<M>(&samples).map_err(fail)?.0;
            let mut incomplete = false;
            let own = match &root {
                Format::TypeName(name) => Some(name.clone()),
                _ => None,
            };
            for name in enums.iter().chain(own.as_ref()) {
                incomplete |= tracer.check_incomplete_enum(name).is_some();
            }
            if !incomplete {
                break;
            }
        }
        match tracer.registry() {
            Ok(containers) => return Ok(Shape { root, containers }),
            Err(serde_reflection::Error::MissingVariants(names))
                if names.iter().any(|n| !enums.contains(n)) =>
            {
                enums.extend(names);
            }
            Err(e) => return Err(fail(e)),
        }
    }
    Err(ShapeError(format!(
        "its enums are nested more than {PASSES} deep"
    )))
}

/// Passes over a type, each knowing more of its enums.
const PASSES: usize = 16;
/// Traces per pass: the most variants an enum may have, and more.
const ROUNDS: usize = 1024;
