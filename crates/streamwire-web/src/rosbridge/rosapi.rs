//! The rosapi services the relay answers, as rosbridge_suite's ROS 2 `rosapi` node names
//! them (`/rosapi/<name>`, types `rosapi_msgs/srv/<Name>`) and shapes their responses.
//!
//! The nodes are the run's module instances (`/camera`, the relay's own `/web`), with the
//! topics the plan says they publish and subscribe (see [`run_graph`](super::run_graph)).
//! The parameters are their resolved settings, read-only: the relay's own with the token
//! left out, the others without secrets or file paths. `set_param` is refused with a
//! clear message.

use serde_json::{Value, json};
use streamwire_ros2::schema::RosSchema;

use streamwire_core::RunNode;

use crate::rosbridge::run_graph::{RunNodes, node_name};
use crate::rosbridge::topics::{Topic, short_type};
use crate::typedefs;

/// The services answered, and their types.
pub(crate) const SERVICES: &[(&str, &str)] = &[
    ("topics", "rosapi_msgs/srv/Topics"),
    ("topics_and_raw_types", "rosapi_msgs/srv/TopicsAndRawTypes"),
    ("topic_type", "rosapi_msgs/srv/TopicType"),
    ("topics_for_type", "rosapi_msgs/srv/TopicsForType"),
    ("nodes", "rosapi_msgs/srv/Nodes"),
    ("node_details", "rosapi_msgs/srv/NodeDetails"),
    ("action_servers", "rosapi_msgs/srv/GetActionServers"),
    ("publishers", "rosapi_msgs/srv/Publishers"),
    ("subscribers", "rosapi_msgs/srv/Subscribers"),
    ("services", "rosapi_msgs/srv/Services"),
    ("services_for_type", "rosapi_msgs/srv/ServicesForType"),
    ("service_type", "rosapi_msgs/srv/ServiceType"),
    (
        "service_request_details",
        "rosapi_msgs/srv/ServiceRequestDetails",
    ),
    ("message_details", "rosapi_msgs/srv/MessageDetails"),
    ("get_time", "rosapi_msgs/srv/GetTime"),
    ("get_param_names", "rosapi_msgs/srv/GetParamNames"),
    ("get_param", "rosapi_msgs/srv/GetParam"),
    ("set_param", "rosapi_msgs/srv/SetParam"),
];

/// The request fields of each service above (every one a `string`), as rosapi_msgs
/// defines them: `service_request_details` answers from this.
fn request_fields(service: &str) -> &'static [&'static str] {
    match service {
        "topic_type" | "publishers" | "subscribers" => &["topic"],
        "topics_for_type" | "message_details" | "services_for_type" | "service_request_details" => {
            &["type"]
        }
        "node_details" => &["node"],
        "service_type" => &["service"],
        "get_param" => &["name", "default"],
        "set_param" => &["name", "value"],
        _ => &[],
    }
}

/// The service (by name) whose type is `asked`, in ROS 2 (`rosapi_msgs/srv/Nodes`) or
/// ROS 1 spelling (`rosapi/Nodes`, as roslib names them).
fn service_of_type(asked: &str) -> Option<&'static str> {
    let (package, name) = asked.split_once('/')?;
    let name = name.strip_prefix("srv/").unwrap_or(name);
    if !matches!(package, "rosapi_msgs" | "rosapi") {
        return None;
    }
    SERVICES
        .iter()
        .find(|(_, t)| t.strip_prefix("rosapi_msgs/srv/") == Some(name))
        .map(|(n, _)| *n)
}

/// rosapi's `service_request_details` of service type `asked`: the request as a TypeDef
/// (`rosapi_msgs/<Name>_Request`, as rosapi names it).
fn service_request_details(asked: &str) -> Result<Value, String> {
    let service = service_of_type(asked).ok_or_else(|| {
        format!("no service of type `{asked}` here (the relay serves rosapi only)")
    })?;
    let (_, ros_type) = SERVICES
        .iter()
        .find(|(n, _)| *n == service)
        .ok_or_else(|| format!("no service of type `{asked}`"))?;
    let name = ros_type.trim_start_matches("rosapi_msgs/srv/");
    let fields = request_fields(service);
    Ok(json!({"typedefs": [{
        "type": format!("rosapi_msgs/{name}_Request"),
        "fieldnames": fields,
        "fieldtypes": vec!["string"; fields.len()],
        "fieldarraylen": vec![-1; fields.len()],
        "examples": vec![""; fields.len()],
        "constnames": [],
        "constvalues": [],
    }]}))
}

/// What the services are answered from.
pub(crate) struct RunView<'a> {
    /// The topics served.
    pub(crate) topics: &'a [std::sync::Arc<Topic>],
    /// The relay's node name (`/web`).
    pub(crate) node: String,
    /// The topic browsers publish on (`/cmd_vel`).
    pub(crate) cmd_vel: String,
    /// The run clock now, nanoseconds since the epoch.
    pub(crate) now_nanos: u64,
    /// The relay's parameters: (name, value), values as JSON.
    pub(crate) params: Vec<(String, Value)>,
    /// The run's instances, from its plan (empty when the runtime does not say).
    pub(crate) graph: &'a [RunNode],
}

impl RunView<'_> {
    fn nodes(&self) -> RunNodes<'_> {
        RunNodes {
            graph: self.graph,
            relay: &self.node,
            topics: self.topics,
        }
    }

    /// Every parameter as (`/<node>:<setting>`, value as JSON text): the relay's first.
    fn parameters(&self) -> Vec<(String, String)> {
        let relay = node_name(&self.node);
        let own = self
            .params
            .iter()
            .map(|(n, v)| (format!("{relay}:{n}"), v.to_string()));
        own.chain(self.nodes().parameters()).collect()
    }

    /// The value of parameter `asked` (`/<node>:<setting>`, or a bare setting of the
    /// relay's, as earlier clients ask).
    fn parameter(&self, asked: &str) -> Option<String> {
        let full = match asked.split_once(':') {
            Some((node, setting)) => format!("{}:{setting}", node_name(node)),
            None => format!("{}:{asked}", node_name(&self.node)),
        };
        let mut all = self.parameters().into_iter();
        all.find(|(n, _)| *n == full).map(|(_, v)| v)
    }
}

/// The service's name without its `/rosapi/` prefix, if it is one of rosapi's.
pub(crate) fn service_name(service: &str) -> Option<&str> {
    service
        .trim_start_matches('/')
        .strip_prefix("rosapi/")
        .filter(|name| SERVICES.iter().any(|(n, _)| n == name))
}

fn string_arg<'v>(args: &'v Value, key: &str) -> Result<&'v str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("needs the argument `{key}` (a string)"))
}

/// The response `values` of rosapi service `name` called with `args`, or why it is
/// refused.
pub(crate) fn answer(view: &RunView<'_>, name: &str, args: &Value) -> Result<Value, String> {
    let topic_names =
        || -> Vec<String> { view.topics.iter().map(|t| format!("/{}", t.name)).collect() };
    let types = || -> Vec<&str> { view.topics.iter().map(|t| t.ros_type).collect() };
    let find_topic = |asked: &str| {
        let asked = asked.trim_start_matches('/');
        view.topics.iter().find(|t| t.name == asked)
    };
    let is_cmd_vel =
        |asked: &str| asked.trim_start_matches('/') == view.cmd_vel.trim_start_matches('/');
    Ok(match name {
        "topics" => json!({"topics": topic_names(), "types": types()}),
        "topics_and_raw_types" => {
            let typedefs: Vec<String> = types().iter().map(|t| typedefs::full_text(t)).collect();
            json!({"topics": topic_names(), "types": types(), "typedefs_full_text": typedefs})
        }
        "topic_type" => {
            let topic = string_arg(args, "topic")?;
            let ros_type = if is_cmd_vel(topic) {
                "geometry_msgs/msg/Twist"
            } else {
                // rosapi answers an unknown topic with an empty type.
                find_topic(topic).map_or("", |t| t.ros_type)
            };
            json!({"type": ros_type})
        }
        "topics_for_type" => {
            let asked = string_arg(args, "type")?;
            let topics: Vec<String> = view
                .topics
                .iter()
                .filter(|t| t.has_type(asked))
                .map(|t| format!("/{}", t.name))
                .collect();
            json!({"topics": topics})
        }
        "nodes" => json!({"nodes": view.nodes().names()}),
        "node_details" => node_details(view, string_arg(args, "node")?),
        "publishers" => {
            let topic = string_arg(args, "topic")?;
            json!({"publishers": view.nodes().nodes_on(topic, true)})
        }
        "subscribers" => {
            let topic = string_arg(args, "topic")?;
            json!({"subscribers": view.nodes().nodes_on(topic, false)})
        }
        "services" => {
            let services: Vec<String> = SERVICES
                .iter()
                .map(|(n, _)| format!("/rosapi/{n}"))
                .collect();
            json!({"services": services})
        }
        "services_for_type" => {
            let asked = string_arg(args, "type")?;
            let services: Vec<String> = service_of_type(asked)
                .map(|n| format!("/rosapi/{n}"))
                .into_iter()
                .collect();
            json!({"services": services})
        }
        "service_request_details" => service_request_details(string_arg(args, "type")?)?,
        // The run has no ROS actions.
        "action_servers" => json!({"action_servers": []}),
        "service_type" => {
            let service = string_arg(args, "service")?;
            let ros_type = service_name(service)
                .and_then(|n| SERVICES.iter().find(|(s, _)| *s == n))
                .map_or("", |(_, t)| *t);
            json!({"type": ros_type})
        }
        "message_details" => {
            let asked = string_arg(args, "type")?;
            let schema = RosSchema::standard(&ros2_spelling(asked))
                .map_err(|e| format!("no definition of `{asked}`: {e}"))?;
            json!({"typedefs": schema.type_defs()})
        }
        "get_time" => json!({"time": {
            "sec": view.now_nanos / 1_000_000_000,
            "nanosec": view.now_nanos % 1_000_000_000,
        }}),
        "get_param_names" => {
            let names: Vec<String> = view.parameters().into_iter().map(|(n, _)| n).collect();
            json!({"names": names})
        }
        "get_param" => {
            let asked = string_arg(args, "name")?;
            match view.parameter(asked) {
                // rosapi's `value` is the parameter as JSON text.
                Some(value) => json!({"value": value}),
                None => match args.get("default").and_then(Value::as_str) {
                    Some(default) if !default.is_empty() => json!({"value": default}),
                    _ => return Err(format!("no parameter `{asked}`")),
                },
            }
        }
        "set_param" => {
            return Err(
                "parameters are read-only here: the run's configuration is set before it starts (blueprint, configuration file, -o)"
                    .to_owned(),
            );
        }
        other => return Err(format!("service `/rosapi/{other}` is not served")),
    })
}

/// rosapi's `node_details` of `node`: its topics, and the relay's services for the relay;
/// empty lists for a node that does not exist, as rosapi answers.
fn node_details(view: &RunView<'_>, node: &str) -> Value {
    let nodes = view.nodes();
    let services: Vec<String> = if node_name(node) == node_name(&view.node) {
        SERVICES
            .iter()
            .map(|(n, _)| format!("/rosapi/{n}"))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "subscribing": nodes.subscribing(node).unwrap_or_default(), // infallible: an unknown node subscribes nothing
        "publishing": nodes.publishing(node).unwrap_or_default(), // infallible: an unknown node publishes nothing
        "services": services,
    })
}

/// `asked` in ROS 2 spelling: `sensor_msgs/Image` becomes `sensor_msgs/msg/Image`.
fn ros2_spelling(asked: &str) -> String {
    let short = short_type(asked);
    match short.split_once('/') {
        Some((package, name)) => format!("{package}/msg/{name}"),
        None => short.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_msgs::LogLevel;

    fn view<'a>(topics: &'a [std::sync::Arc<Topic>], graph: &'a [RunNode]) -> RunView<'a> {
        RunView {
            topics,
            node: "/web".into(),
            cmd_vel: "cmd_vel".into(),
            now_nanos: 1_700_000_000_123_456_789,
            params: vec![("port".into(), json!(9090))],
            graph,
        }
    }

    fn node(
        name: &str,
        publishes: &[&str],
        subscribes: &[&str],
        settings: &[(&str, &str)],
    ) -> RunNode {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        RunNode {
            name: name.to_owned(),
            publishes: owned(publishes),
            subscribes: owned(subscribes),
            settings: settings
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// A robot base publishing odometry and the map from `cmd_vel`, a replay reading a
    /// folder, and the relay.
    fn graph() -> Vec<RunNode> {
        vec![
            node(
                "base",
                &["odom", "map"],
                &["cmd_vel"],
                &[("rate_hz", "50.0"), ("frame_id", "\"odom\"")],
            ),
            node(
                "replay",
                &["recorded"],
                &[],
                &[
                    ("folder", "\"data/run1\""),
                    ("source", "\"/srv/runs/a\""),
                    ("loop_count", "2"),
                ],
            ),
            node(
                "web",
                &["cmd_vel"],
                &["odom", "map"],
                &[("token", "\"secret\"")],
            ),
        ]
    }

    #[test]
    fn every_service_answers_in_rosapis_shape() {
        let topics = crate::rosbridge::topics::topics_of(
            &[
                ("odom".to_owned(), "streamwire/Odometry"),
                ("map".to_owned(), "streamwire/OccupancyGrid"),
                ("cmd_vel".to_owned(), "streamwire/Twist"),
            ],
            None,
            LogLevel::Warn,
        );
        let graph = graph();
        let view = view(&topics, &graph);
        let calls = [
            ("topics", json!({})),
            ("topic_type", json!({"topic": "/odom"})),
            ("topic_type", json!({"topic": "/cmd_vel"})),
            ("topics_for_type", json!({"type": "nav_msgs/Odometry"})),
            ("nodes", json!({})),
            ("node_details", json!({"node": "/web"})),
            ("node_details", json!({"node": "/base"})),
            ("node_details", json!({"node": "/nobody"})),
            ("publishers", json!({"topic": "/map"})),
            ("publishers", json!({"topic": "/tf"})),
            ("subscribers", json!({"topic": "/cmd_vel"})),
            ("subscribers", json!({"topic": "/odom"})),
            ("service_type", json!({"service": "/rosapi/nodes"})),
            ("action_servers", json!({})),
            (
                "services_for_type",
                json!({"type": "rosapi_msgs/srv/GetParam"}),
            ),
            ("services_for_type", json!({"type": "rosapi/Topics"})),
            ("services_for_type", json!({"type": "std_srvs/srv/Empty"})),
            (
                "service_request_details",
                json!({"type": "rosapi/GetParam"}),
            ),
            (
                "service_request_details",
                json!({"type": "rosapi_msgs/srv/Nodes"}),
            ),
            (
                "service_request_details",
                json!({"type": "std_srvs/srv/Empty"}),
            ),
            ("get_time", json!({})),
            ("get_param_names", json!({})),
            ("get_param", json!({"name": "/web:port"})),
            ("get_param", json!({"name": "port"})),
            ("get_param", json!({"name": "/base:rate_hz"})),
            ("get_param", json!({"name": "/replay:folder"})),
            ("get_param", json!({"name": "/replay:source"})),
            ("get_param", json!({"name": "/web:token"})),
            ("get_param", json!({"name": "nothing"})),
            ("set_param", json!({"name": "port", "value": "1"})),
            ("topic_type", json!({})),
        ];
        let mut text = Vec::new();
        for (name, args) in calls {
            text.push(format!("{name} {args}"));
            match answer(&view, name, &args) {
                Ok(values) => text.push(format!("  {values}")),
                Err(msg) => text.push(format!("  refused: {msg}")),
            }
        }
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn message_details_are_rosapis_typedefs() {
        let view = view(&[], &[]);
        let values = answer(
            &view,
            "message_details",
            &json!({"type": "geometry_msgs/Twist"}),
        )
        .expect("known");
        let typedefs = values["typedefs"].as_array().expect("a list");
        assert_eq!(typedefs[0]["type"], "geometry_msgs/Twist");
        assert_eq!(typedefs[0]["fieldnames"], json!(["linear", "angular"]));
        assert!(
            typedefs
                .iter()
                .any(|t| t["type"] == "geometry_msgs/Vector3")
        );
        assert!(answer(&view, "message_details", &json!({"type": "acme/Beep"})).is_err());
    }
}
