//! What the relay sends a subscriber, in each `compression` of ROSBRIDGE_PROTOCOL.md
//! (section 3.1) and as rosbridge_suite's ROS 2 branch writes it:
//!
//! - `none`: the `publish` message as JSON text;
//! - `cbor`: the `publish` message as one CBOR item, typed arrays tagged (RFC 8746);
//! - `cbor-raw`: a CBOR `publish` whose `msg` is `{secs, nsecs, bytes}`: the relay's clock
//!   when it sent the message and the message's ROS 2 CDR (encapsulation header included),
//!   which `@foxglove/rosmsg2-serialization` reads with the `typedefs_full_text` it got;
//! - `png`: `{"op": "png", "data": <base64 PNG>}`, the PNG an RGB image of the `publish`
//!   message's JSON bytes, padded with `\n` to `width * height * 3`, `width` the floor of
//!   the square root of a third of the length (rosbridge's `pngcompression.encode`).
//!
//! With a `fragment_size`, a text frame longer than it goes as `fragment` messages
//! (`png` messages with `id`, `num`, `total` for `png`) whose `data` joined is the text.
//! Binary frames (`cbor`, `cbor-raw`) are never fragmented: ROSBRIDGE_PROTOCOL.md splits
//! JSON strings only, and rosbridge_suite cannot fragment bytes either.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use ciborium::Value as Cbor;

use crate::wire::{self, Value};

/// The forms of a `publish` rosbridge clients ask for with a subscribe's `compression`
/// (named so apart from the workspace's other `Compression`s: the graph's pixel links,
/// MCAP's chunks, a compressed image's format).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PublishFormat {
    /// JSON text frames (`none`).
    Json,
    /// The JSON text as a PNG (`png`).
    Png,
    /// CBOR binary frames with typed arrays (`cbor`).
    Cbor,
    /// The ROS 2 CDR bytes in a CBOR frame (`cbor-raw`).
    CborRaw,
}

impl PublishFormat {
    /// The form a subscribe names in its `compression` (`None` for an unknown one).
    pub(crate) fn named(name: Option<&str>) -> Option<PublishFormat> {
        Some(match name {
            None | Some("" | "none") => PublishFormat::Json,
            Some("png") => PublishFormat::Png,
            Some("cbor") => PublishFormat::Cbor,
            Some("cbor-raw") => PublishFormat::CborRaw,
            Some(_) => return None,
        })
    }

    /// Whether the frames are the message's shape (not its CDR).
    pub(crate) fn wants_value(self) -> bool {
        self != PublishFormat::CborRaw
    }
}

/// Why a message could not be written in a form.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum OutgoingError {
    /// The PNG encoder refused the image.
    #[error("cannot write the PNG: {0}")]
    Png(#[from] png::EncodingError),
    /// CBOR could not be written (a bug: writing into memory does not fail).
    #[error("cannot write CBOR: {0}")]
    Cbor(String),
}

/// `{"op":"png","data":...}` of the `publish` of `value` on `topic`.
pub(crate) fn publish_png(topic: &str, value: &Value) -> Result<String, OutgoingError> {
    let text = wire::publish_json(topic, value);
    let png = png_of_text(text.as_bytes())?;
    let mut out = String::from("{\"op\":\"png\",\"data\":\"");
    base64::engine::general_purpose::STANDARD.encode_string(&png, &mut out);
    out.push_str("\"}");
    Ok(out)
}

/// The bytes of `text` as an RGB PNG padded with `\n`, as rosbridge's
/// `pngcompression.encode` makes it.
pub(crate) fn png_of_text(text: &[u8]) -> Result<Vec<u8>, OutgoingError> {
    // Every frame holds at least `{"op":...}`, so a third of its length is at least 1.
    let third = (text.len() as f64 / 3.0).max(1.0);
    let width = (third.sqrt().floor() as u32).max(1);
    let height = (third / f64::from(width)).ceil() as u32;
    let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
    pixels.extend_from_slice(text);
    pixels.resize(width as usize * height as usize * 3, b'\n');
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&pixels)?;
    writer.finish()?;
    Ok(out)
}

/// The `cbor-raw` `publish` of `cdr` on `topic`, stamped with the relay's clock now.
pub(crate) fn publish_cbor_raw(topic: &str, cdr: &Bytes) -> Result<Vec<u8>, OutgoingError> {
    // The clock before the epoch is a broken clock: zero says so without failing.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default(); // infallible: a clock before 1970 is sent as time zero
    let msg = Cbor::Map(vec![
        (
            Cbor::Text("secs".into()),
            Cbor::Integer(now.as_secs().into()),
        ),
        (
            Cbor::Text("nsecs".into()),
            Cbor::Integer(now.subsec_nanos().into()),
        ),
        (Cbor::Text("bytes".into()), Cbor::Bytes(cdr.to_vec())),
    ]);
    let value = Cbor::Map(vec![
        (Cbor::Text("op".into()), Cbor::Text("publish".into())),
        (Cbor::Text("topic".into()), Cbor::Text(topic.into())),
        (Cbor::Text("msg".into()), msg),
    ]);
    let mut out = Vec::with_capacity(cdr.len() + 64);
    ciborium::into_writer(&value, &mut out).map_err(|e| OutgoingError::Cbor(e.to_string()))?;
    Ok(out)
}

/// `text` as `op` messages (`fragment`, or `png` for a PNG frame) of at most `size`
/// bytes of data each, split on character boundaries; the text itself when it fits.
pub(crate) fn fragments(text: String, size: usize, op: &str, id: &str) -> Vec<String> {
    let size = size.max(1);
    if text.len() <= size {
        return vec![text];
    }
    let data = match op {
        // A `png` frame is fragmented by its data, the base64 of the PNG.
        "png" => text
            .strip_prefix("{\"op\":\"png\",\"data\":\"")
            .and_then(|rest| rest.strip_suffix("\"}"))
            .unwrap_or(&text),
        _ => &text,
    };
    let mut pieces: Vec<&str> = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            // One character longer than `size`: sent whole rather than split inside it.
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    let total = pieces.len();
    pieces
        .iter()
        .enumerate()
        .map(|(num, piece)| {
            let mut out = String::with_capacity(piece.len() + 80);
            out.push_str("{\"op\":");
            wire::write_str(op, &mut out);
            out.push_str(",\"id\":");
            wire::write_str(id, &mut out);
            out.push_str(",\"data\":");
            wire::write_str(piece, &mut out);
            out.push_str(&format!(",\"num\":{num},\"total\":{total}}}"));
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_join_back_into_the_text() {
        let text = "{\"op\":\"publish\",\"msg\":\"héllo wörld\"}".to_owned();
        let parts = fragments(text.clone(), 7, "fragment", "publish 1");
        assert!(parts.len() > 3);
        let mut joined = String::new();
        for (i, part) in parts.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(part).expect("JSON");
            assert_eq!(v["op"], "fragment");
            assert_eq!(v["id"], "publish 1");
            assert_eq!(v["num"], i);
            assert_eq!(v["total"], parts.len());
            let data = v["data"].as_str().expect("text");
            assert!(data.len() <= 7);
            joined.push_str(data);
        }
        assert_eq!(joined, text);
        assert_eq!(fragments("short".to_owned(), 7, "fragment", "x"), ["short"]);
    }

    #[test]
    fn png_holds_the_text_padded_with_newlines() {
        let text = b"{\"op\":\"publish\",\"topic\":\"/a\",\"msg\":{\"x\":1}}";
        let png = png_of_text(text).expect("encodes");
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut pixels = vec![0; reader.output_buffer_size().expect("sized")];
        let info = reader.next_frame(&mut pixels).expect("a frame");
        // 43 bytes: width floor(sqrt(43 / 3)) = 3, height ceil(43 / 3 / 3) = 5.
        assert_eq!((info.width, info.height), (3, 5));
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(&pixels[..text.len()], text);
        assert!(pixels[text.len()..].iter().all(|&b| b == b'\n'));
    }
}
