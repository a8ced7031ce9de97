//! rosbridge as its ROS 2 clients expect it: ROS 2 topic names and types, messages in
//! their ROS 2 shapes (read from the same CDR that `cbor-raw` sends), and the wire forms
//! rosbridge_suite's ROS 2 branch writes.

pub(crate) mod shape;
pub(crate) mod topics;

use std::sync::Arc;

use bytes::Bytes;
use streamwire_core::AnyMessage;

use crate::wire;
use topics::Topic;

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
