//! What a person reads: the `.msg` texts with dependencies and the rosapi `TypeDef[]` of
//! every mapped type, snapshotted.

use streamwire::msgs::{
    CompressedImage, CompressedPointCloud, Detections, Image, LogRecord, OccupancyGrid, Odometry,
    PointCloud, Transforms, Twist,
};
use streamwire_ros2::RosMessage;
use streamwire_ros2::schema::RosSchema;

fn schemas() -> Vec<RosSchema> {
    [
        Image::ros_schema(),
        CompressedImage::ros_schema(),
        PointCloud::ros_schema(),
        CompressedPointCloud::ros_schema(),
        Odometry::ros_schema(),
        Twist::ros_schema(),
        OccupancyGrid::ros_schema(),
        Detections::ros_schema(),
        Transforms::ros_schema(),
        LogRecord::ros_schema(),
    ]
    .into_iter()
    .map(|schema| schema.expect("shipped definitions resolve"))
    .collect()
}

#[test]
fn full_texts_with_dependencies() {
    for schema in schemas() {
        let name = schema.name().replace('/', "_");
        insta::assert_snapshot!(
            format!("full_text_{name}"),
            format!(
                "{}\n{}\n\n{}",
                schema.name(),
                schema.rihs01(),
                schema.full_text()
            )
        );
    }
}

#[test]
fn rosapi_type_defs() {
    let defs = OccupancyGrid::ros_schema().unwrap().type_defs();
    insta::assert_snapshot!(serde_json::to_string_pretty(&defs).unwrap());
    let log = LogRecord::ros_schema().unwrap().type_defs();
    assert_eq!(
        log[0].constnames,
        ["DEBUG", "INFO", "WARN", "ERROR", "FATAL"]
    );
    assert_eq!(log[0].constvalues, ["10", "20", "30", "40", "50"]);
}
