//! The cloud codecs' ROS 2 side: `zstd` holds exactly the CDR this crate writes for the
//! cloud (what point_cloud_transport's zstd plugin compresses), and an encoded cloud crosses
//! as `point_cloud_interfaces/msg/CompressedPointCloud2` and decodes after the round trip.

use streamwire::Codec;
use streamwire::Timestamp;
use streamwire::msgs::{
    CloudZstd, Cloudini, CompressedPointCloud, PointCloud, PointDatatype, PointField,
};
use streamwire_ros2::RosMessage;

fn cloud() -> PointCloud {
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("rgb", 12, PointDatatype::Float32, 1),
        PointField::new("ring", 16, PointDatatype::Uint16, 1),
    ];
    let mut data = Vec::new();
    for i in 0..7u16 {
        let v = f32::from(i);
        for value in [
            v * 1.5,
            -v,
            0.25 * v,
            f32::from_bits(0x00ff_0000 | u32::from(i)),
        ] {
            data.extend_from_slice(&value.to_le_bytes());
        }
        data.extend_from_slice(&(i * 1000).to_le_bytes());
        data.extend_from_slice(&[0, 0]);
    }
    PointCloud::new(fields, 7, 1, 20, 140, data)
        .expect("cloud")
        .with_dense(true)
        .with_stamp(Timestamp::from_nanos(1_700_000_001_000_000_042))
        .with_frame_id("lidar_top")
}

#[test]
fn zstd_holds_the_serialized_point_cloud2() {
    let cloud = cloud();
    let encoded = CloudZstd::default().encode(&cloud).expect("encode");
    assert_eq!(encoded.format(), "zstd");
    let inner = zstd::stream::decode_all(&encoded.compressed_data()[..]).expect("plain zstd");
    assert_eq!(inner, cloud.to_cdr().expect("cdr"));
    assert_eq!(PointCloud::from_cdr(inner).expect("reads"), cloud);
}

#[test]
fn compressed_clouds_cross_as_compressed_point_cloud2() {
    let cloud = cloud();
    for encoded in [
        Cloudini::default().encode(&cloud).expect("cloudini"),
        CloudZstd::default().encode(&cloud).expect("zstd"),
    ] {
        let cdr = encoded.to_cdr().expect("cdr");
        let back = CompressedPointCloud::from_cdr(cdr).expect("reads");
        assert_eq!(back, encoded);
    }
    let schema = CompressedPointCloud::ros_schema().expect("schema");
    assert!(
        schema.rihs01().starts_with("RIHS01_"),
        "{}",
        schema.rihs01()
    );
}
