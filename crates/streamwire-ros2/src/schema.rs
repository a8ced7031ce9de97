//! ROS 2 message definitions: `.msg` texts parsed into a small model, and what ROS tools
//! are given from it: the full text with dependencies (MCAP's `ros2msg` schema and
//! rosbridge's `typedefs_full_text`), rosapi's `TypeDef[]`, and the REP-2011 type hash
//! (`RIHS01_<sha256>`).

use std::collections::{BTreeMap, HashSet};
use std::fmt::{self, Write as _};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// One `.msg` text and the full name of the type it defines (`package/msg/Type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgSource {
    /// `package/msg/Type`, e.g. `geometry_msgs/msg/Twist`.
    pub name: &'static str,
    /// The `.msg` text.
    pub text: &'static str,
}

macro_rules! sources {
    ($($name:literal),* $(,)?) => {
        &[$(MsgSource { name: $name, text: include_str!(concat!("../msg/", $name, ".msg")) }),*]
    };
}

/// The definitions this crate ships (`msg/`, see its README for sources and licences):
/// every type the built-in messages map to, and the types those use.
pub const STANDARD: &[MsgSource] = sources![
    "builtin_interfaces/msg/Time",
    "std_msgs/msg/Header",
    "geometry_msgs/msg/Point",
    "geometry_msgs/msg/Pose",
    "geometry_msgs/msg/PoseWithCovariance",
    "geometry_msgs/msg/Quaternion",
    "geometry_msgs/msg/Transform",
    "geometry_msgs/msg/TransformStamped",
    "geometry_msgs/msg/Twist",
    "geometry_msgs/msg/TwistWithCovariance",
    "geometry_msgs/msg/Vector3",
    "nav_msgs/msg/MapMetaData",
    "nav_msgs/msg/OccupancyGrid",
    "nav_msgs/msg/Odometry",
    "point_cloud_interfaces/msg/CompressedPointCloud2",
    "rcl_interfaces/msg/Log",
    "sensor_msgs/msg/CompressedImage",
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/PointCloud2",
    "sensor_msgs/msg/PointField",
    "tf2_msgs/msg/TFMessage",
    "vision_msgs/msg/BoundingBox2D",
    "vision_msgs/msg/Detection2D",
    "vision_msgs/msg/Detection2DArray",
    "vision_msgs/msg/ObjectHypothesis",
    "vision_msgs/msg/ObjectHypothesisWithPose",
    "vision_msgs/msg/Point2D",
    "vision_msgs/msg/Pose2D",
];

/// Why a definition could not be parsed or resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A line of a `.msg` text is not a field or a constant.
    #[error("{type_name}, line {line}: {reason}")]
    Parse {
        /// The type whose text it is.
        type_name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A type name is not of the form `package/msg/Type` (or `package/Type`).
    #[error("`{name}` is not a ROS 2 type name (package/msg/Type)")]
    BadName {
        /// The name given.
        name: String,
    },
    /// A type is used but no definition of it was given or shipped.
    #[error("no definition of `{name}` (used by `{used_by}`)")]
    Unknown {
        /// The missing type.
        name: String,
        /// The type that uses it (or the root itself).
        used_by: String,
    },
}

/// The primitive types of `.msg` files, with their type ids in REP-2011's type
/// description (`type_description_interfaces/msg/FieldType`).
const PRIMITIVES: &[(&str, u8)] = &[
    ("int8", 2),
    ("uint8", 3),
    ("int16", 4),
    ("uint16", 5),
    ("int32", 6),
    ("uint32", 7),
    ("int64", 8),
    ("uint64", 9),
    ("float32", 10),
    ("float64", 11),
    ("char", 13),
    ("bool", 15),
    ("byte", 16),
    ("string", 17),
];
const TYPE_ID_NESTED: u8 = 1;
const TYPE_ID_BOUNDED_STRING: u8 = 21;

/// What a field holds, without its array-ness.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaseType {
    /// A number, `bool`, `byte` or `char` (its `.msg` name).
    Primitive(&'static str),
    /// A string, with its bound (`string<=N`) if any.
    String(Option<u64>),
    /// Another message, by full name (`package/msg/Type`).
    Nested(String),
}

/// Whether and how a field repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Repeat {
    /// One value.
    Single,
    /// `T[N]`: exactly `N` values.
    Array(u64),
    /// `T[<=N]`: up to `N` values.
    Bounded(u64),
    /// `T[]`: any number of values.
    Sequence,
}

/// A field's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldType {
    /// What one value is.
    pub base: BaseType,
    /// How many values there are.
    pub repeat: Repeat,
}

/// One field of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: FieldType,
    /// Its default value as written, if any.
    pub default: Option<String>,
}

/// One constant of a message (`uint8 DEBUG=10`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constant {
    /// Its name.
    pub name: String,
    /// Its primitive type.
    pub ty: &'static str,
    /// Its value as written.
    pub value: String,
}

/// A parsed `.msg` definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsgDef {
    /// `package/msg/Type`.
    pub name: String,
    /// Constants, in the order written.
    pub constants: Vec<Constant>,
    /// Fields, in the order written (the CDR order).
    pub fields: Vec<Field>,
}

/// Splits `package/msg/Type` or `package/Type` into package and type.
fn split_name(name: &str) -> Result<(&str, &str), SchemaError> {
    let bad = || SchemaError::BadName {
        name: name.to_owned(),
    };
    let parts: Vec<&str> = name.split('/').collect();
    let (package, ty) = match parts.as_slice() {
        [package, "msg", ty] | [package, ty] => (*package, *ty),
        _ => return Err(bad()),
    };
    let identifier = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if identifier(package) && identifier(ty) {
        Ok((package, ty))
    } else {
        Err(bad())
    }
}

/// The short form used in `.msg` texts and rosapi: `package/Type`.
fn short_name(full: &str) -> String {
    match split_name(full) {
        Ok((package, ty)) => format!("{package}/{ty}"),
        Err(_) => full.to_owned(),
    }
}

impl MsgDef {
    /// Parses the `.msg` `text` of the type `name` (`package/msg/Type`). Types named
    /// without a package are taken from the same package.
    ///
    /// ```
    /// use streamwire_ros2::schema::{BaseType, MsgDef, Repeat};
    /// let def = MsgDef::parse("acme/msg/Beep", "uint8 LOUD=2 # a constant\nuint8 volume\nPoint2D[<=4] at\n")?;
    /// assert_eq!(def.constants[0].value, "2");
    /// assert_eq!(def.fields[1].ty.base, BaseType::Nested("acme/msg/Point2D".into()));
    /// assert_eq!(def.fields[1].ty.repeat, Repeat::Bounded(4));
    /// # Ok::<(), streamwire_ros2::schema::SchemaError>(())
    /// ```
    pub fn parse(name: &str, text: &str) -> Result<MsgDef, SchemaError> {
        let (package, ty) = split_name(name)?;
        let mut def = MsgDef {
            name: format!("{package}/msg/{ty}"),
            constants: Vec::new(),
            fields: Vec::new(),
        };
        for (index, line) in text.lines().enumerate() {
            def.parse_line(package, line)
                .map_err(|reason| SchemaError::Parse {
                    type_name: def.name.clone(),
                    line: index + 1,
                    reason,
                })?;
        }
        Ok(def)
    }

    fn parse_line(&mut self, package: &str, line: &str) -> Result<(), String> {
        let line = line.trim();
        let Some((type_text, rest)) = line.split_once(char::is_whitespace) else {
            // infallible: `split` yields at least one piece
            return match line.split('#').next().unwrap_or_default().trim() {
                "" => Ok(()),
                other => Err(format!("`{other}` has no name")),
            };
        };
        if type_text.starts_with('#') {
            return Ok(());
        }
        let ty = parse_type(package, type_text)?;
        let rest = rest.trim_start();
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        if name.is_empty() {
            return Err(format!("no field name after `{type_text}`"));
        }
        let after = after.trim_start();
        if let Some(value) = after.strip_prefix('=') {
            let value = match ty.base {
                // A string constant's value is the rest of the line, `#` included.
                BaseType::String(_) => value.trim(),
                // infallible: `split` yields at least one piece
                _ => value.split('#').next().unwrap_or_default().trim(),
            };
            let prim = match (&ty.base, ty.repeat) {
                (BaseType::Primitive(prim), Repeat::Single) => *prim,
                (BaseType::String(None), Repeat::Single) => "string",
                _ => return Err(format!("constant `{name}` must be a primitive or a string")),
            };
            self.constants.push(Constant {
                name: name.to_owned(),
                ty: prim,
                value: value.to_owned(),
            });
            return Ok(());
        }
        // infallible: `split` yields at least one piece
        let default = after.split('#').next().unwrap_or_default().trim();
        self.fields.push(Field {
            name: name.to_owned(),
            ty,
            default: (!default.is_empty()).then(|| default.to_owned()),
        });
        Ok(())
    }
}

fn parse_bound(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not an array or string bound"))
}

fn parse_type(package: &str, text: &str) -> Result<FieldType, String> {
    let (base_text, repeat) = match text.split_once('[') {
        None => (text, Repeat::Single),
        Some((base, bracket)) => {
            let inner = bracket
                .strip_suffix(']')
                .ok_or_else(|| format!("`{text}`: unclosed `[`"))?;
            let repeat = match inner {
                "" => Repeat::Sequence,
                _ => match inner.strip_prefix("<=") {
                    Some(bound) => Repeat::Bounded(parse_bound(bound)?),
                    None => Repeat::Array(parse_bound(inner)?),
                },
            };
            (base, repeat)
        }
    };
    let base = if let Some(bound) = base_text.strip_prefix("string<=") {
        BaseType::String(Some(parse_bound(bound)?))
    } else if base_text == "string" {
        BaseType::String(None)
    } else if let Some(&(prim, _)) = PRIMITIVES.iter().find(|(p, _)| *p == base_text) {
        BaseType::Primitive(prim)
    } else {
        let full = if base_text.contains('/') {
            base_text.to_owned()
        } else {
            format!("{package}/{base_text}")
        };
        let (pkg, ty) = split_name(&full).map_err(|e| e.to_string())?;
        BaseType::Nested(format!("{pkg}/msg/{ty}"))
    };
    Ok(FieldType { base, repeat })
}

impl fmt::Display for FieldType {
    /// The type as a `.msg` text writes it: `geometry_msgs/Pose`, `string<=8`, `float64[36]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.base {
            BaseType::Primitive(p) => f.write_str(p)?,
            BaseType::String(None) => f.write_str("string")?,
            BaseType::String(Some(bound)) => write!(f, "string<={bound}")?,
            BaseType::Nested(name) => f.write_str(&short_name(name))?,
        }
        match self.repeat {
            Repeat::Single => Ok(()),
            Repeat::Array(n) => write!(f, "[{n}]"),
            Repeat::Bounded(n) => write!(f, "[<={n}]"),
            Repeat::Sequence => f.write_str("[]"),
        }
    }
}

/// A type with every type it uses, resolved: what a ROS tool needs to know about it.
///
/// ```
/// use streamwire_ros2::schema::RosSchema;
///
/// let twist = RosSchema::standard("geometry_msgs/msg/Twist")?;
/// assert_eq!(
///     twist.full_text(),
///     format!("geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n{}\nMSG: geometry_msgs/Vector3\nfloat64 x\nfloat64 y\nfloat64 z\n", "=".repeat(80)),
/// );
/// assert_eq!(
///     twist.rihs01(),
///     "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a"
/// );
/// # Ok::<(), streamwire_ros2::schema::SchemaError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RosSchema {
    root: MsgDef,
    /// Every type the root uses, by full name.
    used: BTreeMap<String, MsgDef>,
}

impl RosSchema {
    /// The schema of `root` from the definitions this crate ships ([`STANDARD`]).
    pub fn standard(root: &str) -> Result<RosSchema, SchemaError> {
        RosSchema::resolve(root, &[])
    }

    /// The schema of `root`, its definitions taken from `sources` first, then from
    /// [`STANDARD`] (so a user's type may use `geometry_msgs` without shipping them).
    pub fn resolve(root: &str, sources: &[MsgSource]) -> Result<RosSchema, SchemaError> {
        let (package, ty) = split_name(root)?;
        let root = format!("{package}/msg/{ty}");
        let mut defs = BTreeMap::new();
        let mut todo = vec![(root.clone(), root.clone())];
        while let Some((name, used_by)) = todo.pop() {
            if defs.contains_key(&name) {
                continue;
            }
            let source = sources
                .iter()
                .chain(STANDARD)
                .find(|s| split_name(s.name).is_ok_and(|(p, t)| format!("{p}/msg/{t}") == name))
                .ok_or_else(|| SchemaError::Unknown {
                    name: name.clone(),
                    used_by,
                })?;
            let def = MsgDef::parse(&name, source.text)?;
            for field in &def.fields {
                if let BaseType::Nested(nested) = &field.ty.base {
                    todo.push((nested.clone(), name.clone()));
                }
            }
            defs.insert(name, def);
        }
        let root = defs.remove(&root).ok_or_else(|| SchemaError::Unknown {
            name: root.clone(),
            used_by: root,
        })?;
        Ok(RosSchema { root, used: defs })
    }

    /// The root type's full name, `package/msg/Type`.
    pub fn name(&self) -> &str {
        &self.root.name
    }

    /// The definition of `name` (the root or a type it uses).
    pub fn def(&self, name: &str) -> Option<&MsgDef> {
        if name == self.root.name {
            Some(&self.root)
        } else {
            self.used.get(name)
        }
    }

    /// The root's definition.
    pub fn root(&self) -> &MsgDef {
        &self.root
    }

    /// The root, then every type it uses in the order first used (depth first), each once.
    pub fn in_order(&self) -> Vec<&MsgDef> {
        let mut seen = HashSet::new();
        let mut order = Vec::with_capacity(self.used.len() + 1);
        self.visit(&self.root.name, &mut seen, &mut order);
        order
    }

    fn visit<'a>(&'a self, name: &str, seen: &mut HashSet<String>, order: &mut Vec<&'a MsgDef>) {
        let Some(def) = self.def(name) else {
            return;
        };
        if !seen.insert(name.to_owned()) {
            return;
        }
        order.push(def);
        for field in &def.fields {
            if let BaseType::Nested(nested) = &field.ty.base {
                self.visit(nested, seen, order);
            }
        }
    }

    /// The definition with every type it uses, as ROS 2 tools exchange it: MCAP's
    /// `ros2msg` schema, rosbridge's `typedefs_full_text`. The root's text, then for
    /// each used type a line of 80 `=`, `MSG: package/Type` and its text; each text is
    /// normalized (constants, then fields with their defaults; comments left out).
    pub fn full_text(&self) -> String {
        let mut text = String::new();
        for (index, def) in self.in_order().into_iter().enumerate() {
            if index > 0 {
                text.push_str(&"=".repeat(80));
                let _ = writeln!(text, "\nMSG: {}", short_name(&def.name));
            }
            for c in &def.constants {
                let _ = writeln!(text, "{} {}={}", c.ty, c.name, c.value);
            }
            for field in &def.fields {
                let _ = write!(text, "{} {}", field.ty, field.name);
                if let Some(default) = &field.default {
                    let _ = write!(text, " {default}");
                }
                text.push('\n');
            }
        }
        text
    }

    /// rosapi's `TypeDef[]` of the type (the root first, then the types it uses), as
    /// `/rosapi/message_details` answers.
    pub fn type_defs(&self) -> Vec<TypeDef> {
        self.in_order().into_iter().map(TypeDef::of).collect()
    }

    /// The REP-2011 type hash, `RIHS01_` and 64 hex digits: SHA-256 over the canonical
    /// JSON of the type description (the type's fields with type ids, capacities and
    /// nested type names, then every type it uses, sorted by name).
    pub fn rihs01(&self) -> String {
        let mut json = String::from("{\"type_description\": ");
        description_json(self.root(), &mut json);
        json.push_str(", \"referenced_type_descriptions\": [");
        // A type that uses itself is not a ROS type; `used` never holds the root.
        for (index, def) in self.used.values().enumerate() {
            if index > 0 {
                json.push_str(", ");
            }
            description_json(def, &mut json);
        }
        json.push_str("]}");
        let digest = Sha256::digest(json.as_bytes());
        let mut hash = String::from("RIHS01_");
        for byte in digest {
            let _ = write!(hash, "{byte:02x}");
        }
        hash
    }
}

/// One `{"type_name": ..., "fields": [...]}` of a type description, as Python's
/// `json.dumps` writes it (the form REP-2011 hashes).
fn description_json(def: &MsgDef, out: &mut String) {
    let _ = write!(
        out,
        "{{\"type_name\": {}, \"fields\": [",
        json_string(&def.name)
    );
    // A type without fields gets the placeholder rosidl gives it.
    let placeholder = [Field {
        name: "structure_needs_at_least_one_member".to_owned(),
        ty: FieldType {
            base: BaseType::Primitive("uint8"),
            repeat: Repeat::Single,
        },
        default: None,
    }];
    let fields = if def.fields.is_empty() {
        &placeholder[..]
    } else {
        &def.fields[..]
    };
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        let (base_id, string_capacity, nested) = match &field.ty.base {
            BaseType::Primitive(p) => (primitive_id(p), 0, ""),
            BaseType::String(None) => (primitive_id("string"), 0, ""),
            BaseType::String(Some(bound)) => (TYPE_ID_BOUNDED_STRING, *bound, ""),
            BaseType::Nested(name) => (TYPE_ID_NESTED, 0, name.as_str()),
        };
        let (offset, capacity) = match field.ty.repeat {
            Repeat::Single => (0, 0),
            Repeat::Array(n) => (48, n),
            Repeat::Bounded(n) => (96, n),
            Repeat::Sequence => (144, 0),
        };
        let _ = write!(
            out,
            "{{\"name\": {}, \"type\": {{\"type_id\": {}, \"capacity\": {capacity}, \"string_capacity\": {string_capacity}, \"nested_type_name\": {}}}}}",
            json_string(&field.name),
            u32::from(base_id) + offset,
            json_string(nested),
        );
    }
    out.push_str("]}");
}

fn primitive_id(name: &str) -> u8 {
    PRIMITIVES
        .iter()
        .find(|(p, _)| *p == name)
        .map_or(0, |&(_, id)| id)
}

/// A JSON string as Python's `json.dumps` writes it (ASCII only, `\uXXXX` escapes).
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
    out
}

/// One type as rosapi describes it (`rosapi_msgs/TypeDef`): parallel lists of field
/// names, types (`.msg` names: `float64`, `std_msgs/Header`), array lengths (as rosapi:
/// -1 for a single value, 0 for an unbounded sequence, else the length or bound), example
/// values, and the constants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeDef {
    /// `package/Type`.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Field names, in order.
    pub fieldnames: Vec<String>,
    /// Field types without array brackets.
    pub fieldtypes: Vec<String>,
    /// -1 for a single value, 0 for a sequence, else the array's length or bound.
    pub fieldarraylen: Vec<i64>,
    /// An example value of each field, as text (`0`, `""`, `false`, `{}`, `[]`).
    pub examples: Vec<String>,
    /// Constant names.
    pub constnames: Vec<String>,
    /// Constant values, as written.
    pub constvalues: Vec<String>,
}

impl TypeDef {
    fn of(def: &MsgDef) -> TypeDef {
        let mut typedef = TypeDef {
            type_name: short_name(&def.name),
            fieldnames: Vec::new(),
            fieldtypes: Vec::new(),
            fieldarraylen: Vec::new(),
            examples: Vec::new(),
            constnames: def.constants.iter().map(|c| c.name.clone()).collect(),
            constvalues: def.constants.iter().map(|c| c.value.clone()).collect(),
        };
        for field in &def.fields {
            let single = FieldType {
                base: field.ty.base.clone(),
                repeat: Repeat::Single,
            };
            let (length, example) = match (field.ty.repeat, &field.ty.base) {
                (Repeat::Array(n) | Repeat::Bounded(n), _) => {
                    (i64::try_from(n).unwrap_or(i64::MAX), "[]")
                }
                (Repeat::Sequence, _) => (0, "[]"),
                (Repeat::Single, BaseType::Nested(_)) => (-1, "{}"),
                (Repeat::Single, BaseType::String(_)) => (-1, ""),
                (Repeat::Single, BaseType::Primitive("bool")) => (-1, "False"),
                (Repeat::Single, BaseType::Primitive(_)) => (-1, "0"),
            };
            typedef.fieldnames.push(field.name.clone());
            typedef.fieldtypes.push(single.to_string());
            typedef.fieldarraylen.push(length);
            typedef.examples.push(example.to_owned());
        }
        typedef
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arrays_bounds_defaults_and_constants() {
        let def = MsgDef::parse(
            "acme/Thing",
            "# a comment\n\
             string GREETING=hi # not a comment\n\
             int32 ANSWER = 42 # a comment\n\
             \n\
             string<=8 name \"x\"\n\
             float64[3] xyz\n\
             Part[<=2] parts\n\
             geometry_msgs/msg/Pose[] poses\n",
        )
        .unwrap();
        assert_eq!(def.name, "acme/msg/Thing");
        assert_eq!(def.constants[0].value, "hi # not a comment");
        assert_eq!(def.constants[1].value, "42");
        let types: Vec<String> = def.fields.iter().map(|f| f.ty.to_string()).collect();
        assert_eq!(
            types,
            [
                "string<=8",
                "float64[3]",
                "acme/Part[<=2]",
                "geometry_msgs/Pose[]"
            ]
        );
        assert_eq!(def.fields[0].default.as_deref(), Some("\"x\""));
    }

    #[test]
    fn refuses_bad_lines_and_names() {
        for text in [
            "float64",
            "float64[ x",
            "float64[-1] x",
            "uint8[2] C=1",
            "a/b/c/d x",
        ] {
            assert!(
                matches!(
                    MsgDef::parse("acme/msg/T", text),
                    Err(SchemaError::Parse { line: 1, .. })
                ),
                "{text}"
            );
        }
        assert!(matches!(
            MsgDef::parse("not a name", ""),
            Err(SchemaError::BadName { .. })
        ));
    }

    #[test]
    fn a_missing_definition_names_its_user() {
        let sources = [MsgSource {
            name: "acme/msg/Outer",
            text: "Inner inner\n",
        }];
        assert_eq!(
            RosSchema::resolve("acme/msg/Outer", &sources),
            Err(SchemaError::Unknown {
                name: "acme/msg/Inner".into(),
                used_by: "acme/msg/Outer".into()
            })
        );
    }

    #[test]
    fn every_shipped_definition_resolves() {
        for source in STANDARD {
            let schema = RosSchema::standard(source.name).unwrap();
            assert_eq!(schema.name(), source.name);
            assert!(schema.rihs01().starts_with("RIHS01_"));
            assert_eq!(schema.rihs01().len(), 7 + 64);
        }
    }

    #[test]
    fn an_empty_type_hashes_with_rosidls_placeholder_field() {
        let sources = [MsgSource {
            name: "acme/msg/Empty",
            text: "# nothing\n",
        }];
        let schema = RosSchema::resolve("acme/msg/Empty", &sources).unwrap();
        let mut json = String::new();
        description_json(schema.root(), &mut json);
        assert!(json.contains("structure_needs_at_least_one_member"));
    }

    #[test]
    fn json_strings_escape_as_python_does() {
        assert_eq!(
            json_string("a\"b\\é😀"),
            "\"a\\\"b\\\\\\u00e9\\ud83d\\ude00\""
        );
    }
}
