//! The wire frame: round trips, the golden layouts of RFC.md (version 1, and version 2
//! with blobs), hostile frames refused before anything of their declared size is
//! allocated, and blobs read where they were received.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use bytes::Bytes;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use streamwire_core::{AnyMessage, Header, Message, Timestamp};
use streamwire_msgs::{CompressedImage, Image, ImageEncoding, Odometry, Pose, Twist};
use streamwire_testdata::alloc::{CountingAlloc, peak_during};
use streamwire_transport::{
    FORMAT_VERSION, FrameBytes, FrameError, MAGIC, Rejection, WireFrame, payload,
};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

const IMAGE: (&str, u32) = (Image::TYPE_NAME, Image::SCHEMA_VERSION);
const JPEG: (&str, u32) = (CompressedImage::TYPE_NAME, CompressedImage::SCHEMA_VERSION);
const STEREO: (&str, u32) = (Stereo::TYPE_NAME, Stereo::SCHEMA_VERSION);

/// A message of two blob fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, streamwire::Message)]
#[message(name = "test/Stereo")]
struct Stereo {
    #[serde(with = "streamwire::blob")]
    left: Bytes,
    #[serde(with = "streamwire::blob")]
    right: Bytes,
}

fn stereo() -> Stereo {
    Stereo {
        left: Bytes::from(vec![1u8; 4000]),
        right: Bytes::from(vec![2u8; 5000]),
    }
}

fn header(seq: u64) -> Header {
    Header {
        seq,
        publish_time: Timestamp::from_nanos(1_700_000_000_000_000_000u64.wrapping_add(seq)),
    }
}

fn image(width: u32, height: u32, seed: u8) -> Image {
    let data: Vec<u8> = (0..width * height * 3)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    Image::from_packed(width, height, ImageEncoding::Rgb8, data)
        .unwrap()
        .with_stamp(Timestamp::from_nanos(42))
}

fn odometry() -> Odometry {
    Odometry::new("odom", "base_link", Pose::default(), Twist::default()).unwrap()
}

fn roundtrip(message: &dyn AnyMessage, accepted: &[(&'static str, u32)]) -> Box<dyn AnyMessage> {
    let bytes = WireFrame::encode(message, header(7), 3, "").unwrap();
    let frame = WireFrame::parse(bytes).unwrap();
    assert_eq!(frame.head.link_seq, 3);
    assert_eq!(frame.head.header(), header(7));
    frame.decode_message(accepted).unwrap()
}

#[test]
fn an_image_round_trips() {
    let sent = image(17, 9, 1);
    let back = roundtrip(&sent, &[IMAGE]);
    let back = back.downcast_ref::<Image>().unwrap();
    assert_eq!(back.data(), sent.data());
    assert_eq!((back.width(), back.height()), (17, 9));
    assert_eq!(back.stamp(), sent.stamp());
}

#[test]
fn jpeg_bytes_cross_unchanged() {
    let jpeg: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 256) as u8).collect();
    let sent = CompressedImage::new("jpeg", jpeg.clone(), 640, 480).unwrap();
    let back = roundtrip(&sent, &[IMAGE, JPEG]);
    let back = back.downcast_ref::<CompressedImage>().unwrap();
    assert_eq!(back.data().as_ref(), jpeg.as_slice());
    assert_eq!(back.format(), "jpeg");
}

fn hex(b: &[u8]) -> String {
    b.chunks(16)
        .map(|row| {
            row.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every line of `text` with bytes in it is in RFC.md: the spec and the code cannot drift
/// apart unseen.
fn assert_in_rfc(text: &str) {
    let rfc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../RFC.md")).unwrap();
    for line in text
        .lines()
        .filter(|l| l.contains(' ') && l.len() > 20 && !l.contains(':'))
    {
        assert!(
            rfc.contains(line),
            "RFC.md lacks the golden frame line `{line}`"
        );
    }
}

/// The frame layout written in RFC.md ("The wire frame"), byte for byte.
#[test]
fn golden_frame_layout() {
    let message = odometry();
    let bytes = WireFrame::encode(&message, header(5), 9, "").unwrap();
    assert_eq!(
        bytes.parts().len(),
        1,
        "a message without blobs is one part"
    );
    let bytes = bytes.to_bytes();
    let head_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let text = format!(
        "fixed part (16 bytes):\n{}\n\nhead ({head_len} bytes, CDR little-endian):\n{}\n\npayload: {} bytes of CBOR\n",
        hex(&bytes[..16]),
        hex(&bytes[16..16 + head_len]),
        bytes.len() - 16 - head_len
    );
    insta::assert_snapshot!(text);
    assert_in_rfc(&text);
    assert_eq!(&bytes[..4], &MAGIC);
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), 1);
}

/// Version 2, as RFC.md shows it: a 32x32 rgb8 image (3072 bytes of pixels, a blob),
/// whose pixels follow the payload as the frame's second part, the sender's own buffer.
#[test]
fn golden_frame_layout_with_a_blob() {
    let message = image(32, 32, 5);
    let frame = WireFrame::encode(&message, header(5), 9, "").unwrap();
    assert_eq!(frame.parts().len(), 2);
    assert_eq!(frame.parts()[1].as_ptr(), message.data().as_ptr());
    let first = &frame.parts()[0];
    let word = |at: usize| u32::from_le_bytes(first[at..at + 4].try_into().unwrap()) as usize;
    let (head_len, payload_len, count) = (word(8), word(12), word(16));
    let table_end = 24 + 8 * count;
    let payload = &first[table_end + head_len..];
    assert_eq!(payload.len(), payload_len);
    let text = format!(
        "fixed part (24 bytes):\n{}\n\nblob table ({count} blob):\n{}\n\nhead ({head_len} bytes, CDR little-endian):\n{}\n\npayload ({payload_len} bytes of CBOR):\n{}\n\nblob section: {} bytes, sent as its own slice\n",
        hex(&first[..24]),
        hex(&first[24..table_end]),
        hex(&first[table_end..table_end + head_len]),
        hex(payload),
        frame.parts()[1].len()
    );
    insta::assert_snapshot!(text);
    assert_in_rfc(&text);
    assert_eq!(u16::from_le_bytes([first[4], first[5]]), FORMAT_VERSION);
}

proptest! {
    #[test]
    fn frames_round_trip(
        width in 1u32..24,
        height in 1u32..24,
        seed in any::<u8>(),
        seq in any::<u64>(),
        link_seq in any::<u64>(),
        codec in "[a-z0-9_]{0,12}",
    ) {
        let sent = image(width, height, seed);
        let bytes = WireFrame::encode(&sent, header(seq), link_seq, &codec).unwrap();
        let frame = WireFrame::parse(bytes).unwrap();
        prop_assert_eq!(frame.head.link_seq, link_seq);
        prop_assert_eq!(frame.head.header(), header(seq));
        prop_assert_eq!(&frame.head.codec, &codec);
        prop_assert_eq!(frame.head.wire_name.as_str(), Image::TYPE_NAME);
        let back = frame.decode_message(&[IMAGE]).unwrap();
        prop_assert_eq!(back.downcast_ref::<Image>().unwrap().data(), sent.data());
    }

    /// Whatever the bytes, reading them returns (an error or a frame), never panics.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(frame) = WireFrame::parse(Bytes::from(bytes)) {
            let _ = frame.decode_message(&[IMAGE, JPEG]);
        }
    }

    /// Whatever bytes follow a good version 2 fixed part, reading them never panics.
    #[test]
    fn arbitrary_version_two_frames_never_panic(
        rest in proptest::collection::vec(any::<u8>(), 0..512),
        count in 0u32..4,
        section in 0u32..600,
    ) {
        let mut bytes = b"SWFR\x02\x00\x00\x00".to_vec();
        bytes.extend_from_slice(&40u32.to_le_bytes());
        bytes.extend_from_slice(&((rest.len() as u32).saturating_sub(40 + 8 * count + section)).to_le_bytes());
        bytes.extend_from_slice(&count.to_le_bytes());
        bytes.extend_from_slice(&section.to_le_bytes());
        bytes.extend_from_slice(&rest);
        if let Ok(frame) = WireFrame::parse(Bytes::from(bytes)) {
            let _ = frame.decode_message(&[IMAGE, JPEG, STEREO]);
        }
    }

    /// A version 2 frame cut into any parts (as zenoh delivers TCP fragments) reads as the
    /// same message; a blob in one part is read without a copy, and each blob spread over
    /// several is copied once and counted.
    #[test]
    fn a_frame_in_any_parts_reads_the_same(cuts in proptest::collection::vec(1usize..9000, 0..6)) {
        let sent = stereo();
        let whole = WireFrame::encode(&sent, header(3), 2, "").unwrap().to_bytes();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % whole.len()).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut parts = Vec::new();
        let mut at = 0;
        for cut in cuts.into_iter().chain([whole.len()]) {
            parts.push(whole.slice(at..cut));
            at = cut;
        }
        let frame = WireFrame::parse(FrameBytes::from_parts(parts.clone())).unwrap();
        let back = frame.decode_message(&[STEREO]).unwrap();
        let back = back.downcast_ref::<Stereo>().unwrap();
        prop_assert_eq!(back, &sent);
        let in_one_part = |blob: &Bytes| {
            parts.iter().any(|p| {
                let range = p.as_ptr() as usize..p.as_ptr() as usize + p.len();
                range.contains(&(blob.as_ptr() as usize))
                    && blob.as_ptr() as usize + blob.len() <= range.end
            })
        };
        let copied = u64::from(!in_one_part(&back.left)) + u64::from(!in_one_part(&back.right));
        prop_assert_eq!(frame.copies(), copied);
    }

    /// Any prefix of a good frame is refused as truncated.
    #[test]
    fn every_prefix_is_truncated(cut in 4usize..200) {
        let bytes = WireFrame::encode(&image(4, 4, 0), header(1), 1, "").unwrap();
        let cut = cut.min(bytes.len() - 1);
        let error = WireFrame::parse(bytes.to_bytes().slice(..cut)).unwrap_err();
        prop_assert_eq!(error.rejection(), Rejection::Truncated);
    }

    /// Any prefix of a good version 2 frame, in its parts, is refused as truncated.
    #[test]
    fn every_prefix_of_a_frame_with_blobs_is_truncated(cut in 4usize..9000) {
        let bytes = WireFrame::encode(&stereo(), header(1), 1, "").unwrap();
        let cut = cut.min(bytes.len() - 1);
        let error = WireFrame::parse(bytes.to_bytes().slice(..cut)).unwrap_err();
        prop_assert_eq!(error.rejection(), Rejection::Truncated);
    }
}

fn rejection(bytes: Bytes, accepted: &[(&'static str, u32)]) -> (FrameError, usize) {
    let (result, peak) = peak_during(|| {
        WireFrame::parse(bytes).and_then(|frame| frame.decode_message(accepted).map(|_| ()))
    });
    (result.unwrap_err(), peak)
}

#[test]
fn hostile_frames_are_refused_by_kind_without_large_allocations() {
    let good = WireFrame::encode(&image(8, 8, 3), header(1), 1, "")
        .unwrap()
        .to_bytes();
    let mut cases: Vec<(&str, Bytes, Rejection)> = Vec::new();
    cases.push((
        "garbage",
        Bytes::from_static(b"GET / HTTP/1.1\r\n\r\n"),
        Rejection::Garbage,
    ));
    cases.push(("empty", Bytes::new(), Rejection::Garbage));
    cases.push((
        "truncated",
        good.slice(..good.len() - 10),
        Rejection::Truncated,
    ));
    let mut version = good.to_vec();
    version[4..6].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    cases.push((
        "wrong version",
        Bytes::from(version),
        Rejection::Incompatible,
    ));
    // A payload length of 4 GiB on a frame of a few hundred bytes.
    let mut huge = good.to_vec();
    huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push((
        "oversized payload length",
        Bytes::from(huge),
        Rejection::Truncated,
    ));
    // A head declaring a 4 GiB wire name.
    let mut name = good.to_vec();
    name[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push((
        "oversized string in head",
        Bytes::from(name),
        Rejection::Garbage,
    ));
    let odometry = WireFrame::encode(&odometry(), header(1), 1, "").unwrap();
    cases.push(("wrong type", odometry.to_bytes(), Rejection::WrongType));
    for (what, bytes, expected) in cases {
        let (error, peak) = rejection(bytes, &[IMAGE]);
        assert_eq!(error.rejection(), expected, "{what}: {error}");
        assert!(peak < 64 * 1024, "{what}: {peak} bytes allocated");
    }
}

/// An image claiming 100000 x 100000 pixels (30 GB) with a few bytes of data: refused by
/// the image's own checks, with nothing of that size allocated.
#[test]
fn an_image_claiming_absurd_dimensions_allocates_nothing_of_that_size() {
    #[derive(serde::Serialize)]
    struct Claim {
        width: u32,
        height: u32,
        encoding: ImageEncoding,
        step: u32,
        #[serde(with = "serde_bytes_like")]
        data: Vec<u8>,
        stamp: Timestamp,
        frame_id: String,
    }
    mod serde_bytes_like {
        pub(super) fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(v)
        }
    }
    // A real frame of a small image, with its payload swapped for the claim.
    let claim = Claim {
        width: 100_000,
        height: 100_000,
        encoding: ImageEncoding::Rgb8,
        step: 300_000,
        data: vec![1, 2, 3],
        stamp: Timestamp::ZERO,
        frame_id: String::new(),
    };
    let mut payload = Vec::new();
    cbor4ii::serde::to_writer(&mut payload, &claim).unwrap();
    let good = WireFrame::encode(&image(1, 1, 0), header(1), 1, "")
        .unwrap()
        .to_bytes();
    let head_len = u32::from_le_bytes(good[8..12].try_into().unwrap()) as usize;
    let mut frame = good[..16 + head_len].to_vec();
    frame[12..16].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&payload);
    let (error, peak) = rejection(Bytes::from(frame), &[IMAGE]);
    assert_eq!(error.rejection(), Rejection::Undecodable, "{error}");
    assert!(peak < 64 * 1024, "{peak} bytes allocated");
}

#[test]
fn the_incompatible_error_names_both_versions() {
    let mut bytes = WireFrame::encode(&image(2, 2, 0), header(1), 1, "")
        .unwrap()
        .to_bytes()
        .to_vec();
    bytes[4..6].copy_from_slice(&7u16.to_le_bytes());
    let error = WireFrame::parse(Bytes::from(bytes)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "incompatible frame format: version 7 received, this build reads versions 1 to 2"
    );
}

/// A 2.76 MB image crosses a frame without a copy either way: sending allocates the
/// frame's first part (fixed part, head, a few bytes of CBOR), receiving the message's
/// small fields; the pixels are the sender's buffer on both sides.
#[test]
fn a_720p_image_is_not_copied_either_way() {
    let sent = image(1280, 720, 9);
    let (bytes, out) =
        streamwire_testdata::alloc::allocated_during(|| WireFrame::encode(&sent, header(1), 1, ""));
    let bytes = bytes.unwrap();
    assert!(out < 4096, "send allocated {out}");
    let (back, inbound) = streamwire_testdata::alloc::allocated_during(|| {
        WireFrame::parse(bytes.clone())
            .unwrap()
            .decode_message(&[IMAGE])
            .unwrap()
    });
    assert!(inbound < 4096, "receive allocated {inbound}");
    let back = back.downcast_ref::<Image>().unwrap();
    assert_eq!(back.data(), sent.data());
    assert_eq!(back.data().as_ptr(), sent.data().as_ptr());
}

/// A frame written by a build that knew only version 1 (the image's pixels inline in the
/// payload) still reads, and its pixels are copied once, as they always were.
#[test]
fn a_version_one_frame_of_a_large_image_still_reads() {
    let sent = image(64, 64, 3);
    let blobbed = WireFrame::encode(&sent, header(2), 8, "").unwrap();
    let parsed = WireFrame::parse(blobbed.clone()).unwrap();
    assert_eq!(parsed.version, 2);
    let inline = payload::encode_into(&sent, Vec::new()).unwrap();
    let mut frame = b"SWFR\x01\x00\x00\x00".to_vec();
    let first = &blobbed.parts()[0];
    let head_len = u32::from_le_bytes(first[8..12].try_into().unwrap()) as usize;
    let table_end = 24 + 8 * u32::from_le_bytes(first[16..20].try_into().unwrap()) as usize;
    frame.extend_from_slice(&(head_len as u32).to_le_bytes());
    frame.extend_from_slice(&(inline.len() as u32).to_le_bytes());
    frame.extend_from_slice(&first[table_end..table_end + head_len]);
    frame.extend_from_slice(&inline);
    let frame = Bytes::from(frame);
    let old = WireFrame::parse(frame.clone()).unwrap();
    assert_eq!((old.version, old.copies()), (1, 0));
    // Received in two slices, it is joined to be read: one copy, counted.
    let cut = frame.len() / 2;
    let split = FrameBytes::from_parts(vec![frame.slice(..cut), frame.slice(cut..)]);
    let joined = WireFrame::parse(split).unwrap();
    assert_eq!(joined.copies(), 1);
    assert_eq!(
        joined
            .decode_message(&[IMAGE])
            .unwrap()
            .downcast_ref::<Image>()
            .unwrap(),
        &sent
    );
    assert_eq!(old.head, parsed.head);
    let back = old.decode_message(&[IMAGE]).unwrap();
    assert_eq!(back.downcast_ref::<Image>().unwrap(), &sent);
}

/// A version 2 frame of `stereo()` with its table, payload and section replaced.
struct Forged {
    table: Vec<(u32, u32)>,
    section: Vec<u8>,
    declared_section: Option<u32>,
    declared_count: Option<u32>,
    payload: Vec<u8>,
}

impl Forged {
    fn from_stereo() -> Forged {
        let sent = stereo();
        let (payload, blobs) = payload::write_with_blobs(&sent, Vec::new()).unwrap();
        let mut table = Vec::new();
        let mut section = Vec::new();
        for blob in blobs {
            table.push((section.len() as u32, blob.len() as u32));
            section.extend_from_slice(&blob);
        }
        Forged {
            table,
            section,
            declared_section: None,
            declared_count: None,
            payload,
        }
    }

    fn bytes(&self) -> Bytes {
        let good = WireFrame::encode(&stereo(), header(1), 1, "").unwrap();
        let first = &good.parts()[0];
        let head_len = u32::from_le_bytes(first[8..12].try_into().unwrap()) as usize;
        let head = &first[24 + 16..24 + 16 + head_len];
        let mut frame = b"SWFR\x02\x00\x00\x00".to_vec();
        frame.extend_from_slice(&(head_len as u32).to_le_bytes());
        frame.extend_from_slice(&(self.payload.len() as u32).to_le_bytes());
        let count = self.declared_count.unwrap_or(self.table.len() as u32);
        frame.extend_from_slice(&count.to_le_bytes());
        let section = self.declared_section.unwrap_or(self.section.len() as u32);
        frame.extend_from_slice(&section.to_le_bytes());
        for (offset, len) in &self.table {
            frame.extend_from_slice(&offset.to_le_bytes());
            frame.extend_from_slice(&len.to_le_bytes());
        }
        frame.extend_from_slice(head);
        frame.extend_from_slice(&self.payload);
        frame.extend_from_slice(&self.section);
        Bytes::from(frame)
    }
}

/// The payload's blob indexes (CBOR unsigned 0 and 1 after the keys `left` and `right`)
/// set to `left` and `right`.
fn with_indexes(payload: &[u8], left: u8, right: u8) -> Vec<u8> {
    let mut payload = payload.to_vec();
    for (key, index) in [(&b"\x64left"[..], left), (&b"\x65right"[..], right)] {
        let at = payload.windows(key.len()).position(|w| w == key).unwrap();
        assert!(payload[at + key.len()] < 24, "an index in one byte");
        payload[at + key.len()] = index;
    }
    payload
}

#[test]
fn hostile_version_two_frames_are_refused_by_kind_before_allocation() {
    let good = Forged::from_stereo();
    let (_, peak) = peak_during(|| {
        WireFrame::parse(good.bytes())
            .unwrap()
            .decode_message(&[STEREO])
            .unwrap()
    });
    assert!(peak < 64 * 1024, "a good frame: {peak}");
    let mut cases: Vec<(&str, Forged, Rejection, &str)> = Vec::new();
    let mut index_out_of_range = Forged::from_stereo();
    index_out_of_range.payload = with_indexes(&good.payload, 0, 7);
    cases.push((
        "a blob index past the table",
        index_out_of_range,
        Rejection::Undecodable,
        "blob index 7 is past the frame's 2 blobs",
    ));
    let mut twice = Forged::from_stereo();
    twice.payload = with_indexes(&good.payload, 0, 0);
    cases.push((
        "one blob read by two fields",
        twice,
        Rejection::Undecodable,
        "blob 0 is read by two fields",
    ));
    let mut overlapping = Forged::from_stereo();
    overlapping.table[1].0 = 3000;
    overlapping.section.truncate(3000 + 5000);
    cases.push((
        "overlapping blobs",
        overlapping,
        Rejection::Undecodable,
        "blobs 0 and 1 overlap (bytes 0..4000 and 3000..8000)",
    ));
    let mut past = Forged::from_stereo();
    past.table[1].1 = u32::MAX - 4000;
    cases.push((
        "a blob's length past the section",
        past,
        Rejection::Undecodable,
        "blob 1 (bytes 4000..4294967295) ends past the blob section of 9000 bytes",
    ));
    let mut section_past = Forged::from_stereo();
    section_past.declared_section = Some(u32::MAX);
    cases.push((
        "a section longer than the frame",
        section_past,
        Rejection::Truncated,
        "truncated frame",
    ));
    let mut many = Forged::from_stereo();
    many.declared_count = Some(u32::MAX);
    cases.push((
        "four billion blobs declared",
        many,
        Rejection::Undecodable,
        "4294967295 blobs declared, more than the 64 a frame may carry",
    ));
    let mut unread = Forged::from_stereo();
    unread.table.push((9000, 100));
    unread.section.extend_from_slice(&[0; 100]);
    cases.push((
        "a blob no field reads",
        unread,
        Rejection::Undecodable,
        "blob 2 is read by no field of the `test/Stereo`",
    ));
    for (what, forged, expected, says) in cases {
        let (error, peak) = rejection(forged.bytes(), &[STEREO]);
        assert_eq!(error.rejection(), expected, "{what}: {error}");
        assert!(error.to_string().contains(says), "{what}: {error}");
        assert!(peak < 64 * 1024, "{what}: {peak} bytes allocated");
    }
}

/// A frame from a stream's history that its publisher counted as not sent is marked so
/// by the joiner's transport, and still reads as the same message; the flag is refused on
/// a control frame and next to flags this build does not know.
#[test]
fn the_unsent_flag_marks_a_message_frame_only() {
    let sent = odometry();
    let mut bytes = WireFrame::encode(&sent, header(1), 4, "")
        .unwrap()
        .to_bytes()
        .to_vec();
    assert!(!WireFrame::parse(Bytes::from(bytes.clone())).unwrap().unsent);
    WireFrame::mark_unsent(&mut bytes);
    let frame = WireFrame::parse(Bytes::from(bytes.clone())).unwrap();
    assert!(frame.unsent && !frame.stop && !frame.end_of_stream);
    let back = frame.decode_message(&[(Odometry::TYPE_NAME, Odometry::SCHEMA_VERSION)]);
    assert!(back.unwrap().downcast_ref::<Odometry>().is_some());

    let mut stop = WireFrame::stop(5).unwrap().to_bytes().to_vec();
    stop[6..8].copy_from_slice(&0x0006u16.to_le_bytes());
    let error = WireFrame::parse(Bytes::from(stop)).unwrap_err();
    assert!(matches!(error, FrameError::Flags(0x0006)), "{error}");

    bytes[6..8].copy_from_slice(&0x000cu16.to_le_bytes());
    let error = WireFrame::parse(Bytes::from(bytes)).unwrap_err();
    assert!(matches!(error, FrameError::Flags(0x000c)), "{error}");
}

/// A version 2 frame from a stream's history is marked in its first part; its blobs are
/// not copied.
#[test]
fn marking_a_frame_with_blobs_unsent_copies_only_its_first_part() {
    let sent = stereo();
    let frame = WireFrame::encode(&sent, header(1), 4, "").unwrap();
    let marked = WireFrame::marked_unsent(&frame);
    assert_eq!(marked.parts()[1].as_ptr(), sent.left.as_ptr());
    let parsed = WireFrame::parse(marked).unwrap();
    assert!(parsed.unsent);
    let back = parsed.decode_message(&[STEREO]).unwrap();
    assert_eq!(back.downcast_ref::<Stereo>().unwrap(), &sent);
}
