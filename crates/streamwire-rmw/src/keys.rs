//! Names as rmw_zenoh writes them: the DDS type name, the data key of a topic, and the
//! mangling of names inside liveliness tokens.
//!
//! Source: ros2/rmw_zenoh (Jazzy) `docs/design.md`, "Topic and Service name mapping to
//! Zenoh key expressions", and `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp`
//! (`TopicInfo::TopicInfo`, `mangle_name`, `demangle_name`).

use crate::ContractError;

/// What stands for `/` inside a liveliness token's chunk (`liveliness_utils.cpp`,
/// `SLASH_REPLACEMENT`).
pub const SLASH_REPLACEMENT: char = '%';

/// The DDS type name of a ROS 2 type, as rmw_zenoh puts it in keys and tokens:
/// `sensor_msgs/msg/Image` is `sensor_msgs::msg::dds_::Image_`.
///
/// ```
/// use streamwire_rmw::dds_type_name;
/// assert_eq!(dds_type_name("std_msgs/msg/String")?, "std_msgs::msg::dds_::String_");
/// assert!(dds_type_name("String").is_err());
/// # Ok::<(), streamwire_rmw::ContractError>(())
/// ```
pub fn dds_type_name(ros_type: &str) -> Result<String, ContractError> {
    let parts: Vec<&str> = ros_type.split('/').collect();
    let [package, kind, name] = parts.as_slice() else {
        return Err(ContractError::RosType(ros_type.to_owned()));
    };
    let plain = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !(plain(package) && plain(kind) && plain(name)) {
        return Err(ContractError::RosType(ros_type.to_owned()));
    }
    Ok(format!("{package}::{kind}::dds_::{name}_"))
}

/// The ROS 2 type of a DDS type name, the inverse of [`dds_type_name`]:
/// `std_msgs::msg::dds_::String_` is `std_msgs/msg/String`.
pub fn ros_type_name(dds_type: &str) -> Result<String, ContractError> {
    let refuse = || ContractError::RosType(dds_type.to_owned());
    let parts: Vec<&str> = dds_type.split("::").collect();
    let [package, kind, "dds_", name] = parts.as_slice() else {
        return Err(refuse());
    };
    let name = name.strip_suffix('_').ok_or_else(refuse)?;
    let ros_type = format!("{package}/{kind}/{name}");
    // Checks the parts the same way.
    dds_type_name(&ros_type).map_err(|_| refuse())?;
    Ok(ros_type)
}

/// The key a topic's data is put on: `<domain>/<topic without its leading slash>/<DDS
/// type>/<RIHS01 hash>` (`TopicInfo::TopicInfo` strips a leading and a trailing slash).
///
/// ```
/// // rmw_zenoh docs/design.md: the `chatter` topic with ROS_DOMAIN_ID=0.
/// let key = streamwire_rmw::topic_key(
///     0,
///     "/chatter",
///     "std_msgs/msg/String",
///     "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18",
/// )?;
/// assert_eq!(
///     key,
///     "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
/// );
/// # Ok::<(), streamwire_rmw::ContractError>(())
/// ```
pub fn topic_key(
    domain: u32,
    topic: &str,
    ros_type: &str,
    rihs01: &str,
) -> Result<String, ContractError> {
    check_topic(topic)?;
    check_hash(rihs01)?;
    let name = topic.trim_start_matches('/').trim_end_matches('/');
    Ok(format!(
        "{domain}/{name}/{}/{rihs01}",
        dds_type_name(ros_type)?
    ))
}

/// Refuses a topic name that is not a fully qualified ROS 2 name of plain chunks
/// (`/a/b_c`): a key expression's special characters (`*`, `$`, `?`, `#`, `%`) and empty
/// chunks would change what the key matches.
pub(crate) fn check_topic(topic: &str) -> Result<(), ContractError> {
    let refuse = || ContractError::TopicName(topic.to_owned());
    let rest = topic.strip_prefix('/').ok_or_else(refuse)?;
    let chunk_ok = |chunk: &str| {
        chunk
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chunk.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if rest.split('/').all(chunk_ok) {
        Ok(())
    } else {
        Err(refuse())
    }
}

/// Refuses what is not `RIHS01_` and 64 lowercase hex digits.
pub(crate) fn check_hash(rihs01: &str) -> Result<(), ContractError> {
    let hex = rihs01
        .strip_prefix("RIHS01_")
        .filter(|hex| hex.len() == 64 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
    match hex {
        Some(_) => Ok(()),
        None => Err(ContractError::TypeHash(rihs01.to_owned())),
    }
}

/// A name as a token chunk: every `/` as `%`; an empty name (no namespace, no enclave) is
/// `%` too, as a chunk cannot be empty (`liveliness_utils.cpp`, `mangle_name`; rcl gives
/// `/` for an empty namespace).
///
/// ```
/// use streamwire_rmw::mangle;
/// assert_eq!(mangle("/chatter"), "%chatter");
/// assert_eq!(mangle("/robot1/chatter"), "%robot1%chatter");
/// assert_eq!(mangle(""), "%");
/// assert_eq!(mangle("/"), "%");
/// ```
pub fn mangle(name: &str) -> String {
    if name.is_empty() {
        return SLASH_REPLACEMENT.to_string();
    }
    name.replace('/', "%")
}

/// A token chunk as a name: every `%` as `/` (`demangle_name`).
pub fn demangle(chunk: &str) -> String {
    chunk.replace(SLASH_REPLACEMENT, "/")
}
