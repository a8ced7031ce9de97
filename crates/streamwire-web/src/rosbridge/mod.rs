//! rosbridge as its ROS 2 clients expect it: ROS 2 topic names and types, messages in
//! their ROS 2 shapes (read from the same CDR that `cbor-raw` sends), and the wire forms
//! rosbridge_suite's ROS 2 branch writes.

pub(crate) mod client_to_server;
pub(crate) mod outgoing;
pub(crate) mod rosapi;
pub(crate) mod run_graph;
mod session;
pub(crate) mod shape;
pub(crate) mod subscription;
pub(crate) mod topics;

use std::sync::Arc;

use bytes::Bytes;
use streamwire_core::AnyMessage;

use crate::wire;
use topics::Topic;

pub(crate) use session::Session;

/// One message of a topic, in the forms its subscribers asked for, each made once
/// whatever the number of subscribers.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// The ROS 2 CDR (encapsulation header included), for `cbor-raw`.
    pub(crate) cdr: Option<Bytes>,
    /// The message's rosbridge shape, for `none`, `cbor` and `png`.
    pub(crate) value: Option<wire::Value>,
}

/// Prepares `message` (already the topic's, see [`Topic::convert`]): its CDR when
/// `want_cdr`, its shape when `want_value`. A message of a ROS 2 type is shaped from its
/// CDR, field by field as its definition says; a user's message as serde writes it.
pub(crate) fn prepare(
    topic: &Topic,
    message: &Arc<dyn AnyMessage>,
    want_value: bool,
    want_cdr: bool,
) -> Result<Prepared, String> {
    let mut prepared = Prepared::default();
    let Some(schema) = &topic.schema else {
        if want_value {
            prepared.value = Some(wire::any(&**message).map_err(|e| e.to_string())?);
        }
        return Ok(prepared);
    };
    if !want_value && !want_cdr {
        return Ok(prepared);
    }
    let (_, cdr) = streamwire_ros2::encode_any(&**message)
        .ok_or_else(|| format!("`{}` has no ROS 2 serialization", message.type_name()))?
        .map_err(|e| e.to_string())?;
    let cdr = Bytes::from(cdr);
    if want_value {
        prepared.value = Some(shape::from_cdr(schema, cdr.clone()).map_err(|e| e.to_string())?);
    }
    if want_cdr {
        prepared.cdr = Some(cdr);
    }
    Ok(prepared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::Timestamp;
    use streamwire_msgs::{
        DetectionBox, Detections, LogLevel, LogRecord, OccupancyGrid, Odometry, Quaternion,
        Transforms, Twist, Vector3,
    };
    use streamwire_ros2::schema::{BaseType, MsgDef, Repeat, RosSchema};

    /// Checks that `value` has the fields of `def`, in order, recursively; returns the
    /// paths checked.
    fn check(
        schema: &RosSchema,
        def: &MsgDef,
        value: &serde_json::Value,
        path: &str,
        out: &mut Vec<String>,
    ) {
        let object = value
            .as_object()
            .unwrap_or_else(|| panic!("{path} is an object: {value}"));
        let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        let mut sorted_names = names.clone();
        sorted_names.sort_unstable();
        let mut sorted_keys = keys.clone();
        sorted_keys.sort_unstable();
        assert_eq!(sorted_keys, sorted_names, "{path} of {}", def.name);
        for field in &def.fields {
            let at = format!("{path}.{}", field.name);
            let v = &object[&field.name];
            out.push(format!("{at}: {}", field.ty));
            match (&field.ty.base, field.ty.repeat) {
                (BaseType::Nested(name), Repeat::Single) => {
                    check(schema, schema.def(name).expect("resolved"), v, &at, out);
                }
                (BaseType::Nested(name), _) => {
                    for item in v.as_array().unwrap_or_else(|| panic!("{at} is a list")) {
                        check(schema, schema.def(name).expect("resolved"), item, &at, out);
                    }
                }
                (BaseType::Primitive("uint8"), Repeat::Sequence) => {
                    assert!(v.is_string(), "{at} is base64: {v}");
                }
                (_, Repeat::Single) => assert!(!v.is_array() && !v.is_object(), "{at}: {v}"),
                (_, _) => assert!(v.is_array(), "{at} is a list: {v}"),
            }
        }
    }

    #[test]
    fn every_built_in_message_has_its_ros_2_fields() {
        let stamp = Timestamp::from_nanos(1_700_000_000_123_456_789);
        let grid = OccupancyGrid::new("map", 0.05, (-1.0, -2.0), 3, 2, vec![-1, 0, 100, 50, 0, -1])
            .expect("valid")
            .with_stamp(stamp);
        let detections = Detections {
            stamp,
            frame_id: "camera".into(),
            boxes: vec![DetectionBox::new(10.0, 20.0, 30.0, 40.0, "ball", 0.9).expect("valid")],
        };
        let tf = Transforms::new(vec![streamwire_msgs::TransformStamped {
            stamp,
            parent_frame_id: "odom".into(),
            child_frame_id: "base_link".into(),
            translation: Vector3::new(1.0, 2.0, 0.0),
            rotation: Quaternion::from_yaw(0.3),
        }])
        .expect("valid");
        let odometry = Odometry::new("odom", "base_link", Default::default(), Twist::default())
            .expect("valid")
            .with_stamp(stamp);
        let messages: Vec<Arc<dyn AnyMessage>> = vec![
            Arc::new(grid),
            Arc::new(detections),
            Arc::new(tf),
            Arc::new(odometry),
            Arc::new(LogRecord::new(LogLevel::Warn, "camera", "late").with_stamp(stamp)),
        ];
        let mut paths = Vec::new();
        for message in &messages {
            let topic = topics::topics_of(
                &[("t".to_owned(), message.type_name())],
                None,
                LogLevel::Warn,
            )
            .into_iter()
            .next()
            .expect("a topic");
            let prepared = prepare(&topic, message, true, true).expect("prepares");
            let mut text = String::new();
            wire::write_json(prepared.value.as_ref().expect("shaped"), &mut text);
            let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let schema = topic.schema.as_ref().expect("a ROS 2 type");
            paths.push(format!("--- {}", schema.name()));
            check(schema, schema.root(), &json, "", &mut paths);
            assert!(prepared.cdr.is_some_and(|cdr| cdr.starts_with(&[0, 1])));
            // Stamps are `builtin_interfaces/Time`, exact in JSON.
            if let Some(stamp_json) = json.pointer("/header/stamp") {
                assert_eq!(
                    stamp_json,
                    &serde_json::json!({"sec": 1_700_000_000u64, "nanosec": 123_456_789u64}),
                    "{}",
                    schema.name()
                );
            }
        }
        insta::assert_snapshot!(paths.join("\n"));
    }
}
