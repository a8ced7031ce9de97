//! Plans for people: `Display` (text) and DOT (Graphviz).

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use petgraph::visit::EdgeRef;

use crate::plan::{CodecKind, CodecNode, Endpoint, InstanceNode, LinkView, Plan, PlanNode};

impl Plan {
    /// The plan as a Graphviz graph: one cluster per host and per process, instances as
    /// boxes, codec nodes as ellipses, links labelled with what they carry and why.
    ///
    /// Render it with `dot -Tsvg plan.dot -o plan.svg`.
    pub fn to_dot(&self) -> String {
        let mut out = String::new();
        out.push_str("digraph plan {\n");
        out.push_str("  rankdir=LR;\n");
        out.push_str("  node [fontname=\"Helvetica\", fontsize=10];\n");
        out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
        for (host, processes) in self.placements() {
            let _ = writeln!(
                out,
                "  subgraph {} {{",
                quote(&format!("cluster_host_{host}"))
            );
            let _ = writeln!(out, "    label={};", quote(&format!("host {host}")));
            for (process, nodes) in processes {
                let _ = writeln!(
                    out,
                    "    subgraph {} {{",
                    quote(&format!("cluster_process_{host}/{process}"))
                );
                let _ = writeln!(out, "      label={};", quote(&format!("process {process}")));
                for node in nodes {
                    match &self.graph[node] {
                        PlanNode::Instance(instance) => {
                            let _ = writeln!(
                                out,
                                "      {} [shape=box, label={}];",
                                quote(&node_key(&self.graph[node])),
                                quote(&format!("{}\n{}", instance.name, instance.module_type))
                            );
                        }
                        PlanNode::Codec(codec) => {
                            let _ = writeln!(
                                out,
                                "      {} [shape=ellipse, label={}];",
                                quote(&node_key(&self.graph[node])),
                                quote(&format!(
                                    "{} {}\n{}\n{}",
                                    codec.kind,
                                    codec.codec.name(),
                                    codec.encoded_stream,
                                    codec.params
                                ))
                            );
                        }
                    }
                }
                out.push_str("    }\n");
            }
            out.push_str("  }\n");
        }
        for edge in self.graph.edge_references() {
            let link = edge.weight();
            let stream = if link.stream.is_empty() {
                "?"
            } else {
                &link.stream
            };
            let style = if link.payload.is_encoded() {
                ", style=dashed"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {} -> {} [label={}{style}];",
                quote(&node_key(&self.graph[edge.source()])),
                quote(&node_key(&self.graph[edge.target()])),
                quote(&format!(
                    "{stream}\n{}, {}\n{}",
                    link.payload, link.locality, link.reason
                ))
            );
        }
        out.push_str("}\n");
        out
    }

    /// Hosts, their processes and the nodes in each, sorted by name.
    fn placements(&self) -> BTreeMap<String, BTreeMap<String, Vec<petgraph::graph::NodeIndex>>> {
        let mut placements: BTreeMap<String, BTreeMap<String, Vec<_>>> = BTreeMap::new();
        for node in self.graph.node_indices() {
            let placement = match &self.graph[node] {
                PlanNode::Instance(i) => &i.placement,
                PlanNode::Codec(c) => &c.placement,
            };
            placements
                .entry(placement.host().to_owned())
                .or_default()
                .entry(placement.process_name().to_owned())
                .or_default()
                .push(node);
        }
        placements
    }
}

/// A node's unique DOT identifier.
fn node_key(node: &PlanNode) -> String {
    match node {
        PlanNode::Instance(i) => format!("instance:{}", i.name),
        PlanNode::Codec(c) => format!("{}:{}@{}", c.kind, c.encoded_stream, c.placement),
    }
}

/// A codec node as the text plan names it, inside its stream's block: an encoder by the
/// stream it makes, a decoder by the process it decodes for (one per process and stream).
fn codec_label(codec: &CodecNode) -> String {
    match codec.kind {
        CodecKind::Encode => format!("[encode {}]", codec.encoded_stream),
        CodecKind::Decode => format!("[decode @ {}]", codec.placement),
    }
}

fn endpoint_label(endpoint: &Endpoint<'_>) -> String {
    match endpoint {
        Endpoint::Port { instance, port } => format!("{}.{port}", instance.name),
        Endpoint::Codec(codec) => codec_label(codec),
    }
}

/// A DOT string literal.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let placements = self.placements();
        let instances: Vec<&InstanceNode> = self.instances().collect();
        let processes: usize = placements.values().map(BTreeMap::len).sum();
        writeln!(
            f,
            "plan: {} in {} on {}; {}; {}",
            count(instances.len(), "instance"),
            count(processes, "process"),
            count(placements.len(), "host"),
            count(self.codec_nodes().count(), "codec node"),
            count(self.graph.edge_count(), "link"),
        )?;
        let s = &self.settings;
        writeln!(
            f,
            "settings: compression {} ({}); lossy pixels {}; unfed optional inputs {}",
            s.compression, s.auto_table, s.lossy_pixels, s.unfed_optional
        )?;

        writeln!(f, "\nplacement")?;
        let width = placements
            .iter()
            .flat_map(|(h, ps)| ps.keys().map(move |p| h.len() + p.len() + 1))
            .max()
            .unwrap_or(0);
        for (host, processes) in &placements {
            for (process, nodes) in processes {
                let names: Vec<String> = nodes
                    .iter()
                    .filter_map(|&n| match &self.graph[n] {
                        PlanNode::Instance(i) => Some(format!("{} ({})", i.name, i.module_type)),
                        PlanNode::Codec(_) => None,
                    })
                    .collect();
                let place = format!("{host}/{process}");
                let list = if names.is_empty() {
                    "codec nodes only".to_owned()
                } else {
                    names.join(", ")
                };
                writeln!(f, "  {place:width$}  {list}")?;
            }
        }

        // Links grouped by the stream they belong to.
        let mut links_by_stream: BTreeMap<&str, Vec<LinkView<'_>>> = BTreeMap::new();
        for view in self.links() {
            let stream = match view.from {
                Endpoint::Codec(codec) => codec.stream.as_str(),
                Endpoint::Port { .. } => view.link.stream.as_str(),
            };
            links_by_stream.entry(stream).or_default().push(view);
        }
        for summary in &self.streams {
            let PlanNode::Instance(producer) = &self.graph[summary.producer.0] else {
                continue;
            };
            writeln!(
                f,
                "\nstream {} ({}) from {}.{}: {}",
                summary.name,
                summary.message,
                producer.name,
                summary.producer_port.field(),
                summary.producer_port.type_name()
            )?;
            let codec = summary
                .wire_codec
                .map_or_else(|| "none".to_owned(), |c| c.name().to_owned());
            writeln!(f, "  compression {}, codec {codec}", summary.mode)?;
            for node in self.codec_nodes().filter(|c| c.stream == summary.name) {
                let (from, to) = match node.kind {
                    CodecKind::Encode => (&node.stream, &node.encoded_stream),
                    CodecKind::Decode => (&node.encoded_stream, &node.stream),
                };
                writeln!(
                    f,
                    "  {} {from} -> {to} at {}: {} ({}; {})",
                    node.kind,
                    node.placement,
                    node.codec.name(),
                    node.codec.rust_name(),
                    node.fidelity
                )?;
                if node.kind == CodecKind::Encode {
                    writeln!(f, "    params {}", node.params)?;
                }
            }
            let links = links_by_stream
                .get(summary.name.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            if links.is_empty() {
                writeln!(f, "  no consumers")?;
                continue;
            }
            let rows: Vec<[String; 5]> = links
                .iter()
                .map(|l| {
                    [
                        endpoint_label(&l.from),
                        endpoint_label(&l.to),
                        l.link.payload.to_string(),
                        l.link.locality.to_string(),
                        if l.link.explicit {
                            format!("{} (connected explicitly)", l.link.reason)
                        } else {
                            l.link.reason.to_string()
                        },
                    ]
                })
                .collect();
            let widths: [usize; 4] =
                std::array::from_fn(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0));
            for [from, to, payload, locality, reason] in &rows {
                writeln!(
                    f,
                    "  {from:w0$} -> {to:w1$}  {payload:w2$}  {locality:w3$}  {reason}",
                    w0 = widths[0],
                    w1 = widths[1],
                    w2 = widths[2],
                    w3 = widths[3],
                )?;
            }
        }

        if !self.notes.is_empty() {
            writeln!(f, "\nnotes")?;
            for note in &self.notes {
                writeln!(f, "  {note}")?;
            }
        }
        Ok(())
    }
}

fn count(n: usize, what: &str) -> String {
    match (n, what) {
        (1, _) => format!("1 {what}"),
        (n, "process") => format!("{n} processes"),
        (n, _) => format!("{n} {what}s"),
    }
}
