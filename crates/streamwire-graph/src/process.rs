//! The plan seen from one process: what runs in it and which links cross its border.

use std::collections::BTreeSet;
use std::fmt;

use crate::plan::{CodecKind, CodecNode, Endpoint, InstanceNode, Link, Plan};
use crate::settings::Placement;

/// One process of a plan: its instances and codec nodes, and its links (inside it, and
/// leaving or entering it, each with its stream, payload and codec). Made by
/// [`Plan::processes`] and [`Plan::process`]; what a process's runtime starts.
#[derive(Clone, Debug)]
pub struct ProcessView<'a> {
    plan: &'a Plan,
    placement: Placement,
}

impl Plan {
    /// Every process with something in it, sorted by host then process name.
    pub fn processes(&self) -> Vec<ProcessView<'_>> {
        let placements: BTreeSet<&Placement> = self
            .instances()
            .map(|i| &i.placement)
            .chain(self.codec_nodes().map(|c| &c.placement))
            .collect();
        placements
            .into_iter()
            .filter_map(|p| self.process(p))
            .collect()
    }

    /// The process at `placement`, if anything runs there.
    pub fn process(&self, placement: &Placement) -> Option<ProcessView<'_>> {
        let occupied = self.instances().any(|i| &i.placement == placement)
            || self.codec_nodes().any(|c| &c.placement == placement);
        occupied.then(|| ProcessView {
            plan: self,
            placement: placement.clone(),
        })
    }
}

impl<'a> ProcessView<'a> {
    /// Where it is.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// True when `endpoint` runs in this process.
    pub fn contains(&self, endpoint: Endpoint) -> bool {
        self.plan.placement_of(endpoint) == Some(&self.placement)
    }

    /// Its instances, in plan order.
    pub fn instances(&self) -> impl Iterator<Item = &'a InstanceNode> + '_ {
        let placement = &self.placement;
        self.plan
            .instances()
            .filter(move |i| &i.placement == placement)
    }

    /// Its codec nodes, in plan order.
    pub fn codec_nodes(&self) -> impl Iterator<Item = &'a CodecNode> + '_ {
        let placement = &self.placement;
        self.plan
            .codec_nodes()
            .filter(move |c| &c.placement == placement)
    }

    /// Links with both ends in this process (zero-copy delivery).
    pub fn local_links(&self) -> impl Iterator<Item = &'a Link> + '_ {
        self.plan
            .links()
            .filter(|l| self.contains(l.from) && self.contains(l.to))
    }

    /// Links that leave this process: the transport sends them.
    pub fn outgoing_links(&self) -> impl Iterator<Item = &'a Link> + '_ {
        self.plan
            .links()
            .filter(|l| self.contains(l.from) && !self.contains(l.to))
    }

    /// Links that enter this process: the transport receives them.
    pub fn incoming_links(&self) -> impl Iterator<Item = &'a Link> + '_ {
        self.plan
            .links()
            .filter(|l| !self.contains(l.from) && self.contains(l.to))
    }

    /// An end as the view prints it; outside the process, with where it runs.
    fn end(&self, endpoint: Endpoint) -> String {
        let name = self.plan.endpoint_name(endpoint);
        let decoder = matches!(
            endpoint,
            Endpoint::Codec(id) if self.plan.codec_node(id).is_some_and(|c| c.kind == CodecKind::Decode)
        );
        match self.plan.placement_of(endpoint) {
            // A decoder's name already says where it is.
            Some(p) if *p != self.placement && !decoder => format!("{name} @ {p}"),
            _ => name,
        }
    }

    fn fmt_links<'l>(
        &self,
        f: &mut fmt::Formatter<'_>,
        title: &str,
        links: impl Iterator<Item = &'l Link>,
    ) -> fmt::Result {
        let rows: Vec<[String; 5]> = links
            .map(|l| {
                [
                    self.end(l.from),
                    self.end(l.to),
                    l.stream.clone(),
                    l.payload.to_string(),
                    l.locality.to_string(),
                ]
            })
            .collect();
        writeln!(f, "  {title}")?;
        if rows.is_empty() {
            return writeln!(f, "    none");
        }
        let widths: [usize; 4] =
            std::array::from_fn(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0));
        for [from, to, stream, payload, locality] in &rows {
            writeln!(
                f,
                "    {from:w0$} -> {to:w1$}  {stream:w2$}  {payload:w3$}  {locality}",
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3],
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for ProcessView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "process {}", self.placement)?;
        writeln!(f, "  instances")?;
        let mut any = false;
        for instance in self.instances() {
            any = true;
            writeln!(f, "    {} ({})", instance.name, instance.module_type)?;
        }
        if !any {
            writeln!(f, "    none")?;
        }
        writeln!(f, "  codec nodes")?;
        any = false;
        for codec in self.codec_nodes() {
            any = true;
            let (from, to) = match codec.kind {
                CodecKind::Encode => (&codec.stream, &codec.encoded_stream),
                CodecKind::Decode => (&codec.encoded_stream, &codec.stream),
            };
            writeln!(
                f,
                "    {} {from} -> {to}: {} ({})",
                codec.kind,
                codec.codec.name(),
                codec.fidelity
            )?;
        }
        if !any {
            writeln!(f, "    none")?;
        }
        self.fmt_links(f, "incoming", self.incoming_links())?;
        self.fmt_links(f, "outgoing", self.outgoing_links())?;
        self.fmt_links(f, "local", self.local_links())
    }
}
