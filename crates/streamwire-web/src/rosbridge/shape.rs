//! A ROS 2 message's CDR read into its rosbridge shape, field by field as its `.msg`
//! definition says: what rosbridge_suite's ROS 2 branch sends for `compression: "none"`
//! and `"cbor"`. One path for every built-in message, so that the shape clients get is
//! the definition `/rosapi/topics_and_raw_types` gives them and the bytes `cbor-raw`
//! sends, never a second hand-written copy.
//!
//! As rosbridge writes them: `uint8[]` (and `char[]`) as bytes (base64 in JSON, a byte
//! string in CBOR); other numeric arrays as numbers in JSON and RFC 8746 typed arrays in
//! CBOR; `builtin_interfaces/Time` as `{sec, nanosec}`; 64-bit integers as numbers.

use std::borrow::Cow;

use bytes::{BufMut as _, Bytes, BytesMut};
use streamwire_ros2::cdr::{CdrError, CdrReader};
use streamwire_ros2::schema::{BaseType, Field, MsgDef, Repeat, RosSchema};

use crate::wire::{Numeric, Value};

/// Why a CDR buffer did not read as its definition says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ShapeError {
    /// The bytes ended early, or hold a value the type cannot.
    #[error("{ros_type}: {source}")]
    Cdr {
        /// The type read.
        ros_type: String,
        /// The reader's reason.
        #[source]
        source: CdrError,
    },
    /// The definition names a type the schema does not hold, or one the relay cannot read.
    #[error("{ros_type}: field `{field}` has a type the relay cannot read")]
    Unreadable {
        /// The type read.
        ros_type: String,
        /// The field.
        field: String,
    },
}

impl ShapeError {
    /// The errors of reading `field` of `def`: a reader's failure, and a type the relay
    /// cannot read.
    fn makers<'d>(
        def: &'d MsgDef,
        field: &'d Field,
    ) -> (
        impl Fn(CdrError) -> ShapeError + Copy + 'd,
        impl Fn() -> ShapeError + Copy + 'd,
    ) {
        (
            move |source| ShapeError::Cdr {
                ros_type: def.name.clone(),
                source,
            },
            move || ShapeError::Unreadable {
                ros_type: def.name.clone(),
                field: field.name.clone(),
            },
        )
    }
}

/// Reads `cdr` (encapsulation header included) as the schema's root type.
pub(crate) fn from_cdr(schema: &RosSchema, cdr: Bytes) -> Result<Value, ShapeError> {
    let cdr_error = |source| ShapeError::Cdr {
        ros_type: schema.name().to_owned(),
        source,
    };
    let mut reader = CdrReader::new(cdr).map_err(cdr_error)?;
    message(schema, schema.root(), &mut reader)
}

fn message(schema: &RosSchema, def: &MsgDef, r: &mut CdrReader) -> Result<Value, ShapeError> {
    let mut fields = Vec::with_capacity(def.fields.len());
    for field in &def.fields {
        let value = self::field(schema, def, field, r)?;
        fields.push((Cow::Owned(field.name.clone()), value));
    }
    Ok(Value::Map(fields))
}

fn field(
    schema: &RosSchema,
    def: &MsgDef,
    field: &Field,
    r: &mut CdrReader,
) -> Result<Value, ShapeError> {
    let (cdr_error, unreadable) = ShapeError::makers(def, field);
    let is_sequence = matches!(field.ty.repeat, Repeat::Bounded(_) | Repeat::Sequence);
    if is_sequence && matches!(field.ty.base, BaseType::Primitive("uint8" | "char")) {
        // Pixels and points: a slice of the buffer read, no copy.
        return r.bytes("uint8[]").map(Value::Bytes).map_err(cdr_error);
    }
    let count = match field.ty.repeat {
        Repeat::Single => return single(schema, def, field, r),
        // A fixed array has no count on the wire.
        Repeat::Array(n) => usize::try_from(n).map_err(|_| unreadable())?,
        Repeat::Bounded(_) | Repeat::Sequence => {
            let min_bytes = match &field.ty.base {
                BaseType::Primitive(p) => numeric(p).map_or(1, Numeric::size),
                _ => 1,
            };
            r.sequence_len(min_bytes, "sequence length")
                .map_err(cdr_error)?
        }
        _ => return Err(unreadable()),
    };
    match &field.ty.base {
        BaseType::Primitive("uint8" | "char") => {
            let mut bytes = BytesMut::with_capacity(count);
            for _ in 0..count {
                bytes.put_u8(r.u8("uint8[]").map_err(cdr_error)?);
            }
            Ok(Value::Bytes(bytes.freeze()))
        }
        BaseType::Primitive("bool") => (0..count)
            .map(|_| r.bool("bool[]").map(Value::Bool).map_err(cdr_error))
            .collect::<Result<_, _>>()
            .map(Value::List),
        BaseType::Primitive(p) => {
            let kind = numeric(p).ok_or_else(unreadable)?;
            let mut le = BytesMut::with_capacity(count * kind.size());
            for _ in 0..count {
                read_numeric(kind, r, &mut le).map_err(cdr_error)?;
            }
            Ok(Value::Numbers(kind, le.freeze()))
        }
        _ => (0..count)
            .map(|_| single(schema, def, field, r))
            .collect::<Result<_, _>>()
            .map(Value::List),
    }
}

/// One value of `field`'s base type.
fn single(
    schema: &RosSchema,
    def: &MsgDef,
    field: &Field,
    r: &mut CdrReader,
) -> Result<Value, ShapeError> {
    let (cdr_error, unreadable) = ShapeError::makers(def, field);
    let what = "field";
    let value = match &field.ty.base {
        BaseType::String(_) => {
            Value::Str(Cow::Owned(r.string(what).map_err(cdr_error)?.to_string()))
        }
        BaseType::Nested(name) => {
            let nested = schema.def(name).ok_or_else(unreadable)?;
            return message(schema, nested, r);
        }
        BaseType::Primitive("bool") => Value::Bool(r.bool(what).map_err(cdr_error)?),
        BaseType::Primitive("uint8" | "char" | "byte") => {
            Value::U64(r.u8(what).map_err(cdr_error)?.into())
        }
        BaseType::Primitive("int8") => Value::I64(r.i8(what).map_err(cdr_error)?.into()),
        BaseType::Primitive("uint16") => Value::U64(r.u16(what).map_err(cdr_error)?.into()),
        BaseType::Primitive("int16") => Value::I64(r.i16(what).map_err(cdr_error)?.into()),
        BaseType::Primitive("uint32") => Value::U64(r.u32(what).map_err(cdr_error)?.into()),
        BaseType::Primitive("int32") => Value::I64(r.i32(what).map_err(cdr_error)?.into()),
        BaseType::Primitive("uint64") => Value::U64(r.u64(what).map_err(cdr_error)?),
        BaseType::Primitive("int64") => Value::I64(r.i64(what).map_err(cdr_error)?),
        BaseType::Primitive("float32") => Value::F64(r.f32(what).map_err(cdr_error)?.into()),
        BaseType::Primitive("float64") => Value::F64(r.f64(what).map_err(cdr_error)?),
        _ => return Err(unreadable()),
    };
    Ok(value)
}

/// The typed-array element of a numeric `.msg` primitive (`byte` is an octet, read as
/// `int8` as rosbridge tags it).
fn numeric(primitive: &str) -> Option<Numeric> {
    Some(match primitive {
        "int8" | "byte" => Numeric::I8,
        "uint16" => Numeric::U16,
        "int16" => Numeric::I16,
        "uint32" => Numeric::U32,
        "int32" => Numeric::I32,
        "uint64" => Numeric::U64,
        "int64" => Numeric::I64,
        "float32" => Numeric::F32,
        "float64" => Numeric::F64,
        _ => return None,
    })
}

fn read_numeric(kind: Numeric, r: &mut CdrReader, out: &mut BytesMut) -> Result<(), CdrError> {
    let what = "numeric array";
    match kind {
        Numeric::I8 => out.put_i8(r.i8(what)?),
        Numeric::U16 => out.put_u16_le(r.u16(what)?),
        Numeric::I16 => out.put_i16_le(r.i16(what)?),
        Numeric::U32 => out.put_u32_le(r.u32(what)?),
        Numeric::I32 => out.put_i32_le(r.i32(what)?),
        Numeric::U64 => out.put_u64_le(r.u64(what)?),
        Numeric::I64 => out.put_i64_le(r.i64(what)?),
        Numeric::F32 => out.put_f32_le(r.f32(what)?),
        Numeric::F64 => out.put_f64_le(r.f64(what)?),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_msgs::{Odometry, Twist, Vector3};
    use streamwire_ros2::RosMessage;

    fn json(value: &Value) -> serde_json::Value {
        let mut text = String::new();
        crate::wire::write_json(value, &mut text);
        serde_json::from_str(&text).expect("valid JSON")
    }

    #[test]
    fn a_twist_reads_field_by_field() {
        let twist = Twist {
            linear: Vector3::new(0.5, 0.0, -1.0),
            angular: Vector3::new(0.0, 0.0, 0.25),
        };
        let schema = Twist::ros_schema().expect("standard");
        let cdr = twist.to_cdr().expect("encodes");
        let value = from_cdr(&schema, cdr.into()).expect("reads");
        assert_eq!(
            json(&value),
            serde_json::json!({"linear": {"x": 0.5, "y": 0.0, "z": -1.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.25}})
        );
    }

    #[test]
    fn fixed_arrays_are_typed_and_truncation_is_an_error() {
        let odometry = Odometry::new("odom", "base_link", Default::default(), Twist::default())
            .expect("valid");
        let schema = Odometry::ros_schema().expect("standard");
        let cdr = odometry.to_cdr().expect("encodes");
        let value = from_cdr(&schema, Bytes::from(cdr.clone())).expect("reads");
        let shaped = json(&value);
        assert_eq!(
            shaped["pose"]["covariance"].as_array().map(Vec::len),
            Some(36)
        );
        assert_eq!(
            shaped["header"]["stamp"],
            serde_json::json!({"sec": 0, "nanosec": 0})
        );
        let cut = Bytes::from(cdr[..cdr.len() - 9].to_vec());
        let error = from_cdr(&schema, cut).expect_err("truncated");
        assert!(matches!(error, ShapeError::Cdr { .. }), "{error}");
    }
}
