//! Plans for people: `Display` (text), DOT (Graphviz) and Mermaid.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use streamwire_core::Direction;

use crate::plan::{CodecKind, CodecNode, Crossing, Endpoint, InstanceNode, Link, Plan, PlanNode};
use crate::settings::Compression;

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
                    match node {
                        PlanNode::Instance(id) => {
                            let Some(instance) = self.instance(id) else {
                                continue;
                            };
                            let _ = writeln!(
                                out,
                                "      {} [shape=box, label={}];",
                                quote(&self.node_key(node)),
                                quote(&format!("{}\n{}", instance.name, instance.module_type))
                            );
                        }
                        PlanNode::Codec(id) => {
                            let Some(codec) = self.codec_node(id) else {
                                continue;
                            };
                            // The parameters are the encoder's; its decoders show only
                            // what they decode.
                            let mut label = format!(
                                "{} {}\n{}",
                                codec.kind,
                                codec.codec.name(),
                                codec.encoded_stream
                            );
                            if codec.kind == CodecKind::Encode && !codec.params.is_empty() {
                                label.push('\n');
                                label.push_str(&params_text(codec));
                            }
                            let _ = writeln!(
                                out,
                                "      {} [shape=ellipse, label={}];",
                                quote(&self.node_key(node)),
                                quote(&label)
                            );
                        }
                    }
                }
                out.push_str("    }\n");
            }
            out.push_str("  }\n");
        }
        for link in self.links() {
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
                quote(&self.endpoint_key(link.from)),
                quote(&self.endpoint_key(link.to)),
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
    fn placements(&self) -> BTreeMap<String, BTreeMap<String, Vec<PlanNode>>> {
        let mut placements: BTreeMap<String, BTreeMap<String, Vec<_>>> = BTreeMap::new();
        let nodes = self
            .instances()
            .map(|i| (PlanNode::Instance(i.id), &i.placement))
            .chain(
                self.codec_nodes()
                    .map(|c| (PlanNode::Codec(c.id), &c.placement)),
            );
        for (node, placement) in nodes {
            placements
                .entry(placement.host().to_owned())
                .or_default()
                .entry(placement.process_name().to_owned())
                .or_default()
                .push(node);
        }
        placements
    }

    /// A node's identity in every rendering (DOT's node ids, Mermaid's through
    /// [`mermaid_ids`], the JSON summary's `node`): an instance by its name, a codec node
    /// by its kind, encoded stream and process, unique per node.
    pub(crate) fn node_key(&self, node: PlanNode) -> String {
        match node {
            PlanNode::Instance(id) => self.instance(id).map_or_else(
                || format!("instance:{id}"),
                |i| format!("instance:{}", i.name),
            ),
            PlanNode::Codec(id) => self.codec_node(id).map_or_else(
                || format!("codec:{id}"),
                |c| format!("{}:{}@{}", c.kind, c.encoded_stream, c.placement),
            ),
        }
    }

    pub(crate) fn endpoint_key(&self, endpoint: Endpoint) -> String {
        match endpoint {
            Endpoint::Port { instance, .. } => self.node_key(PlanNode::Instance(instance)),
            Endpoint::Codec(id) => self.node_key(PlanNode::Codec(id)),
        }
    }
}

/// A codec node as the text plan names it, inside its stream's block: an encoder by the
/// stream it makes, a decoder by the process it decodes for (one per process and stream).
pub(crate) fn codec_label(codec: &CodecNode) -> String {
    match codec.kind {
        CodecKind::Encode => format!("[encode {}]", codec.encoded_stream),
        CodecKind::Decode => format!("[decode @ {}]", codec.placement),
    }
}

/// A codec node's parameters, those the blueprint set apart from the defaults:
/// `jpeg_quality=90 (set); chroma_downsampling=average, .. (defaults)`, with those that
/// came from the blueprint-wide defaults in their own group (`max_width=640
/// (blueprint-wide)`).
pub(crate) fn params_text(codec: &CodecNode) -> String {
    let group = |keep: &dyn Fn(&str) -> bool| {
        codec
            .params
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let global = |k: &str| codec.blueprint_params.get(k).is_some();
    let user = |k: &str| codec.user_params.get(k).is_some();
    let groups = [
        (group(&|k| user(k) && !global(k)), "set"),
        (group(&|k| global(k)), "blueprint-wide"),
        (group(&|k| !user(k)), "defaults"),
    ];
    let parts: Vec<String> = groups
        .iter()
        .filter(|(text, _)| !text.is_empty())
        .map(|(text, what)| format!("{text} ({what})"))
        .collect();
    parts.join("; ")
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

impl Plan {
    /// The plan as a Mermaid flowchart: instances grouped by process (one subgraph each),
    /// codec nodes as hexagons, links labelled with their stream and locality. Its nodes
    /// are DOT's and the JSON summary's (`node`), so every link names a declared node.
    ///
    /// Paste it into a Markdown ```` ```mermaid ```` block, or render it with `mmdc`.
    pub fn to_mermaid(&self) -> String {
        let summary = self.summary();
        let ids = mermaid_ids(
            summary
                .instances
                .iter()
                .map(|i| i.node.as_str())
                .chain(summary.codec_nodes.iter().map(|c| c.node.as_str())),
        );
        let id = |node: &str| ids.get(node).cloned().unwrap_or_else(|| mermaid_id(node));
        let mut out = String::from("flowchart LR\n");
        let mut by_process: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for i in &summary.instances {
            by_process
                .entry(i.placement.clone())
                .or_default()
                .push(format!(
                    "    {}[\"{} ({})\"]",
                    id(&i.node),
                    i.name,
                    i.module_type
                ));
        }
        for c in &summary.codec_nodes {
            let name = format!("{:?} {} {}", c.kind, c.codec, c.stream).to_lowercase();
            by_process
                .entry(c.placement.clone())
                .or_default()
                .push(format!("    {}{{{{\"{name}\"}}}}", id(&c.node)));
        }
        for (n, (process, nodes)) in by_process.iter().enumerate() {
            let _ = writeln!(out, "  subgraph p{n}[\"{process}\"]");
            for node in nodes {
                let _ = writeln!(out, "  {node}");
            }
            out.push_str("  end\n");
        }
        for l in &summary.links {
            let _ = writeln!(
                out,
                "  {} -->|\"{} ({})\"| {}",
                id(&l.from_node),
                l.stream,
                l.locality,
                id(&l.to_node)
            );
        }
        out
    }
}

/// Mermaid ids for node keys, in order: each key as an id ([`mermaid_id`]), made unique
/// with a number where two keys differ only in characters an id cannot hold.
fn mermaid_ids<'a>(keys: impl Iterator<Item = &'a str>) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    let mut taken = std::collections::BTreeSet::new();
    for key in keys {
        let base = mermaid_id(key);
        let mut id = base.clone();
        let mut n = 2;
        while !taken.insert(id.clone()) {
            id = format!("{base}_{n}");
            n += 1;
        }
        ids.insert(key.to_owned(), id);
    }
    ids
}

/// A name as a Mermaid node id: ASCII letters and digits, anything else `_`.
fn mermaid_id(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
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
        let compression = match s.compression {
            // The locality table only matters to `auto` streams (global or per stream).
            Compression::Off | Compression::On if !self.any_auto_stream() => {
                s.compression.to_string()
            }
            mode => format!("{mode} ({})", s.auto_table),
        };
        writeln!(
            f,
            "settings: compression {compression}; lossy pixels {}; unfed optional inputs {}; \
             incompatible qos {}",
            s.lossy_pixels, s.unfed_optional, s.incompatible_qos
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
                    .filter_map(|&n| match n {
                        PlanNode::Instance(id) => self
                            .instance(id)
                            .map(|i| format!("{} ({})", i.name, i.module_type)),
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

        fmt_taps(f, &instances)?;
        self.fmt_qos(f, &instances)?;

        // Links grouped by the stream they belong to.
        let mut links_by_stream: BTreeMap<&str, Vec<&Link>> = BTreeMap::new();
        for link in self.links() {
            let stream = match link.from {
                Endpoint::Codec(id) => self.codec_node(id).map_or("", |c| c.stream.as_str()),
                Endpoint::Port { .. } => link.stream.as_str(),
            };
            links_by_stream.entry(stream).or_default().push(link);
        }
        let crossings = self.crossings();
        for summary in &self.streams {
            let Some(producer) = self.instance(summary.producer) else {
                continue;
            };
            let Some(port) = producer.port(summary.producer_port) else {
                continue;
            };
            writeln!(
                f,
                "\nstream {} ({}) from {}.{}: {}",
                summary.name,
                summary.message,
                producer.name,
                port.field(),
                port.info.type_name()
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
                if node.kind == CodecKind::Encode && !node.params.is_empty() {
                    writeln!(f, "    params {}", params_text(node))?;
                }
            }
            let links = links_by_stream
                .get(summary.name.as_str())
                .map(Vec::as_slice)
                // infallible: a stream without links has none to list
                .unwrap_or_default();
            if links.is_empty() {
                writeln!(f, "  no consumers")?;
                continue;
            }
            let rows: Vec<[String; 5]> = links
                .iter()
                .map(|l| {
                    [
                        self.endpoint_name(l.from),
                        self.endpoint_name(l.to),
                        l.payload.to_string(),
                        l.locality.to_string(),
                        if l.explicit {
                            format!("{} (connected explicitly)", l.reason)
                        } else {
                            l.reason.to_string()
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
            fmt_crossings(f, &crossings, links)?;
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

impl Plan {
    /// True when some stream's mode is `auto` (the locality table applies to it).
    fn any_auto_stream(&self) -> bool {
        self.streams.iter().any(|s| s.mode.starts_with("auto"))
    }

    /// Every port's effective QoS and where it came from, per instance.
    fn fmt_qos(&self, f: &mut fmt::Formatter<'_>, instances: &[&InstanceNode]) -> fmt::Result {
        let rows: Vec<[String; 4]> = instances
            .iter()
            .flat_map(|i| {
                i.ports().map(move |p| {
                    [
                        format!("{}.{}", i.name, p.field()),
                        match p.direction() {
                            Direction::Input => "in".to_owned(),
                            Direction::Output => "out".to_owned(),
                        },
                        p.qos.to_string(),
                        p.qos_origin.to_string(),
                    ]
                })
            })
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        writeln!(f, "\nqos")?;
        let widths: [usize; 3] =
            std::array::from_fn(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0));
        for [port, direction, qos, origin] in &rows {
            writeln!(
                f,
                "  {port:w0$}  {direction:w1$}  {qos:w2$}  {origin}",
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
            )?;
        }
        Ok(())
    }
}

/// The crossings of a stream's links to a host where more than one process consumes it:
/// which process receives it across the link and which it hands it on to (one process
/// alone on its host receives it itself, as every link says).
fn fmt_crossings(
    f: &mut fmt::Formatter<'_>,
    crossings: &[Crossing],
    links: &[&Link],
) -> fmt::Result {
    for crossing in crossings
        .iter()
        .filter(|c| !c.forwarded_to.is_empty() && links.iter().any(|l| l.from == c.from))
    {
        let others: Vec<String> = crossing
            .forwarded_to
            .iter()
            .map(ToString::to_string)
            .collect();
        writeln!(
            f,
            "  carried once to host {}: received by {}, handed on to {} ({})",
            crossing.host,
            crossing.receiver,
            others.join(", "),
            crossing.forwarded_key()
        )?;
    }
    Ok(())
}

/// Who taps which streams beyond its inputs: in a closed run of several processes, what
/// its process may subscribe to in the others. Nothing when no instance taps.
fn fmt_taps(f: &mut fmt::Formatter<'_>, instances: &[&InstanceNode]) -> fmt::Result {
    let taps: Vec<&&InstanceNode> = instances.iter().filter(|i| !i.taps.is_none()).collect();
    if taps.is_empty() {
        return Ok(());
    }
    writeln!(f, "\ntaps")?;
    let width = taps.iter().map(|i| i.name.len()).max().unwrap_or(0);
    for instance in taps {
        writeln!(
            f,
            "  {:width$}  {} (at {})",
            instance.name, instance.taps, instance.placement
        )?;
    }
    Ok(())
}

fn count(n: usize, what: &str) -> String {
    match (n, what) {
        (1, _) => format!("1 {what}"),
        (n, "process") => format!("{n} processes"),
        (n, _) => format!("{n} {what}s"),
    }
}
