//! Malformed CDR is refused with a typed error, never a panic, and before anything of
//! the size it declares is allocated (the counting allocator measures every decode).

mod common;

use bytes::Bytes;
use streamwire::msgs::{Detections, Image, PointCloud, Transforms};
use streamwire_ros2::cdr::CdrError;
use streamwire_ros2::{DecodeError, RosMessage, decode_any};
use streamwire_testdata::alloc::{CountingAlloc, peak_during};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Decoding a lying buffer may allocate a few small things (an error message), never
/// anything near what the buffer claims.
const SMALL: usize = 16 * 1024;

/// Every prefix of every sample is refused (or, for the prefixes that end in trailing
/// padding, read), and no decode of a prefix panics.
#[test]
fn every_truncation_is_an_error() {
    for case in common::all_cases() {
        // The large samples have a million prefixes; a stride keeps the run short.
        let stride = (case.cdr.len() / 4096).max(1);
        let full = Bytes::from(case.cdr.clone());
        for len in (0..case.cdr.len()).step_by(stride) {
            let prefix = full.slice(..len);
            match decode_any(case.ros_type, prefix) {
                Some(Err(DecodeError::Cdr(_))) => {}
                Some(Err(e)) => panic!("{} cut at {len}: not a CDR error: {e}", case.name),
                Some(Ok(_)) => panic!("{} cut at {len} of {} decoded", case.name, case.cdr.len()),
                None => panic!("{}: no decoder for {}", case.name, case.ros_type),
            }
        }
    }
}

/// Overwrites the little-endian u32 at `at`.
fn patch(cdr: &[u8], at: usize, value: u32) -> Bytes {
    let mut cdr = cdr.to_vec();
    cdr[at..at + 4].copy_from_slice(&value.to_le_bytes());
    Bytes::from(cdr)
}

/// Decodes `bytes` as `M`, returning the error and the peak of bytes live meanwhile.
fn refused<M: RosMessage + std::fmt::Debug>(bytes: Bytes) -> (DecodeError, usize) {
    let (result, peak) = peak_during(|| M::from_cdr(bytes));
    (result.expect_err("a lying buffer decodes"), peak)
}

fn assert_length_refused(what: &str, (error, peak): (DecodeError, usize)) {
    assert!(
        matches!(error, DecodeError::Cdr(CdrError::LengthTooLong { .. })),
        "{what}: {error}"
    );
    assert!(
        peak < SMALL,
        "{what}: {peak} bytes allocated while refusing"
    );
}

/// A sequence or string that claims ~4 GB in a buffer of a few bytes is refused before
/// anything of that size is allocated: image pixels, point fields, transforms,
/// detections, strings.
#[test]
fn lying_lengths_are_refused_before_allocating() {
    let image = common::images().remove(0);
    // Header: time 8, frame_id length at 12 ("camera" + NUL = 7 bytes, padded to 20).
    assert_length_refused(
        "image frame_id",
        refused::<Image>(patch(&image.cdr, 12, u32::MAX)),
    );
    // The pixel length is the last u32 before the data.
    let data_len_at = image.cdr.len() - 18 - 4;
    assert_length_refused(
        "image data",
        refused::<Image>(patch(&image.cdr, data_len_at, u32::MAX - 7)),
    );

    let cloud = common::clouds().remove(0);
    // After the header ("lidar" + NUL at 12, padded to 20) come height, width, then the
    // number of fields.
    assert_length_refused(
        "point fields",
        refused::<PointCloud>(patch(&cloud.cdr, 4 + 28, 50_000_000)),
    );

    let tf = common::transforms().remove(0);
    assert_length_refused(
        "transforms",
        refused::<Transforms>(patch(&tf.cdr, 4, 40_000_000)),
    );

    let detections = common::detections().remove(0);
    // "camera": header ends at 24 (padded), then the count.
    assert_length_refused(
        "detections",
        refused::<Detections>(patch(&detections.cdr, 4 + 20, 30_000_000)),
    );
}

#[test]
fn bad_headers_and_values_are_typed_errors() {
    let image = common::images().remove(0);
    let mut big_endian = image.cdr.clone();
    big_endian[1] = 0x00;
    assert!(matches!(
        Image::from_cdr(big_endian),
        Err(DecodeError::Cdr(CdrError::Encapsulation { .. }))
    ));
    assert!(matches!(
        Image::from_cdr(vec![0, 1]),
        Err(DecodeError::Cdr(CdrError::NoHeader { len: 2 }))
    ));

    // A string without its NUL.
    let mut unterminated = image.cdr.clone();
    unterminated[4 + 8 + 4 + 6] = b'!';
    assert!(matches!(
        Image::from_cdr(unterminated),
        Err(DecodeError::Cdr(CdrError::NotTerminated { .. }))
    ));

    // A bool that is 7: PointCloud2's is_dense, the last byte.
    let mut cloud = common::clouds().remove(0).cdr;
    *cloud.last_mut().expect("bytes") = 7;
    assert!(matches!(
        PointCloud::from_cdr(cloud),
        Err(DecodeError::Cdr(CdrError::NotBool { value: 7, .. }))
    ));
}

/// A decoder for every mapped type: arbitrary bytes after a valid header never panic.
#[test]
fn garbage_never_panics() {
    let types = [
        "sensor_msgs/msg/Image",
        "sensor_msgs/msg/CompressedImage",
        "sensor_msgs/msg/PointCloud2",
        "point_cloud_interfaces/msg/CompressedPointCloud2",
        "nav_msgs/msg/Odometry",
        "geometry_msgs/msg/Twist",
        "nav_msgs/msg/OccupancyGrid",
        "vision_msgs/msg/Detection2DArray",
        "tf2_msgs/msg/TFMessage",
        "rcl_interfaces/msg/Log",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for round in 0..2000 {
        let len = round % 300;
        let mut bytes = vec![0x00, 0x01, 0x00, 0x00];
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly small values, so that lengths are sometimes plausible.
            bytes.push(if state.is_multiple_of(3) {
                (state >> 8) as u8
            } else {
                (state % 8) as u8
            });
        }
        let bytes = Bytes::from(bytes);
        for ros_type in types {
            let (_, peak) = peak_during(|| decode_any(ros_type, bytes.clone()));
            assert!(
                peak < SMALL + 4 * len,
                "{ros_type}: {peak} bytes for {len} bytes of input"
            );
        }
    }
}
