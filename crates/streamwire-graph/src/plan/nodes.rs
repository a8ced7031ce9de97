//! The nodes of a plan: instances with their resolved ports (stream, effective QoS and
//! where each QoS value came from), and the codec nodes the planner inserted. Apart from
//! the links that join them ([`super::links`]).

use std::fmt;

use serde::{Deserialize, Serialize};
use streamwire_core::{
    CodecInfo, CodecParams, Direction, Fidelity, MessageKind, PortInfo, Qos, Taps,
};

use super::{CodecNodeId, InstanceIndex, PortIndex};
use crate::settings::Placement;

/// Where one QoS value of a port came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QosSource {
    /// The default of the message's kind (`#[message(kind = ..)]`).
    Kind(MessageKind),
    /// The port's own `#[port(..)]` attribute.
    Port,
}

/// Where each QoS value of a port came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QosOrigin {
    /// Of the reliability.
    pub reliability: QosSource,
    /// Of the durability.
    pub durability: QosSource,
    /// Of the history (queue depth).
    pub history: QosSource,
}

impl fmt::Display for QosOrigin {
    /// `sensor defaults`, `#[port]`, or `#[port] depth; sensor defaults otherwise`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = [
            ("reliability", self.reliability),
            ("durability", self.durability),
            ("depth", self.history),
        ];
        let set: Vec<&str> = values
            .iter()
            .filter(|(_, source)| *source == QosSource::Port)
            .map(|(name, _)| *name)
            .collect();
        let kind = values.iter().find_map(|(_, source)| match source {
            QosSource::Kind(kind) => Some(*kind),
            QosSource::Port => None,
        });
        match (set.as_slice(), kind) {
            (_, None) => f.write_str("#[port]"),
            ([], Some(kind)) => write!(f, "{kind} defaults"),
            (set, Some(kind)) => write!(f, "#[port] {}; {kind} defaults otherwise", set.join(", ")),
        }
    }
}

/// A port of an instance in a plan: its metadata, its resolved stream and its effective
/// QoS.
#[derive(Clone, Debug)]
pub struct PlanPort {
    /// Its position in the module's ports.
    pub index: PortIndex,
    /// The metadata the derive generated: field, type, direction, message, payload form,
    /// `optional` / `lossless`, the QoS values the attributes set.
    pub info: &'static PortInfo,
    /// The stream after namespaces and remaps (`left/color_image`).
    pub stream: String,
    /// The QoS it gets: its `#[port(..)]` values over its message kind's defaults.
    pub qos: Qos,
    /// Where each QoS value came from.
    pub qos_origin: QosOrigin,
}

impl PlanPort {
    /// The struct field, e.g. `color_image`.
    pub fn field(&self) -> &'static str {
        self.info.field()
    }

    /// Input or output.
    pub fn direction(&self) -> Direction {
        self.info.direction()
    }
}

/// A module instance in a plan.
#[derive(Clone, Debug)]
pub struct InstanceNode {
    /// Its id: the same position as in the blueprint.
    pub id: InstanceIndex,
    /// Full name, namespaces included.
    pub name: String,
    /// The module type.
    pub module_type: &'static str,
    /// Where it runs.
    pub placement: Placement,
    pub(crate) ports: Vec<PlanPort>,
    /// Its `#[config]` fields as (field, value as JSON text), as a blueprint file holds
    /// them.
    pub(crate) settings: Vec<(String, String)>,
    /// The streams it taps while it runs, as its module declares them.
    pub(crate) taps: Taps,
}

impl InstanceNode {
    /// Every port, in field order, with its resolved stream and QoS.
    pub fn ports(&self) -> impl ExactSizeIterator<Item = &PlanPort> {
        self.ports.iter()
    }

    /// The port at `index`.
    pub fn port(&self, index: PortIndex) -> Option<&PlanPort> {
        self.ports.get(index.0)
    }

    /// The port of field `field`.
    pub fn port_named(&self, field: &str) -> Option<&PlanPort> {
        self.ports.iter().find(|p| p.field() == field)
    }

    /// Its `#[config]` settings as (field, value as JSON text), as a blueprint file holds
    /// them (empty for a module a file cannot hold).
    pub fn settings(&self) -> &[(String, String)] {
        &self.settings
    }

    /// The streams it taps while it runs ([`Node::taps`](streamwire_core::Node::taps)):
    /// in a closed distributed run its process may subscribe to them in the other
    /// processes, encoded forms included.
    pub fn taps(&self) -> &Taps {
        &self.taps
    }
}

/// Encode or decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodecKind {
    /// Message to encoded message, in the producer's process.
    Encode,
    /// Encoded message to message, once per receiving process.
    Decode,
}

impl fmt::Display for CodecKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CodecKind::Encode => "encode",
            CodecKind::Decode => "decode",
        })
    }
}

/// A codec node inserted by the planner.
#[derive(Clone, Debug)]
pub struct CodecNode {
    /// Its id.
    pub id: CodecNodeId,
    /// Encode or decode.
    pub kind: CodecKind,
    /// The stream it encodes or decodes (`color_image`).
    pub stream: String,
    /// The encoded stream's name (`color_image/compressed`).
    pub encoded_stream: String,
    /// The codec.
    pub codec: CodecInfo,
    /// Every parameter, defaults included: what the runtime builds the codec with
    /// ([`CodecInfo::instantiate`]).
    pub params: CodecParams,
    /// The parameters the blueprint set (a subset of `params`); the rest are defaults.
    pub user_params: CodecParams,
    /// Those of `user_params` that came from the blueprint-wide defaults
    /// ([`Blueprint::codec_default`](crate::Blueprint::codec_default)), not the stream's own
    /// settings.
    pub blueprint_params: CodecParams,
    /// What the codec does to the message with these parameters.
    pub fidelity: Fidelity,
    /// Where it runs.
    pub placement: Placement,
    /// The QoS of what it sends: an encoded stream inherits its stream's QoS (the
    /// producer's output), and so does a decoder's output.
    pub qos: Qos,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_origin_reads_as_where_values_came_from() {
        let kind = QosSource::Kind(MessageKind::Sensor);
        let all_kind = QosOrigin {
            reliability: kind,
            durability: kind,
            history: kind,
        };
        assert_eq!(all_kind.to_string(), "sensor defaults");
        let mixed = QosOrigin {
            history: QosSource::Port,
            ..all_kind
        };
        assert_eq!(
            mixed.to_string(),
            "#[port] depth; sensor defaults otherwise"
        );
        let all_port = QosOrigin {
            reliability: QosSource::Port,
            durability: QosSource::Port,
            history: QosSource::Port,
        };
        assert_eq!(all_port.to_string(), "#[port]");
    }
}
