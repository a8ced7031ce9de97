//! Liveliness tokens: how a ROS 2 node, publisher or subscription tells the graph it
//! exists, both ways.
//!
//! Source: ros2/rmw_zenoh (Jazzy) `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp`
//! (`Entity::Entity`, `Entity::make`) and `docs/design.md` ("Graph Cache"):
//! `@ros2_lv/<domain>/<zid>/<nid>/<eid>/<kind>/<enclave>/<namespace>/<node>` and, for an
//! endpoint, `/<topic>/<DDS type>/<type hash>/<qos>` after it; every name mangled
//! ([`mangle`]). A node's token repeats its node id as its entity id.

use crate::ContractError;
use crate::keys::{check_hash, check_topic, dds_type_name, demangle, mangle, ros_type_name};
use crate::qos::RosQos;

/// The admin space every token is under (`ADMIN_SPACE`); `*` and `**` never match it.
pub const ADMIN_SPACE: &str = "@ros2_lv";

/// What an entity is (`NN`, `MP`, `MS`, `SS`, `SC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntityKind {
    /// A node, `NN`.
    Node,
    /// A message publisher, `MP`.
    Publisher,
    /// A message subscription, `MS`.
    Subscription,
    /// A service server, `SS`.
    Service,
    /// A service client, `SC`.
    Client,
}

impl EntityKind {
    /// The token's chunk for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Node => "NN",
            EntityKind::Publisher => "MP",
            EntityKind::Subscription => "MS",
            EntityKind::Service => "SS",
            EntityKind::Client => "SC",
        }
    }

    fn parse(chunk: &str) -> Option<EntityKind> {
        [
            EntityKind::Node,
            EntityKind::Publisher,
            EntityKind::Subscription,
            EntityKind::Service,
            EntityKind::Client,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == chunk)
    }
}

/// The node an entity belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// `ROS_DOMAIN_ID`.
    pub domain: u32,
    /// The zenoh session's id as text (`zenoh::Session::zid`'s `Display`).
    pub zid: String,
    /// The node's id within its session.
    pub node_id: u64,
    /// The SROS2 enclave (`/` or empty for none).
    pub enclave: String,
    /// The namespace (`/` or empty for none; `/robot1` otherwise).
    pub namespace: String,
    /// The node's name.
    pub name: String,
}

/// The topic of a publisher or a subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicInfo {
    /// The fully qualified topic name (`/chatter`).
    pub name: String,
    /// The ROS 2 type (`std_msgs/msg/String`).
    pub ros_type: String,
    /// The type's RIHS01 hash.
    pub type_hash: String,
    /// The endpoint's QoS.
    pub qos: RosQos,
}

/// A node or an endpoint of the ROS 2 graph, as its liveliness token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entity {
    /// The node (itself, for a node).
    pub node: NodeInfo,
    /// The entity's id within the session (a node's is its node id).
    pub entity_id: u64,
    /// What it is.
    pub kind: EntityKind,
    /// Its topic; `None` exactly for a node.
    pub topic: Option<TopicInfo>,
}

impl Entity {
    /// A node's entity.
    pub fn node(node: NodeInfo) -> Entity {
        Entity {
            entity_id: node.node_id,
            node,
            kind: EntityKind::Node,
            topic: None,
        }
    }

    /// The liveliness key expression (`Entity::Entity`). Refuses an entity whose names
    /// would not make a valid token: an empty node name or zid, a topic name that is not
    /// fully qualified, a kind and topic that disagree, a malformed type or hash.
    ///
    /// ```
    /// use streamwire_rmw::liveliness::{Entity, NodeInfo};
    /// // rmw_zenoh docs/design.md: the `listener` node.
    /// let node = NodeInfo {
    ///     domain: 2,
    ///     zid: "aac3178e146ba6f1fc6e6a4085e77f21".into(),
    ///     node_id: 0,
    ///     enclave: "/".into(),
    ///     namespace: "/".into(),
    ///     name: "listener".into(),
    /// };
    /// assert_eq!(
    ///     Entity::node(node).to_keyexpr()?,
    ///     "@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/0/NN/%/%/listener"
    /// );
    /// # Ok::<(), streamwire_rmw::ContractError>(())
    /// ```
    pub fn to_keyexpr(&self) -> Result<String, ContractError> {
        let node = &self.node;
        let plain =
            |chunk: &str| !chunk.is_empty() && !chunk.contains(['/', '*', '$', '?', '#', '%']);
        if !plain(&node.zid) || !plain(&node.name) {
            return Err(ContractError::Token(format!(
                "zid {:?} or node name {:?} is empty or holds a key expression's special character",
                node.zid, node.name
            )));
        }
        let mut key = format!(
            "{ADMIN_SPACE}/{}/{}/{}/{}/{}/{}/{}/{}",
            node.domain,
            node.zid,
            node.node_id,
            self.entity_id,
            self.kind.as_str(),
            mangle(&node.enclave),
            mangle(&node.namespace),
            node.name,
        );
        match (&self.topic, self.kind) {
            (None, EntityKind::Node) => {}
            (Some(topic), kind) if kind != EntityKind::Node => {
                check_topic(&topic.name)?;
                check_hash(&topic.type_hash)?;
                key.push_str(&format!(
                    "/{}/{}/{}/{}",
                    mangle(&topic.name),
                    dds_type_name(&topic.ros_type)?,
                    topic.type_hash,
                    topic.qos.to_keyexpr()
                ));
            }
            _ => {
                return Err(ContractError::Token(
                    "a node has no topic and an endpoint has one".to_owned(),
                ));
            }
        }
        Ok(key)
    }

    /// An entity read from a liveliness key expression (`Entity::make`): at least nine
    /// chunks, none empty, under `@ros2_lv`, a known kind, and for an endpoint all
    /// thirteen with a QoS text that parses.
    pub fn parse(keyexpr: &str) -> Result<Entity, ContractError> {
        let refuse = |why: &str| ContractError::Token(format!("{why}: {keyexpr}"));
        let parts: Vec<&str> = keyexpr.split('/').collect();
        if parts.len() < 9 || parts.iter().any(|p| p.is_empty()) {
            return Err(refuse("fewer than nine chunks, or an empty one"));
        }
        if parts[0] != ADMIN_SPACE {
            return Err(refuse("not under @ros2_lv"));
        }
        let number = |chunk: &str| chunk.parse::<u64>().map_err(|_| refuse("not a number"));
        let kind = EntityKind::parse(parts[5]).ok_or_else(|| refuse("an unknown entity kind"))?;
        let node = NodeInfo {
            domain: u32::try_from(number(parts[1])?).map_err(|_| refuse("domain out of range"))?,
            zid: parts[2].to_owned(),
            node_id: number(parts[3])?,
            enclave: demangle(parts[6]),
            namespace: demangle(parts[7]),
            name: demangle(parts[8]),
        };
        let entity_id = number(parts[4])?;
        let topic = match (kind, parts.len()) {
            (EntityKind::Node, 9) => None,
            (EntityKind::Node, _) => return Err(refuse("a node token with a topic")),
            (_, 13) => Some(TopicInfo {
                name: demangle(parts[9]),
                ros_type: ros_type_name(&demangle(parts[10]))?,
                type_hash: demangle(parts[11]),
                qos: RosQos::parse(parts[12])?,
            }),
            _ => return Err(refuse("an endpoint token without its four topic chunks")),
        };
        Ok(Entity {
            node,
            entity_id,
            kind,
            topic,
        })
    }
}
