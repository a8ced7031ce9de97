//! The checks every web relay fuzz input gets, shared by the fuzz targets and the corpus
//! replay tests (`tests/op_fuzz_corpus.rs`, `tests/shape_fuzz_corpus.rs`), through
//! `streamwire_web::fuzzing`. Each read must return (never panic), and the heap the
//! counting allocator saw at its peak must stay within a limit linear in the input's
//! length: nothing is allocated of a size the input only declares.
#![allow(
    dead_code,
    reason = "each target and replay test uses one of the two checks"
)]

use bytes::Bytes;
use streamwire_testdata::alloc::peak_during;
use streamwire_web::fuzzing;

/// Heap any read may take, whatever the input (the CBOR reader's buffer, the schema).
pub(crate) const HEAP_BASE: usize = 256 * 1024;

/// Heap per input byte an op may take on top of [`HEAP_BASE`]: a JSON or CBOR value of
/// one or two bytes (`0`, `[]`) is a 32-byte `serde_json::Value`.
pub(crate) const OP_HEAP_PER_BYTE: usize = 64;

/// Heap per CDR byte a shape may take on top of [`HEAP_BASE`]: a `bool` of one byte is a
/// shape value, then a CBOR value, then JSON text.
pub(crate) const SHAPE_HEAP_PER_BYTE: usize = 256;

fn assert_within(what: &str, len: usize, peak: usize, per_byte: usize) {
    let limit = HEAP_BASE + per_byte * len;
    assert!(
        peak <= limit,
        "{what} of {len} bytes took {peak} bytes of heap, over the limit of {limit}"
    );
}

/// An op: the first byte says how the rest arrived, even a text frame (JSON; not UTF-8
/// is left out, as a websocket refuses it), odd a binary frame (CBOR). True when the
/// relay accepted it.
pub(crate) fn op(input: &[u8]) -> bool {
    let Some((&selector, frame)) = input.split_first() else {
        return false;
    };
    let (result, peak) = if selector % 2 == 0 {
        let Ok(text) = std::str::from_utf8(frame) else {
            return false;
        };
        peak_during(|| fuzzing::op_text(text))
    } else {
        peak_during(|| fuzzing::op_cbor(frame))
    };
    assert_within("an op", frame.len(), peak, OP_HEAP_PER_BYTE);
    result.is_ok()
}

/// A ROS 2 message's CDR: the first byte picks the type (of `fuzzing::ROS_TYPES`), the
/// rest is the CDR. What reads is written as JSON that parses, and as CBOR that parses
/// and whose typed arrays hold whole elements. True when it read.
pub(crate) fn shape(input: &[u8]) -> bool {
    let Some((&selector, cdr)) = input.split_first() else {
        return false;
    };
    let ros_type = fuzzing::ROS_TYPES[usize::from(selector) % fuzzing::ROS_TYPES.len()];
    let cdr = Bytes::copy_from_slice(cdr);
    let len = cdr.len();
    let (result, peak) = peak_during(|| fuzzing::shape(ros_type, cdr));
    assert_within(ros_type, len, peak, SHAPE_HEAP_PER_BYTE);
    let Ok(shaped) = result else {
        return false;
    };
    if let Err(error) = serde_json::from_str::<serde_json::Value>(&shaped.json) {
        panic!(
            "{ros_type} written as JSON does not parse: {error}\n{}",
            shaped.json
        );
    }
    let cbor: ciborium::Value = ciborium::from_reader(&shaped.cbor[..])
        .unwrap_or_else(|error| panic!("{ros_type} written as CBOR does not parse: {error}"));
    typed_arrays_hold_whole_elements(&cbor);
    true
}

/// The RFC 8746 tags the relay writes and their element sizes.
const TYPED_ARRAYS: [(u64, usize); 9] = [
    (72, 1),
    (69, 2),
    (77, 2),
    (70, 4),
    (78, 4),
    (85, 4),
    (71, 8),
    (79, 8),
    (86, 8),
];

fn typed_arrays_hold_whole_elements(value: &ciborium::Value) {
    match value {
        ciborium::Value::Tag(tag, inner) => {
            let size = TYPED_ARRAYS
                .iter()
                .find(|(t, _)| t == tag)
                .map(|(_, size)| *size)
                .unwrap_or_else(|| panic!("CBOR tag {tag} is no typed array the relay writes"));
            let ciborium::Value::Bytes(bytes) = &**inner else {
                panic!("typed array {tag} holds no byte string");
            };
            assert!(
                bytes.len() % size == 0,
                "typed array {tag} of {} bytes holds a part of an element of {size}",
                bytes.len()
            );
        }
        ciborium::Value::Array(items) => items.iter().for_each(typed_arrays_hold_whole_elements),
        ciborium::Value::Map(entries) => entries.iter().for_each(|(k, v)| {
            typed_arrays_hold_whole_elements(k);
            typed_arrays_hold_whole_elements(v);
        }),
        _ => {}
    }
}
