//! The plan, read into the few facts the runtime needs: instances with their ports, codec
//! nodes, and links between numbered ends. Everything else in the runtime works on this,
//! so the plan's API is read in one place.

use streamwire_core::{CodecInfo, CodecParams, PortInfo, Transport};
use streamwire_graph::{CodecKind, Endpoint, Plan};

pub(crate) struct PortDesc {
    pub(crate) info: &'static PortInfo,
    pub(crate) stream: String,
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
    pub(crate) ports: Vec<PortDesc>,
}

pub(crate) struct CodecDesc {
    pub(crate) kind: CodecKind,
    pub(crate) stream: String,
    pub(crate) encoded_stream: String,
    pub(crate) codec: CodecInfo,
    pub(crate) params: CodecParams,
    pub(crate) placement: String,
}

impl CodecDesc {
    pub(crate) fn label(&self) -> String {
        format!("{} {} {}", self.kind, self.codec.name(), self.stream)
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
        let instances: Vec<_> = plan.instances().collect();
        let codecs: Vec<_> = plan.codec_nodes().collect();
        let end = |endpoint: &Endpoint<'_>| -> Option<End> {
            match endpoint {
                Endpoint::Port { instance, port } => {
                    let i = instances.iter().position(|n| std::ptr::eq(*n, *instance))?;
                    let p = instance
                        .ports()
                        .position(|(info, _)| info.field() == *port)?;
                    Some(End::Port(i, p))
                }
                Endpoint::Codec(codec) => codecs
                    .iter()
                    .position(|c| std::ptr::eq(*c, *codec))
                    .map(End::Codec),
            }
        };
        let links = plan
            .links()
            .filter_map(|view| {
                Some(LinkDesc {
                    from: end(&view.from)?,
                    to: end(&view.to)?,
                    stream: view.link.stream.clone(),
                })
            })
            .collect();
        Wiring {
            instances: instances
                .iter()
                .map(|n| InstanceDesc {
                    name: n.name.clone(),
                    module_type: n.module_type,
                    ports: n
                        .ports()
                        .map(|(info, stream)| PortDesc {
                            info,
                            stream: stream.to_owned(),
                        })
                        .collect(),
                })
                .collect(),
            codecs: codecs
                .iter()
                .map(|c| CodecDesc {
                    kind: c.kind,
                    stream: c.stream.clone(),
                    encoded_stream: c.encoded_stream.clone(),
                    codec: c.codec,
                    params: c.params.clone(),
                    placement: c.placement.to_string(),
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
