//! The plan, read into the few facts the runtime needs: instances with their ports, codec
//! nodes, and links between numbered ends. Everything else in the runtime works on this,
//! so the plan's API is read in one place.

use streamwire_core::{CodecInfo, CodecParams, PortInfo, Qos, Transport};
use streamwire_graph::{CodecKind, Endpoint, Plan};

pub(crate) struct PortDesc {
    pub(crate) info: &'static PortInfo,
    pub(crate) stream: String,
    /// The effective QoS the plan resolved (message kind defaults, port overrides).
    pub(crate) qos: Qos,
}

impl PortDesc {
    /// The wire name of what this port carries: the message, or for
    /// `Compressed<M, C>` the encoded message.
    pub(crate) fn delivered_type(&self) -> &'static str {
        match self.info.transport() {
            Transport::Raw => self.info.message().name(),
            Transport::Codec(codec) => codec.encoded().name(),
        }
    }
}

pub(crate) struct InstanceDesc {
    pub(crate) name: String,
    pub(crate) module_type: &'static str,
    /// The planned process it runs in (its partition, when partitions are on).
    pub(crate) placement: String,
    pub(crate) ports: Vec<PortDesc>,
}

pub(crate) struct CodecDesc {
    pub(crate) kind: CodecKind,
    pub(crate) stream: String,
    pub(crate) encoded_stream: String,
    pub(crate) codec: CodecInfo,
    pub(crate) params: CodecParams,
    pub(crate) placement: String,
    /// The stream's QoS, which the node's queue follows.
    pub(crate) qos: Qos,
}

impl CodecDesc {
    pub(crate) fn label(&self) -> String {
        match self.kind {
            // Decoders are one per receiving process: the place tells them apart.
            CodecKind::Decode => format!(
                "{} {} {} @ {}",
                self.kind,
                self.codec.name(),
                self.stream,
                self.placement
            ),
            _ => format!("{} {} {}", self.kind, self.codec.name(), self.stream),
        }
    }

    /// The stream this node publishes: the encoded stream, or the decoded one.
    pub(crate) fn output_stream(&self) -> &str {
        match self.kind {
            CodecKind::Encode => &self.encoded_stream,
            _ => &self.stream,
        }
    }

    /// The wire name of the message this node publishes.
    pub(crate) fn output_type(&self) -> &'static str {
        match self.kind {
            CodecKind::Encode => self.codec.encoded().name(),
            _ => self.codec.message().name(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Instance index, port index.
    Port(usize, usize),
    /// Codec node index.
    Codec(usize),
}

pub(crate) struct LinkDesc {
    pub(crate) from: End,
    pub(crate) to: End,
    pub(crate) stream: String,
}

pub(crate) struct Wiring {
    pub(crate) instances: Vec<InstanceDesc>,
    pub(crate) codecs: Vec<CodecDesc>,
    pub(crate) links: Vec<LinkDesc>,
}

impl Wiring {
    pub(crate) fn of(plan: &Plan) -> Wiring {
        let end = |endpoint: &Endpoint| -> Option<End> {
            match endpoint {
                Endpoint::Port { instance, port } => {
                    Some(End::Port(instance.index(), port.index()))
                }
                Endpoint::Codec(codec) => Some(End::Codec(codec.index())),
                _ => None,
            }
        };
        let links = plan
            .links()
            .filter_map(|link| {
                Some(LinkDesc {
                    from: end(&link.from)?,
                    to: end(&link.to)?,
                    stream: link.stream.clone(),
                })
            })
            .collect();
        Wiring {
            instances: plan
                .instances()
                .map(|n| InstanceDesc {
                    name: n.name.clone(),
                    module_type: n.module_type,
                    placement: n.placement.to_string(),
                    ports: n
                        .ports()
                        .map(|port| PortDesc {
                            info: port.info,
                            stream: port.stream.clone(),
                            qos: port.qos,
                        })
                        .collect(),
                })
                .collect(),
            codecs: plan
                .codec_nodes()
                .map(|c| CodecDesc {
                    kind: c.kind,
                    stream: c.stream.clone(),
                    encoded_stream: c.encoded_stream.clone(),
                    codec: c.codec,
                    params: c.params.clone(),
                    placement: c.placement.to_string(),
                    qos: c.qos,
                })
                .collect(),
            links,
        }
    }

    pub(crate) fn end_name(&self, end: End) -> String {
        match end {
            End::Port(i, p) => format!(
                "{}.{}",
                self.instances[i].name,
                self.instances[i].ports[p].info.field()
            ),
            End::Codec(c) => self.codecs[c].label(),
        }
    }
}
