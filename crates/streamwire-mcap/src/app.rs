//! An application's own messages (no ROS 2 type) in a recording: a JSON Schema made from
//! the type's traced serde form ([`Message::describe`]), messages as JSON with byte fields
//! as base64 strings (Foxglove's convention for `jsonschema`/`json` channels), a hash of
//! the schema on the channel so that a replay into a changed type is refused.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ciborium::Value as Cbor;
use serde_json::{Map, Value as Json, json};
use sha2::Digest as _;
use streamwire_core::shape::{ContainerFormat, Format, Registry, Shape, VariantFormat};
use streamwire_core::{AnyMessage, Message, message_info};

use crate::scan::ReadError;

/// The schema encoding of an application's channel.
pub(crate) const SCHEMA_ENCODING: &str = "jsonschema";
/// The message encoding of an application's channel.
pub(crate) const MESSAGE_ENCODING: &str = "json";
/// The channel metadata key holding the schema's hash ([`AppSchema::hash`]).
pub const HASH_KEY: &str = "streamwire_type_hash";

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Why a message type cannot be recorded or replayed as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// No message type of that name is linked into this program.
    #[error("`{0}` is not a message type of this program")]
    Unknown(String),
    /// Its serde form cannot be traced or written as a JSON Schema.
    #[error("{type_name}: {reason}")]
    Shape {
        /// The message type.
        type_name: String,
        /// Why.
        reason: String,
    },
    /// A message does not fit its schema's JSON (a float that is not finite, a map key
    /// that is neither text nor an integer).
    #[error("{type_name}: {reason}")]
    Value {
        /// The message type.
        type_name: String,
        /// Why.
        reason: String,
    },
}

/// The schema of an application's message type in a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppSchema {
    /// The message's wire name (`acme/JointState`): the MCAP schema's name.
    pub type_name: String,
    /// The JSON Schema (draft 2020-12, every type inlined: Foxglove reads no `$ref`).
    pub text: String,
    /// `sha256:` and the hex digest of `text`: the same for the same serde form.
    pub hash: String,
    /// `text`, parsed: what a replay reads the JSON back with.
    schema: Json,
}

impl AppSchema {
    /// The schema of the registered message type `type_name`.
    pub fn of_type(type_name: &str) -> Result<AppSchema, AppError> {
        let info = message_info(type_name).ok_or_else(|| AppError::Unknown(type_name.into()))?;
        let shape = info.describe().map_err(|e| AppError::Shape {
            type_name: type_name.into(),
            reason: e.to_string(),
        })?;
        AppSchema::new(type_name, shape)
    }

    /// The schema of `M`.
    pub fn of<M: Message>() -> Result<AppSchema, AppError> {
        let shape = M::describe().map_err(|e| AppError::Shape {
            type_name: M::TYPE_NAME.into(),
            reason: e.to_string(),
        })?;
        AppSchema::new(M::TYPE_NAME, shape)
    }

    fn new(type_name: &str, shape: Shape) -> Result<AppSchema, AppError> {
        let mut stack = Vec::new();
        let mut schema =
            format_schema(&shape.root, &shape.containers, &mut stack).map_err(|reason| {
                AppError::Shape {
                    type_name: type_name.into(),
                    reason,
                }
            })?;
        if let Json::Object(object) = &mut schema {
            object.insert(
                "$schema".into(),
                json!("https://json-schema.org/draft/2020-12/schema"),
            );
            object.insert("title".into(), json!(type_name));
        }
        // serde_json's maps are sorted: the same shape is the same text, and hash.
        let text = schema.to_string();
        let hash = format!("sha256:{:x}", sha2::Sha256::digest(text.as_bytes()));
        Ok(AppSchema {
            type_name: type_name.into(),
            text,
            hash,
            schema,
        })
    }

    /// `message` as its channel's JSON (byte fields as base64 strings).
    pub fn encode(&self, message: &dyn AnyMessage) -> Result<Vec<u8>, AppError> {
        let fail = |reason: String| AppError::Value {
            type_name: self.type_name.clone(),
            reason,
        };
        // typetag writes `{"<type name>": <the message>}`.
        let tagged = Cbor::serialized(message).map_err(|e| fail(e.to_string()))?;
        let inner = match tagged {
            Cbor::Map(mut entries) if entries.len() == 1 => entries.remove(0).1,
            other => other,
        };
        let json = to_json(inner).map_err(fail)?;
        serde_json::to_vec(&json).map_err(|e| fail(e.to_string()))
    }

    /// A channel's JSON read back as `M` (this schema being `M`'s).
    fn decode<M: Message>(&self, data: &[u8]) -> Result<M, String> {
        let json: Json = serde_json::from_slice(data).map_err(|e| e.to_string())?;
        let value = from_json(json, &self.schema)?;
        value.deserialized::<M>().map_err(|e| e.to_string())
    }
}

/// The JSON Schema of `format`, its containers inlined.
fn format_schema(
    format: &Format,
    containers: &Registry,
    stack: &mut Vec<String>,
) -> Result<Json, String> {
    let recurse = |f: &Format, stack: &mut Vec<String>| format_schema(f, containers, stack);
    Ok(match format {
        Format::TypeName(name) => {
            if stack.contains(name) {
                return Err(format!(
                    "contains itself (`{name}`), which a JSON Schema without `$ref` \
                     (what Foxglove reads) cannot describe"
                ));
            }
            let container = containers
                .get(name)
                .ok_or_else(|| format!("`{name}` was not traced"))?;
            stack.push(name.clone());
            let schema = container_schema(name, container, containers, stack)?;
            stack.pop();
            schema
        }
        Format::Unit => json!({"type": "null"}),
        Format::Bool => json!({"type": "boolean"}),
        Format::I8 | Format::I16 | Format::I32 | Format::I64 | Format::I128 => {
            json!({"type": "integer"})
        }
        Format::U8 | Format::U16 | Format::U32 | Format::U64 | Format::U128 => {
            json!({"type": "integer", "minimum": 0})
        }
        Format::F32 | Format::F64 => json!({"type": "number"}),
        Format::Char | Format::Str => json!({"type": "string"}),
        Format::Bytes => json!({"type": "string", "contentEncoding": "base64"}),
        Format::Option(inner) => json!({"anyOf": [recurse(inner, stack)?, {"type": "null"}]}),
        Format::Seq(inner) => json!({"type": "array", "items": recurse(inner, stack)?}),
        Format::Map { key, value } => {
            let value = recurse(value, stack)?;
            if map_key(key)? {
                json!({"type": "object", "additionalProperties": value})
            } else {
                json!({"type": "object", "additionalProperties": value,
                       "propertyNames": {"pattern": "^-?[0-9]+$"}})
            }
        }
        Format::Tuple(items) => tuple_schema(items, containers, stack)?,
        Format::TupleArray { content, size } => json!({
            "type": "array", "items": recurse(content, stack)?, "minItems": size, "maxItems": size,
        }),
        Format::Variable(_) => return Err("has a field serde did not trace".into()),
    })
}

fn tuple_schema(
    items: &[Format],
    containers: &Registry,
    stack: &mut Vec<String>,
) -> Result<Json, String> {
    let items = items
        .iter()
        .map(|f| format_schema(f, containers, stack))
        .collect::<Result<Vec<_>, _>>()?;
    let n = items.len();
    Ok(json!({"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}))
}

/// A struct as an object of its fields, an enum as serde writes it (externally tagged:
/// a unit variant is its name, the others `{"<variant>": <its content>}`).
fn container_schema(
    name: &str,
    container: &ContainerFormat,
    containers: &Registry,
    stack: &mut Vec<String>,
) -> Result<Json, String> {
    Ok(match container {
        ContainerFormat::UnitStruct => json!({"type": "null"}),
        ContainerFormat::NewTypeStruct(inner) => format_schema(inner, containers, stack)?,
        ContainerFormat::TupleStruct(items) => tuple_schema(items, containers, stack)?,
        ContainerFormat::Struct(fields) => {
            let mut properties = Map::new();
            for field in fields {
                properties.insert(
                    field.name.clone(),
                    format_schema(&field.value, containers, stack)?,
                );
            }
            let required: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            json!({"title": name, "type": "object", "properties": properties, "required": required})
        }
        ContainerFormat::Enum(variants) => {
            let mut one_of = Vec::new();
            for variant in variants.values() {
                let content = match &variant.value {
                    VariantFormat::Unit => {
                        one_of.push(json!({"const": variant.name}));
                        continue;
                    }
                    VariantFormat::NewType(inner) => format_schema(inner, containers, stack)?,
                    VariantFormat::Tuple(items) => tuple_schema(items, containers, stack)?,
                    VariantFormat::Struct(fields) => container_schema(
                        &variant.name,
                        &ContainerFormat::Struct(fields.clone()),
                        containers,
                        stack,
                    )?,
                    VariantFormat::Variable(_) => {
                        return Err(format!("has a variant of `{name}` serde did not trace"));
                    }
                };
                one_of.push(json!({
                    "type": "object",
                    "properties": {variant.name.clone(): content},
                    "required": [variant.name],
                    "additionalProperties": false,
                }));
            }
            json!({"title": name, "oneOf": one_of})
        }
    })
}

/// Maps are JSON objects: their keys text (`true`), or integers written as text.
fn map_key(key: &Format) -> Result<bool, String> {
    match key {
        Format::Str | Format::Char => Ok(true),
        Format::I8
        | Format::I16
        | Format::I32
        | Format::I64
        | Format::U8
        | Format::U16
        | Format::U32
        | Format::U64 => Ok(false),
        other => Err(format!(
            "has a map whose keys ({other:?}) are neither text nor integers: JSON cannot hold it"
        )),
    }
}

/// serde's (CBOR) value of a message as JSON: byte strings as base64, integer map keys as
/// text.
fn to_json(value: Cbor) -> Result<Json, String> {
    Ok(match value {
        Cbor::Null => Json::Null,
        Cbor::Bool(b) => Json::Bool(b),
        Cbor::Integer(i) => {
            let i = i128::from(i);
            if let Ok(u) = u64::try_from(i) {
                json!(u)
            } else if let Ok(s) = i64::try_from(i) {
                json!(s)
            } else {
                return Err(format!("the integer {i} does not fit JSON's 64 bits"));
            }
        }
        Cbor::Float(f) => serde_json::Number::from_f64(f)
            .map(Json::Number)
            .ok_or_else(|| format!("the float {f} is not finite: JSON cannot hold it"))?,
        Cbor::Bytes(bytes) => Json::String(BASE64.encode(bytes)),
        Cbor::Text(text) => Json::String(text),
        Cbor::Array(items) => {
            Json::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Cbor::Map(entries) => {
            let mut object = Map::new();
            for (key, value) in entries {
                let key = match key {
                    Cbor::Text(text) => text,
                    Cbor::Integer(i) => i128::from(i).to_string(),
                    other => {
                        return Err(format!(
                            "a map key {other:?} is neither text nor an integer"
                        ));
                    }
                };
                object.insert(key, to_json(value)?);
            }
            Json::Object(object)
        }
        Cbor::Tag(_, inner) => to_json(*inner)?,
        other => return Err(format!("{other:?} has no JSON form")),
    })
}

/// A channel's JSON as serde's (CBOR) value of the type `schema` describes: base64 text
/// back to bytes where the schema says so, integer keys back to integers.
fn from_json(json: Json, schema: &Json) -> Result<Cbor, String> {
    let any = Json::Object(Map::new());
    let base64 = schema.get("contentEncoding").and_then(Json::as_str) == Some("base64");
    Ok(match json {
        Json::String(text) if base64 => Cbor::Bytes(
            BASE64
                .decode(text)
                .map_err(|e| format!("a byte field is not base64: {e}"))?,
        ),
        Json::Null => Cbor::Null,
        json if schema.get("anyOf").is_some() => {
            // An `Option`: `[<the value's schema>, null]`.
            let inner = schema.pointer("/anyOf/0").unwrap_or(&any);
            from_json(json, inner)?
        }
        Json::Object(object) if schema.get("oneOf").is_some() => {
            // An enum's variant with content: `{"<variant>": <content>}`.
            let mut entries = Vec::new();
            for (name, content) in object {
                let variants = schema.get("oneOf").and_then(Json::as_array);
                let inner = variants
                    .into_iter()
                    .flatten()
                    .find_map(|v| v.get("properties").and_then(|p| p.get(&name)))
                    .ok_or_else(|| format!("no variant `{name}`"))?;
                entries.push((Cbor::Text(name), from_json(content, inner)?));
            }
            Cbor::Map(entries)
        }
        Json::Object(object) => {
            let properties = schema.get("properties");
            let values = schema.get("additionalProperties").unwrap_or(&any);
            let integer_keys = schema.get("propertyNames").is_some();
            let mut entries = Vec::new();
            for (key, value) in object {
                let inner = properties.and_then(|p| p.get(&key)).unwrap_or(values);
                let key = if integer_keys {
                    Cbor::Integer(
                        key.parse::<i128>()
                            .ok()
                            .and_then(|i| ciborium::value::Integer::try_from(i).ok())
                            .ok_or_else(|| format!("the map key `{key}` is not an integer"))?,
                    )
                } else {
                    Cbor::Text(key)
                };
                entries.push((key, from_json(value, inner)?));
            }
            Cbor::Map(entries)
        }
        Json::Array(items) => {
            let each = schema.get("items").unwrap_or(&any);
            let prefix = schema.get("prefixItems").and_then(Json::as_array);
            let mut values = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                let inner = prefix.and_then(|p| p.get(i)).unwrap_or(each);
                values.push(from_json(item, inner)?);
            }
            Cbor::Array(values)
        }
        json => plain(json),
    })
}

/// JSON with nothing to restore, as CBOR.
fn plain(json: Json) -> Cbor {
    match json {
        Json::Null => Cbor::Null,
        Json::Bool(b) => Cbor::Bool(b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Cbor::Integer(u.into()),
            (None, Some(i)) => Cbor::Integer(i.into()),
            _ => Cbor::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(text) => Cbor::Text(text),
        Json::Array(items) => Cbor::Array(items.into_iter().map(plain).collect()),
        Json::Object(object) => Cbor::Map(
            object
                .into_iter()
                .map(|(k, v)| (Cbor::Text(k), plain(v)))
                .collect(),
        ),
    }
}

/// Why an application topic of a recording cannot be replayed into a type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppReplayError {
    /// The file could not be read.
    #[error("the replay cannot read its file")]
    Read(#[from] ReadError),
    /// The topic is not in the file.
    #[error("{path}: no topic `{topic}` recorded as JSON")]
    NoTopic {
        /// The file.
        path: PathBuf,
        /// The topic asked for.
        topic: String,
    },
    /// The type read into has no JSON schema.
    #[error("cannot replay into this type")]
    Schema(#[from] AppError),
    /// The topic was recorded from another type, or from this type before it changed.
    #[error(
        "{topic} was recorded as {recorded} ({recorded_hash}); it cannot be replayed into \
         {expected} ({expected_hash}): the types differ"
    )]
    TypeChanged {
        /// The topic.
        topic: String,
        /// The type the file's channel names.
        recorded: String,
        /// Its schema hash in the file.
        recorded_hash: String,
        /// The type read into.
        expected: String,
        /// Its schema hash now.
        expected_hash: String,
    },
    /// A message does not read as the type.
    #[error("{topic}: a message does not read as {type_name}: {reason}")]
    Decode {
        /// The topic.
        topic: String,
        /// The type.
        type_name: &'static str,
        /// Why.
        reason: String,
    },
}

/// The messages of one application topic of a recording, read back as `M` in file order
/// with their log times (nanoseconds); refused at once when the topic was recorded from
/// another type or a changed one (the schema hashes differ).
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/Count")]
/// struct Count { frame: u64 }
///
/// for message in streamwire_mcap::AppReplay::<Count>::open("run.mcap".as_ref(), "/counts")? {
///     let (log_time, count) = message?;
///     println!("{log_time}: {}", count.frame);
/// }
/// # Ok::<(), streamwire_mcap::AppReplayError>(())
/// ```
pub struct AppReplay<M> {
    reader: crate::scan::FileMessages,
    topic: String,
    schema: AppSchema,
    first: Option<mcap::Message<'static>>,
    done: bool,
    _type: PhantomData<fn() -> M>,
}

impl<M: Message> AppReplay<M> {
    /// Opens `topic` of `path`, checking its type against `M`'s.
    pub fn open(path: &Path, topic: &str) -> Result<AppReplay<M>, AppReplayError> {
        let schema = AppSchema::of::<M>()?;
        let mut reader = crate::scan::open(path)?;
        let first = loop {
            match reader.messages.next() {
                None => {
                    return Err(AppReplayError::NoTopic {
                        path: path.to_owned(),
                        topic: topic.to_owned(),
                    });
                }
                Some(Err(source)) => {
                    return Err(ReadError::Mcap {
                        path: path.to_owned(),
                        source,
                    }
                    .into());
                }
                Some(Ok(message)) if message.channel.topic == topic => break message,
                Some(Ok(_)) => {}
            }
        };
        check(&first.channel, topic, &schema)?;
        Ok(AppReplay {
            reader,
            topic: topic.to_owned(),
            schema,
            first: Some(first),
            done: false,
            _type: PhantomData,
        })
    }
}

/// Refuses a channel of another type, or of this type's name with another schema hash.
fn check(
    channel: &mcap::Channel<'_>,
    topic: &str,
    schema: &AppSchema,
) -> Result<(), AppReplayError> {
    let recorded = channel
        .schema
        .as_ref()
        .map_or_else(String::new, |s| s.name.clone());
    let recorded_hash = channel
        .metadata
        .get(HASH_KEY)
        .cloned()
        .unwrap_or_else(|| "no hash".to_owned());
    let json = channel.message_encoding == MESSAGE_ENCODING;
    if !json || recorded != schema.type_name || recorded_hash != schema.hash {
        return Err(AppReplayError::TypeChanged {
            topic: topic.to_owned(),
            recorded,
            recorded_hash,
            expected: schema.type_name.clone(),
            expected_hash: schema.hash.clone(),
        });
    }
    Ok(())
}

impl<M: Message> Iterator for AppReplay<M> {
    type Item = Result<(u64, M), AppReplayError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let message = match self.first.take() {
            Some(first) => first,
            None => loop {
                match self.reader.messages.next()? {
                    Ok(m) if m.channel.topic == self.topic => break m,
                    Ok(_) => {}
                    Err(error) => {
                        // A file cut short: its messages up to the last complete chunk.
                        tracing::warn!(error = %streamwire_core::log::chain(&error), "the file ends cut short");
                        self.done = true;
                        return None;
                    }
                }
            },
        };
        if let Err(error) = check(&message.channel, &self.topic, &self.schema) {
            self.done = true;
            return Some(Err(error));
        }
        Some(
            self.schema
                .decode::<M>(&message.data)
                .map(|m| (message.log_time, m))
                .map_err(|reason| AppReplayError::Decode {
                    topic: self.topic.clone(),
                    type_name: M::TYPE_NAME,
                    reason,
                }),
        )
    }
}

/// The JSON channels' metadata: the schema's hash.
pub(crate) fn channel_metadata(schema: &AppSchema) -> BTreeMap<String, String> {
    BTreeMap::from([(HASH_KEY.to_owned(), schema.hash.clone())])
}
