//! The ROS 2 definitions of the messages the relay writes, as `/rosapi/topics_and_raw_types`
//! gives them (`typedefs_full_text`): the type's own fields, then each type it uses after
//! a line of 80 `=` and `MSG: <type>`, the form ROS tools and roslibjs clients parse. The
//! texts are streamwire-ros2's, the same that MCAP files and CDR peers get.

use streamwire_ros2::schema::RosSchema;

/// The full text of `ros_type`'s definition; empty for a type with no ROS definition (a
/// user's message, written as serde writes it).
pub(crate) fn full_text(ros_type: &str) -> String {
    RosSchema::standard(ros_type)
        .map(|schema| schema.full_text())
        // infallible: only a type with no ROS 2 definition fails (a user's message): it has no full text
        .unwrap_or_default()
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
