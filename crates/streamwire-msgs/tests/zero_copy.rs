//! Clones never copy a payload: proved with the workspace's counting allocator (its own
//! test binary, since the allocator is process-wide; counts are per thread, so tests running
//! in parallel do not disturb each other).

use bytes::Bytes;
use streamwire_core::{AnyMessage, Codec};
use streamwire_msgs::{
    CompressedImage, DepthImage, Image, ImageEncoding, Jpeg, Odometry, PointCloud, PointField,
    Pose, Quaternion, Twist,
};

use streamwire_testdata::alloc::{CountingAlloc, allocated_during};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Bytes allocated on this thread while running `f`.
fn allocated_by(f: impl FnOnce()) -> usize {
    allocated_during(f).1
}

#[test]
fn cloning_any_message_allocates_nothing() {
    // 1280x720 RGB: a copy would show as 2.76 MB.
    let image = Image::from_packed(1280, 720, ImageEncoding::Rgb8, vec![7u8; 1280 * 720 * 3])
        .unwrap()
        .with_frame_id("camera");
    let depth = DepthImage::from_mm(640, 480, &vec![1500u16; 640 * 480]).unwrap();
    let small = Image::from_packed(64, 48, ImageEncoding::Rgb8, vec![9u8; 64 * 48 * 3]).unwrap();
    let compressed: CompressedImage = Jpeg::default().encode(&small).unwrap();
    let cloud = PointCloud::new(
        vec![PointField::new(
            "x",
            0,
            streamwire_msgs::PointDatatype::Float32,
            1,
        )],
        1000,
        1,
        4,
        4000,
        Bytes::from(vec![0u8; 4000]),
    )
    .unwrap();
    let pose = Pose {
        orientation: Quaternion::IDENTITY,
        ..Pose::default()
    };
    let odometry = Odometry::new("odom", "base_link", pose, Twist::default()).unwrap();

    // The first clone of a `Bytes` made from a `Vec` allocates its shared reference count
    // (a few dozen bytes); after that, clones allocate nothing. A payload copy would be
    // kilobytes to megabytes.
    let first = allocated_by(|| drop(image.clone()));
    assert!(first <= 64, "Image: {first} bytes on the first clone");
    assert_eq!(allocated_by(|| drop(image.clone())), 0, "Image");
    let clones: [(&str, &dyn Fn()); 4] = [
        ("DepthImage", &|| drop(depth.clone())),
        ("CompressedImage", &|| drop(compressed.clone())),
        ("PointCloud", &|| drop(cloud.clone())),
        ("Odometry", &|| drop(odometry.clone())),
    ];
    for (name, clone) in clones {
        clone(); // the one-time promotion, if any
        assert_eq!(allocated_by(clone), 0, "{name}");
    }
}

#[test]
fn a_boxed_clone_allocates_the_box_only() {
    let image =
        Image::from_packed(1280, 720, ImageEncoding::Rgb8, vec![7u8; 1280 * 720 * 3]).unwrap();
    let boxed: Box<dyn AnyMessage> = Box::new(image);
    drop(boxed.clone_boxed()); // the one-time promotion of the buffer's reference count
    let bytes = allocated_by(|| drop(boxed.clone_boxed()));
    assert_eq!(
        bytes,
        std::mem::size_of::<Image>(),
        "the box only, not the 2.76 MB of pixels"
    );
}
