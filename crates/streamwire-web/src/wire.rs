//! Messages in their ROS shapes, written as JSON text or as CBOR with RFC 8746 typed arrays.
//!
//! A message becomes a small tree ([`Value`]) once; the tree is written in each encoding a
//! subscriber asked for. Byte payloads (JPEG data, point data) stay shared `Bytes` in the
//! tree: base64 in JSON (as rosbridge writes `uint8[]`), one raw byte string in CBOR.
//! Numeric arrays are typed arrays in CBOR (tag 69 for little-endian `uint16`, 86 for
//! little-endian `float64`), which a browser views as a `Uint16Array` or
//! `Float64Array` without a per-element decode.

use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine as _;
use bytes::Bytes;
use ciborium::Value as Cbor;
use streamwire_core::{AnyMessage, Timestamp};
use streamwire_msgs::{
    CompressedImage, DepthEncoding, DepthImage, Image, Odometry, PointCloud, Twist, Vector3,
};

/// RFC 8746: `uint16`, little endian.
pub const TAG_U16_LE: u64 = 69;
/// RFC 8746: `float32`, little endian.
pub const TAG_F32_LE: u64 = 85;
/// RFC 8746: `float64`, little endian.
pub const TAG_F64_LE: u64 = 86;

/// The element type of a [`Value::Numbers`] array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Numeric {
    /// `int8` (and `byte`).
    I8,
    /// `uint16`.
    U16,
    /// `int16`.
    I16,
    /// `uint32`.
    U32,
    /// `int32`.
    I32,
    /// `uint64`.
    U64,
    /// `int64`.
    I64,
    /// `float32`.
    F32,
    /// `float64`.
    F64,
}

impl Numeric {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Numeric::I8 => 1,
            Numeric::U16 | Numeric::I16 => 2,
            Numeric::U32 | Numeric::I32 | Numeric::F32 => 4,
            Numeric::U64 | Numeric::I64 | Numeric::F64 => 8,
        }
    }

    /// The RFC 8746 tag of a little-endian array of it (rosbridge's `TAGGED_ARRAY_FORMATS`).
    pub const fn tag(self) -> u64 {
        match self {
            Numeric::I8 => 72,
            Numeric::U16 => TAG_U16_LE,
            Numeric::I16 => 77,
            Numeric::U32 => 70,
            Numeric::I32 => 78,
            Numeric::U64 => 71,
            Numeric::I64 => 79,
            Numeric::F32 => TAG_F32_LE,
            Numeric::F64 => TAG_F64_LE,
        }
    }

    /// Writes one element (`size()` little-endian bytes) as JSON.
    fn write_json(self, le: &[u8], out: &mut String) {
        fn array<const N: usize>(le: &[u8]) -> [u8; N] {
            let mut bytes = [0u8; N];
            bytes.copy_from_slice(&le[..N]);
            bytes
        }
        let _ = match self {
            Numeric::I8 => write!(out, "{}", i8::from_le_bytes(array(le))),
            Numeric::U16 => write!(out, "{}", u16::from_le_bytes(array(le))),
            Numeric::I16 => write!(out, "{}", i16::from_le_bytes(array(le))),
            Numeric::U32 => write!(out, "{}", u32::from_le_bytes(array(le))),
            Numeric::I32 => write!(out, "{}", i32::from_le_bytes(array(le))),
            Numeric::U64 => write!(out, "{}", u64::from_le_bytes(array(le))),
            Numeric::I64 => write!(out, "{}", i64::from_le_bytes(array(le))),
            Numeric::F32 => {
                write_f64(f64::from(f32::from_le_bytes(array(le))), out);
                Ok(())
            }
            Numeric::F64 => {
                write_f64(f64::from_le_bytes(array(le)), out);
                Ok(())
            }
        };
    }
}

/// A message in its ROS shape, ready to be written as JSON or CBOR.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An unsigned integer.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A float (non-finite values are `null` in JSON, as JSON has no NaN).
    F64(f64),
    /// Text.
    Str(Cow<'static, str>),
    /// A `uint8[]`: base64 in JSON, a byte string in CBOR.
    Bytes(Bytes),
    /// A `uint16[]` as little-endian bytes: numbers in JSON, tag 69 in CBOR.
    U16Le(Bytes),
    /// A `float64[]`: numbers in JSON, tag 86 in CBOR.
    F64s(Vec<f64>),
    /// A numeric array as little-endian bytes: numbers in JSON, its RFC 8746 typed-array
    /// tag in CBOR (what rosbridge's `cbor` compression sends).
    Numbers(Numeric, Bytes),
    /// A list.
    List(Vec<Value>),
    /// A struct: field names and values, in order.
    Map(Vec<(Cow<'static, str>, Value)>),
}

fn map(fields: Vec<(&'static str, Value)>) -> Value {
    Value::Map(
        fields
            .into_iter()
            .map(|(k, v)| (Cow::Borrowed(k), v))
            .collect(),
    )
}

fn text(s: &str) -> Value {
    Value::Str(Cow::Owned(s.to_owned()))
}

/// `std_msgs/Header` (ROS 2 shape: `stamp.sec`, `stamp.nanosec`).
fn header(stamp: Timestamp, frame_id: &str) -> Value {
    let nanos = stamp.as_nanos();
    map(vec![
        (
            "stamp",
            map(vec![
                ("sec", Value::U64(nanos / 1_000_000_000)),
                ("nanosec", Value::U64(nanos % 1_000_000_000)),
            ]),
        ),
        ("frame_id", text(frame_id)),
    ])
}

fn vector3(v: &Vector3) -> Value {
    map(vec![
        ("x", Value::F64(v.x)),
        ("y", Value::F64(v.y)),
        ("z", Value::F64(v.z)),
    ])
}

/// `sensor_msgs/CompressedImage`: the bytes as they are.
pub fn compressed_image(image: &CompressedImage) -> Value {
    // ROS names the format by its codec ("jpeg"); ours says more ("rgb8; jpeg
    // compressed bgr8"), which image_transport's readers also accept.
    map(vec![
        ("header", header(image.stamp(), image.frame_id())),
        ("format", text(image.format())),
        ("data", Value::Bytes(image.data().clone())),
    ])
}

/// `sensor_msgs/Image` of pixels.
pub fn image(image: &Image) -> Value {
    map(vec![
        ("header", header(image.stamp(), image.frame_id())),
        ("height", Value::U64(image.height().into())),
        ("width", Value::U64(image.width().into())),
        ("encoding", text(image.encoding().as_str())),
        ("is_bigendian", Value::U64(0)),
        ("step", Value::U64(image.row_bytes() as u64)),
        ("data", Value::Bytes(image.packed())),
    ])
}

/// `sensor_msgs/Image` of depth. `16UC1` data is a typed `uint16` array (tag 69 in CBOR)
/// so a browser reads millimetres straight from the frame; `32FC1` stays bytes.
pub fn depth(depth: &DepthImage) -> Value {
    let data = depth.packed();
    let data = match depth.encoding() {
        DepthEncoding::Mm16 => Value::U16Le(data),
        DepthEncoding::M32F => Value::Bytes(data),
    };
    map(vec![
        ("header", header(depth.stamp(), depth.frame_id())),
        ("height", Value::U64(depth.height().into())),
        ("width", Value::U64(depth.width().into())),
        ("encoding", text(depth.encoding().as_str())),
        ("is_bigendian", Value::U64(0)),
        ("step", Value::U64(depth.row_bytes() as u64)),
        ("data", data),
    ])
}

/// `sensor_msgs/PointCloud2`.
pub fn point_cloud(cloud: &PointCloud) -> Value {
    let fields = cloud
        .fields()
        .iter()
        .map(|f| {
            map(vec![
                ("name", text(&f.name)),
                ("offset", Value::U64(f.offset.into())),
                ("datatype", Value::U64(f.datatype.ros_id().into())),
                ("count", Value::U64(f.count.into())),
            ])
        })
        .collect();
    map(vec![
        ("header", header(cloud.stamp(), cloud.frame_id())),
        ("height", Value::U64(cloud.height().into())),
        ("width", Value::U64(cloud.width().into())),
        ("fields", Value::List(fields)),
        ("is_bigendian", Value::Bool(cloud.is_bigendian())),
        ("point_step", Value::U64(cloud.point_step().into())),
        ("row_step", Value::U64(cloud.row_step().into())),
        ("data", Value::Bytes(cloud.data().clone())),
        ("is_dense", Value::Bool(cloud.is_dense())),
    ])
}

fn covariance(c: &[[f64; 6]; 6]) -> Value {
    Value::F64s(c.iter().flatten().copied().collect())
}

/// `geometry_msgs/Twist`.
pub fn twist(twist: &Twist) -> Value {
    map(vec![
        ("linear", vector3(&twist.linear)),
        ("angular", vector3(&twist.angular)),
    ])
}

/// `nav_msgs/Odometry`.
pub fn odometry(odometry: &Odometry) -> Value {
    let pose = odometry.pose();
    let q = pose.orientation;
    map(vec![
        ("header", header(odometry.stamp(), odometry.frame_id())),
        ("child_frame_id", text(odometry.child_frame_id())),
        (
            "pose",
            map(vec![
                (
                    "pose",
                    map(vec![
                        ("position", vector3(&pose.position)),
                        (
                            "orientation",
                            map(vec![
                                ("x", Value::F64(q.x)),
                                ("y", Value::F64(q.y)),
                                ("z", Value::F64(q.z)),
                                ("w", Value::F64(q.w)),
                            ]),
                        ),
                    ]),
                ),
                ("covariance", covariance(odometry.pose_covariance())),
            ]),
        ),
        (
            "twist",
            map(vec![
                ("twist", twist(odometry.twist())),
                ("covariance", covariance(odometry.twist_covariance())),
            ]),
        ),
    ])
}

/// Why a message has no ROS shape.
#[derive(Debug, thiserror::Error)]
#[error("message `{type_name}` cannot be written: {reason}")]
pub struct ShapeError {
    type_name: &'static str,
    reason: String,
}

/// Any message: the built-in ones in their ROS shapes, a user's message as serde writes it.
pub fn any(message: &dyn AnyMessage) -> Result<Value, ShapeError> {
    if let Some(m) = message.downcast_ref::<CompressedImage>() {
        return Ok(compressed_image(m));
    }
    if let Some(m) = message.downcast_ref::<Image>() {
        return Ok(image(m));
    }
    if let Some(m) = message.downcast_ref::<DepthImage>() {
        return Ok(depth(m));
    }
    if let Some(m) = message.downcast_ref::<PointCloud>() {
        return Ok(point_cloud(m));
    }
    if let Some(m) = message.downcast_ref::<Odometry>() {
        return Ok(odometry(m));
    }
    if let Some(m) = message.downcast_ref::<Twist>() {
        return Ok(twist(m));
    }
    let type_name = message.type_name();
    // typetag writes `{"<type name>": <the message>}`; the message is the inner value.
    let tagged = serde_json::to_value(message).map_err(|e| ShapeError {
        type_name,
        reason: e.to_string(),
    })?;
    let inner = match tagged {
        serde_json::Value::Object(mut outer) if outer.len() == 1 => {
            outer.remove(type_name).unwrap_or(serde_json::Value::Null)
        }
        other => other,
    };
    Ok(from_json(inner))
}

/// A JSON value as a [`Value`] (user messages, and what clients send).
pub fn from_json(value: serde_json::Value) -> Value {
    match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::U64(u)
            } else if let Some(i) = n.as_i64() {
                Value::I64(i)
            } else {
                Value::F64(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::Str(Cow::Owned(s)),
        serde_json::Value::Array(items) => Value::List(items.into_iter().map(from_json).collect()),
        serde_json::Value::Object(fields) => Value::Map(
            fields
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), from_json(v)))
                .collect(),
        ),
    }
}

/// Writes `value` as JSON text.
pub fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::U64(u) => {
            let _ = write!(out, "{u}");
        }
        Value::I64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::F64(f) => write_f64(*f, out),
        Value::Str(s) => write_str(s, out),
        Value::Bytes(b) => {
            out.push('"');
            base64::engine::general_purpose::STANDARD.encode_string(b, out);
            out.push('"');
        }
        Value::U16Le(b) => {
            out.push('[');
            for (i, pair) in b.chunks_exact(2).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}", u16::from_le_bytes([pair[0], pair[1]]));
            }
            out.push(']');
        }
        Value::F64s(values) => {
            out.push('[');
            for (i, f) in values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_f64(*f, out);
            }
            out.push(']');
        }
        Value::Numbers(kind, le) => {
            out.push('[');
            for (i, element) in le.chunks_exact(kind.size()).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                kind.write_json(element, out);
            }
            out.push(']');
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Map(fields) => {
            out.push('{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
    }
}

fn write_f64(f: f64, out: &mut String) {
    if f.is_finite() {
        // `{:?}` is the shortest text that reads back to the same float ("1.0", "1e300").
        let _ = write!(out, "{f:?}");
    } else {
        out.push_str("null");
    }
}

/// Writes `s` as a JSON string.
pub(crate) fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The tree as a CBOR value: byte strings for `uint8[]`, typed-array tags for numbers.
pub fn to_cbor(value: &Value) -> Cbor {
    match value {
        Value::Null => Cbor::Null,
        Value::Bool(b) => Cbor::Bool(*b),
        Value::U64(u) => Cbor::Integer((*u).into()),
        Value::I64(i) => Cbor::Integer((*i).into()),
        Value::F64(f) => Cbor::Float(*f),
        Value::Str(s) => Cbor::Text(s.to_string()),
        Value::Bytes(b) => Cbor::Bytes(b.to_vec()),
        Value::U16Le(b) => Cbor::Tag(TAG_U16_LE, Box::new(Cbor::Bytes(b.to_vec()))),
        Value::F64s(values) => {
            let bytes = values.iter().flat_map(|f| f.to_le_bytes()).collect();
            Cbor::Tag(TAG_F64_LE, Box::new(Cbor::Bytes(bytes)))
        }
        Value::Numbers(kind, le) => Cbor::Tag(kind.tag(), Box::new(Cbor::Bytes(le.to_vec()))),
        Value::List(items) => Cbor::Array(items.iter().map(to_cbor).collect()),
        Value::Map(fields) => Cbor::Map(
            fields
                .iter()
                .map(|(k, v)| (Cbor::Text(k.to_string()), to_cbor(v)))
                .collect(),
        ),
    }
}

/// A rosbridge `publish` message of `msg` on `topic`, as JSON text.
pub fn publish_json(topic: &str, msg: &Value) -> String {
    let mut out = String::with_capacity(64);
    out.push_str("{\"op\":\"publish\",\"topic\":");
    write_str(topic, &mut out);
    out.push_str(",\"msg\":");
    write_json(msg, &mut out);
    out.push('}');
    out
}

/// A rosbridge `publish` message of `msg` on `topic`, as one CBOR item (what rosbridge's
/// `compression: "cbor"` sends in a binary frame).
pub fn publish_cbor(topic: &str, msg: &Value) -> Vec<u8> {
    let value = Cbor::Map(vec![
        (Cbor::Text("op".into()), Cbor::Text("publish".into())),
        (Cbor::Text("topic".into()), Cbor::Text(topic.into())),
        (Cbor::Text("msg".into()), to_cbor(msg)),
    ]);
    let mut out = Vec::new();
    // Writing into a Vec cannot fail on I/O; a failure here would be a ciborium bug.
    if ciborium::into_writer(&value, &mut out).is_err() {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_and_writes_floats_that_read_back() {
        let v = map(vec![
            ("s", text("a\"b\\\n\u{1}")),
            ("f", Value::F64(0.1)),
            ("n", Value::F64(f64::NAN)),
            ("b", Value::Bytes(Bytes::from_static(b"hi"))),
            ("u", Value::U16Le(Bytes::from_static(&[1, 0, 0, 1]))),
        ]);
        let mut out = String::new();
        write_json(&v, &mut out);
        assert_eq!(
            out,
            r#"{"s":"a\"b\\\n\u0001","f":0.1,"n":null,"b":"aGk=","u":[1,256]}"#
        );
        let back: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(back["s"], "a\"b\\\n\u{1}");
    }

    #[test]
    fn cbor_uses_typed_array_tags() {
        let v = Value::F64s(vec![1.0, -2.5]);
        let Cbor::Tag(tag, inner) = to_cbor(&v) else {
            panic!("not a tag")
        };
        assert_eq!(tag, TAG_F64_LE);
        let Cbor::Bytes(bytes) = *inner else {
            panic!("not bytes")
        };
        assert_eq!(&bytes[8..], &(-2.5f64).to_le_bytes());
    }
}
