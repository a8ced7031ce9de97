//! The wire frame: round trips, the golden layout of RFC.md, and hostile frames refused
//! before anything of their declared size is allocated.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use bytes::Bytes;
use proptest::prelude::*;
use streamwire_core::{AnyMessage, Header, Message, Timestamp};
use streamwire_msgs::{CompressedImage, Image, ImageEncoding, Odometry, Pose, Twist};
use streamwire_testdata::alloc::{CountingAlloc, peak_during};
use streamwire_transport::{FORMAT_VERSION, FrameError, MAGIC, Rejection, WireFrame};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

const IMAGE: (&str, u32) = (Image::TYPE_NAME, Image::SCHEMA_VERSION);
const JPEG: (&str, u32) = (CompressedImage::TYPE_NAME, CompressedImage::SCHEMA_VERSION);

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

/// The frame layout written in RFC.md ("The wire frame"), byte for byte.
#[test]
fn golden_frame_layout() {
    let message = odometry();
    let bytes = WireFrame::encode(&message, header(5), 9, "").unwrap();
    let head_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let hex = |b: &[u8]| {
        b.chunks(16)
            .map(|row| {
                row.iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let text = format!(
        "fixed part (16 bytes):\n{}\n\nhead ({head_len} bytes, CDR little-endian):\n{}\n\npayload: {} bytes of CBOR\n",
        hex(&bytes[..16]),
        hex(&bytes[16..16 + head_len]),
        bytes.len() - 16 - head_len
    );
    insta::assert_snapshot!(text);
    // RFC.md shows the same bytes: the spec and the code cannot drift apart unseen.
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
    assert_eq!(&bytes[..4], &MAGIC);
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), FORMAT_VERSION);
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

    /// Any prefix of a good frame is refused as truncated.
    #[test]
    fn every_prefix_is_truncated(cut in 4usize..200) {
        let bytes = WireFrame::encode(&image(4, 4, 0), header(1), 1, "").unwrap();
        let cut = cut.min(bytes.len() - 1);
        let error = WireFrame::parse(bytes.slice(..cut)).unwrap_err();
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
    let good = WireFrame::encode(&image(8, 8, 3), header(1), 1, "").unwrap();
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
    cases.push(("wrong type", odometry, Rejection::WrongType));
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
    let good = WireFrame::encode(&image(1, 1, 0), header(1), 1, "").unwrap();
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
        .to_vec();
    bytes[4..6].copy_from_slice(&7u16.to_le_bytes());
    let error = WireFrame::parse(Bytes::from(bytes)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "incompatible frame format: version 7 received, this build reads version {FORMAT_VERSION}"
        )
    );
}

/// A 2.76 MB frame costs one allocation of its size to send (the frame's buffer) and one
/// to receive (the image's buffer): the copies, one each way.
#[test]
fn a_720p_image_is_copied_once_each_way() {
    let sent = image(1280, 720, 9);
    let size = sent.data().len();
    let (bytes, out) =
        streamwire_testdata::alloc::allocated_during(|| WireFrame::encode(&sent, header(1), 1, ""));
    let bytes = bytes.unwrap();
    assert!(
        out >= size && out < size + size / 10,
        "send allocated {out}"
    );
    let (back, inbound) = streamwire_testdata::alloc::allocated_during(|| {
        WireFrame::parse(bytes.clone())
            .unwrap()
            .decode_message(&[IMAGE])
            .unwrap()
    });
    assert!(
        inbound >= size && inbound < size + 64 * 1024,
        "receive allocated {inbound}"
    );
    assert_eq!(back.downcast_ref::<Image>().unwrap().data(), sent.data());
}

/// A frame from a stream's history that its publisher counted as not sent is marked so
/// by the joiner's transport, and still reads as the same message; the flag is refused on
/// a control frame and next to flags this build does not know.
#[test]
fn the_unsent_flag_marks_a_message_frame_only() {
    let sent = odometry();
    let mut bytes = WireFrame::encode(&sent, header(1), 4, "").unwrap().to_vec();
    assert!(!WireFrame::parse(Bytes::from(bytes.clone())).unwrap().unsent);
    WireFrame::mark_unsent(&mut bytes);
    let frame = WireFrame::parse(Bytes::from(bytes.clone())).unwrap();
    assert!(frame.unsent && !frame.stop && !frame.end_of_stream);
    let back = frame.decode_message(&[(Odometry::TYPE_NAME, Odometry::SCHEMA_VERSION)]);
    assert!(back.unwrap().downcast_ref::<Odometry>().is_some());

    let mut stop = WireFrame::stop(5).unwrap().to_vec();
    stop[6..8].copy_from_slice(&0x0006u16.to_le_bytes());
    let error = WireFrame::parse(Bytes::from(stop)).unwrap_err();
    assert!(matches!(error, FrameError::Flags(0x0006)), "{error}");

    bytes[6..8].copy_from_slice(&0x000cu16.to_le_bytes());
    let error = WireFrame::parse(Bytes::from(bytes)).unwrap_err();
    assert!(matches!(error, FrameError::Flags(0x000c)), "{error}");
}
