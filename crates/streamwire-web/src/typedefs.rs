//! The ROS 2 definitions of the messages the relay writes, as `/rosapi/topics_and_raw_types`
//! gives them (`typedefs_full_text`): the type's own fields, then each type it uses after
//! a line of 80 `=` and `MSG: <type>`, the form ROS tools and roslibjs clients parse.

const TIME: &str = "int32 sec\nuint32 nanosec\n";
const HEADER: &str = "builtin_interfaces/Time stamp\nstring frame_id\n";
const VECTOR3: &str = "float64 x\nfloat64 y\nfloat64 z\n";
const POINT: &str = VECTOR3;
const QUATERNION: &str = "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
const POSE: &str = "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n";
const POSE_WITH_COVARIANCE: &str = "geometry_msgs/Pose pose\nfloat64[36] covariance\n";
const TWIST: &str = "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n";
const TWIST_WITH_COVARIANCE: &str = "geometry_msgs/Twist twist\nfloat64[36] covariance\n";
const COMPRESSED_IMAGE: &str = "std_msgs/Header header\nstring format\nuint8[] data\n";
const IMAGE: &str = "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n";
const POINT_CLOUD2: &str = "std_msgs/Header header\nuint32 height\nuint32 width\nsensor_msgs/PointField[] fields\nbool is_bigendian\nuint32 point_step\nuint32 row_step\nuint8[] data\nbool is_dense\n";
const POINT_FIELD: &str = "uint8 INT8=1\nuint8 UINT8=2\nuint8 INT16=3\nuint8 UINT16=4\nuint8 INT32=5\nuint8 UINT32=6\nuint8 FLOAT32=7\nuint8 FLOAT64=8\nstring name\nuint32 offset\nuint8 datatype\nuint32 count\n";
const ODOMETRY: &str = "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist\n";

/// The full text of `ros_type`'s definition; empty for a type with no ROS definition (a
/// user's message, written as serde writes it).
pub(crate) fn full_text(ros_type: &str) -> String {
    let (own, used): (&str, &[(&str, &str)]) = match ros_type {
        "sensor_msgs/CompressedImage" => (
            COMPRESSED_IMAGE,
            &[
                ("std_msgs/Header", HEADER),
                ("builtin_interfaces/Time", TIME),
            ],
        ),
        "sensor_msgs/Image" => (
            IMAGE,
            &[
                ("std_msgs/Header", HEADER),
                ("builtin_interfaces/Time", TIME),
            ],
        ),
        "sensor_msgs/PointCloud2" => (
            POINT_CLOUD2,
            &[
                ("std_msgs/Header", HEADER),
                ("builtin_interfaces/Time", TIME),
                ("sensor_msgs/PointField", POINT_FIELD),
            ],
        ),
        "nav_msgs/Odometry" => (
            ODOMETRY,
            &[
                ("std_msgs/Header", HEADER),
                ("builtin_interfaces/Time", TIME),
                ("geometry_msgs/PoseWithCovariance", POSE_WITH_COVARIANCE),
                ("geometry_msgs/Pose", POSE),
                ("geometry_msgs/Point", POINT),
                ("geometry_msgs/Quaternion", QUATERNION),
                ("geometry_msgs/TwistWithCovariance", TWIST_WITH_COVARIANCE),
                ("geometry_msgs/Twist", TWIST),
                ("geometry_msgs/Vector3", VECTOR3),
            ],
        ),
        "geometry_msgs/Twist" => (TWIST, &[("geometry_msgs/Vector3", VECTOR3)]),
        _ => return String::new(),
    };
    let mut text = own.to_owned();
    for (name, definition) in used {
        text.push_str(&"=".repeat(80));
        text.push_str("\nMSG: ");
        text.push_str(name);
        text.push('\n');
        text.push_str(definition);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_clients_are_given() {
        let text: Vec<String> = [
            "sensor_msgs/Image",
            "sensor_msgs/PointCloud2",
            "nav_msgs/Odometry",
            "acme/Beep",
        ]
        .iter()
        .map(|t| format!("--- {t}\n{}", full_text(t)))
        .collect();
        insta::assert_snapshot!(text.join("\n"));
    }
}
