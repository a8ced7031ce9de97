//! Names of instances and streams: the shared rules (`streamwire-names`) and namespace
//! resolution.

pub(crate) use streamwire_names::{did_you_mean, instance_name_problem, stream_name_problem};

/// `name` resolved in `namespace`: absolute names (`/tf`) lose their `/`; relative ones
/// are prefixed (`color_image` in `left` is `left/color_image`).
pub(crate) fn resolve(namespace: &str, name: &str) -> String {
    match name.strip_prefix('/') {
        Some(absolute) => absolute.to_owned(),
        None if namespace.is_empty() => name.to_owned(),
        None => format!("{namespace}/{name}"),
    }
}

/// `a/b` joined from a namespace and a name in it.
pub(crate) fn join(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_follows_ros_namespaces() {
        assert_eq!(resolve("", "color_image"), "color_image");
        assert_eq!(resolve("left", "color_image"), "left/color_image");
        assert_eq!(
            resolve("robot/left", "color_image"),
            "robot/left/color_image"
        );
        assert_eq!(resolve("left", "/tf"), "tf");
    }
}
