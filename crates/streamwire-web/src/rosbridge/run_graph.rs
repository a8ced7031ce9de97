//! The run's module instances as ROS nodes, for rosapi's `nodes`, `node_details`,
//! `publishers`, `subscribers`, `get_param_names` and `get_param`.
//!
//! Topics are named as `/rosapi/topics` names them: a node publishes (subscribes) the
//! served topics of the streams its outputs (inputs) carry; streams the relay does not
//! serve are left out, so the answers agree with the topic list. The relay's own node
//! publishes what it makes itself (`/tf`, `/rosout`) besides its outputs, and subscribes
//! every other topic it serves (it taps them).

use serde_json::Value;
use streamwire_core::RunNode;

use crate::rosbridge::topics::{Source, Topic};

/// Setting names never shown, whatever their value: secrets.
const SECRET_WORDS: &[&str] = &["token", "password", "secret"];
/// Setting names whose values are files or folders.
const PATH_WORDS: &[&str] = &["path", "dir", "folder", "file"];

/// The run's nodes and the relay's own node.
pub(crate) struct RunNodes<'a> {
    /// The run's instances (the relay's among them when the plan is known).
    pub(crate) graph: &'a [RunNode],
    /// The relay's node name (`/web`).
    pub(crate) relay: &'a str,
    /// The topics served.
    pub(crate) topics: &'a [std::sync::Arc<Topic>],
}

/// `name` as a ROS node name: `/` and the instance's full name.
pub(crate) fn node_name(name: &str) -> String {
    format!("/{}", name.trim_start_matches('/'))
}

fn same(a: &str, b: &str) -> bool {
    a.trim_start_matches('/') == b.trim_start_matches('/')
}

/// Made by the relay itself from other streams, not published by an instance.
fn relay_made(topic: &Topic) -> bool {
    matches!(topic.source, Source::TfFromOdometry | Source::Rosout(_))
}

impl RunNodes<'_> {
    /// Every node name: the run's instances in plan order, the relay's included.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.graph.iter().map(|n| node_name(&n.name)).collect();
        if !names.iter().any(|n| same(n, self.relay)) {
            names.push(node_name(self.relay));
        }
        names
    }

    fn node(&self, name: &str) -> Option<&RunNode> {
        self.graph.iter().find(|n| same(&n.name, name))
    }

    fn is_relay(&self, name: &str) -> bool {
        same(name, self.relay)
    }

    /// The served topics carrying `streams`, relay-made ones left out.
    fn topics_of(&self, streams: &[String]) -> Vec<String> {
        self.topics
            .iter()
            .filter(|t| !relay_made(t))
            .filter(|t| t.stream.as_ref().is_some_and(|s| streams.contains(s)))
            .map(|t| format!("/{}", t.name))
            .collect()
    }

    /// The topics node `name` publishes, or `None` for an unknown node.
    pub(crate) fn publishing(&self, name: &str) -> Option<Vec<String>> {
        let mut topics = self
            .node(name)
            .map(|n| self.topics_of(&n.publishes))
            .or_else(|| self.is_relay(name).then(Vec::new))?;
        if self.is_relay(name) {
            let made = self.topics.iter().filter(|t| relay_made(t));
            topics.extend(made.map(|t| format!("/{}", t.name)));
        }
        Some(topics)
    }

    /// The topics node `name` subscribes, or `None` for an unknown node.
    pub(crate) fn subscribing(&self, name: &str) -> Option<Vec<String>> {
        if self.is_relay(name) {
            let published = self.publishing(name).unwrap_or_default(); // infallible: the relay is known
            let tapped = self.topics.iter().map(|t| format!("/{}", t.name));
            return Some(tapped.filter(|t| !published.contains(t)).collect());
        }
        self.node(name).map(|n| self.topics_of(&n.subscribes))
    }

    /// The nodes publishing (`publishing == true`) or subscribing `topic`.
    pub(crate) fn nodes_on(&self, topic: &str, publishing: bool) -> Vec<String> {
        let topic = node_name(topic);
        self.names()
            .into_iter()
            .filter(|node| {
                let topics = if publishing {
                    self.publishing(node)
                } else {
                    self.subscribing(node)
                };
                topics.is_some_and(|t| t.contains(&topic))
            })
            .collect()
    }

    /// The instances' settings as rosapi parameters (`/<node>:<setting>`, value as JSON
    /// text), the relay's own left out (it answers with its own list): secrets and file
    /// paths stripped, a setting that is nothing else left out.
    pub(crate) fn parameters(&self) -> Vec<(String, String)> {
        self.graph
            .iter()
            .filter(|n| !self.is_relay(&n.name))
            .flat_map(|n| {
                n.settings.iter().filter_map(|(setting, value)| {
                    let shown = shown(setting, value)?;
                    Some((format!("{}:{setting}", node_name(&n.name)), shown))
                })
            })
            .collect()
    }
}

/// Setting `name` with `value` (JSON text) as it may be shown, or `None`: no secrets, no
/// files or folders (the run's files are not a browser's business).
fn shown(name: &str, value: &str) -> Option<String> {
    // A value that is not JSON is not shown: what it holds cannot be checked.
    let value = serde_json::from_str::<Value>(value).ok()?;
    strip(name, value).map(|v| v.to_string())
}

/// `value` of setting or field `name` without what reads as a secret or a file path: a
/// name saying so, or a string with a separator or a home or relative start. A name
/// with a `/` (a namespaced stream) goes too: better one setting less than a path shown.
fn strip(name: &str, value: Value) -> Option<Value> {
    let name = name.to_ascii_lowercase();
    let named_as = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if named_as(SECRET_WORDS) || named_as(PATH_WORDS) {
        return None;
    }
    match value {
        Value::String(s) if is_path(&s) => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.into_iter().filter_map(|v| strip("", v)).collect();
            Some(Value::Array(kept))
        }
        Value::Object(fields) => {
            let kept = fields
                .into_iter()
                .filter_map(|(k, v)| Some((k.clone(), strip(&k, v)?)));
            Some(Value::Object(kept.collect()))
        }
        other => Some(other),
    }
}

fn is_path(text: &str) -> bool {
    text.contains('/') || text.contains('\\') || text.starts_with('~') || text.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_secrets_are_not_shown() {
        let shown = |name, value| shown(name, value);
        assert_eq!(shown("fps", "15").as_deref(), Some("15"));
        assert_eq!(
            shown("frame_id", "\"camera\"").as_deref(),
            Some("\"camera\"")
        );
        assert_eq!(shown("folder", "\"data\""), None);
        assert_eq!(shown("source", "\"/home/me/run\""), None);
        assert_eq!(shown("source", "\"recordings\\\\a\""), None);
        assert_eq!(shown("source", "\"./run\""), None);
        assert_eq!(shown("auth_token", "\"abc\""), None);
        assert_eq!(shown("broken", "not json"), None);
        assert_eq!(
            shown("sources", "[\"a\", \"~/b\"]").as_deref(),
            Some("[\"a\"]")
        );
        assert_eq!(
            shown(
                "replay",
                "{\"dir\": \"x\", \"rate\": 1.0, \"looping\": true}"
            )
            .as_deref(),
            Some("{\"looping\":true,\"rate\":1.0}")
        );
    }
}
