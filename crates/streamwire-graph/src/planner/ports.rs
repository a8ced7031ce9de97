//! Phase 1: every port's stream name (namespaces, remaps) and effective QoS. Apart
//! because every later phase reads ports through [`Ports`], by [`PortKey`].

use std::collections::{BTreeMap, BTreeSet};

use streamwire_core::{Direction, PortInfo, Qos};

use super::{PortKey, port_name};
use crate::blueprint::Blueprint;
use crate::error::Problem;
use crate::names::{self, resolve};
use crate::plan::{PlanPort, PortIndex, QosOrigin, QosSource};

/// Every port of every instance, resolved.
pub(super) struct Ports {
    /// Per instance, per port.
    pub(super) ports: Vec<Vec<PlanPort>>,
    /// Ports whose stream name is invalid (already reported).
    pub(super) invalid: BTreeSet<PortKey>,
}

impl Ports {
    pub(super) fn get(&self, (i, p): PortKey) -> &PlanPort {
        &self.ports[i][p]
    }

    pub(super) fn info(&self, key: PortKey) -> &'static PortInfo {
        self.get(key).info
    }

    pub(super) fn stream(&self, key: PortKey) -> &str {
        &self.get(key).stream
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.ports
            .iter()
            .enumerate()
            .flat_map(|(i, ports)| (0..ports.len()).map(move |p| (i, p)))
    }

    pub(super) fn outputs(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.keys()
            .filter(|&k| self.info(k).direction() == Direction::Output)
    }

    pub(super) fn inputs(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.keys()
            .filter(|&k| self.info(k).direction() == Direction::Input)
    }
}

/// Resolves every port's stream name (remaps, namespaces) and QoS, checking names and
/// that no two ports of one direction of one instance share a stream.
pub(super) fn resolve_ports(bp: &Blueprint, problems: &mut Vec<Problem>) -> Ports {
    let mut all = Vec::with_capacity(bp.instances.len());
    let mut invalid = BTreeSet::new();
    for (index, instance) in bp.instances.iter().enumerate() {
        let mut resolved = Vec::with_capacity(instance.ports.len());
        let mut seen: BTreeMap<(bool, String), usize> = BTreeMap::new();
        for (p, (info, remap)) in instance.ports.iter().zip(&instance.remaps).enumerate() {
            let raw = remap.as_deref().unwrap_or(info.stream());
            let name = port_name(bp, (index, p));
            if let Some(reason) = names::stream_name_problem(raw) {
                problems.push(Problem::InvalidStreamName {
                    port: name.clone(),
                    name: raw.to_owned(),
                    reason,
                });
                invalid.insert((index, p));
            }
            let stream = resolve(&instance.namespace, raw);
            let is_input = info.direction() == Direction::Input;
            if let Some(&first) = seen.get(&(is_input, stream.clone())) {
                problems.push(Problem::DuplicatePortStream {
                    instance: instance.name.clone(),
                    direction: info.direction(),
                    stream: stream.clone(),
                    ports: [port_name(bp, (index, first)), name],
                });
            } else {
                seen.insert((is_input, stream.clone()), p);
            }
            let (qos, qos_origin) = effective_qos(info);
            resolved.push(PlanPort {
                index: PortIndex(p),
                info,
                stream,
                qos,
                qos_origin,
            });
        }
        all.push(resolved);
    }
    Ports {
        ports: all,
        invalid,
    }
}

/// A port's QoS: its `#[port(..)]` values over the defaults of its message's kind (for
/// `Compressed<M>` ports, `M`'s kind: an encoded stream has its stream's QoS).
fn effective_qos(info: &PortInfo) -> (Qos, QosOrigin) {
    let kind = info.message().kind();
    let set = info.attrs().qos;
    let source = |is_set: bool| {
        if is_set {
            QosSource::Port
        } else {
            QosSource::Kind(kind)
        }
    };
    (
        set.over(kind.default_qos()),
        QosOrigin {
            reliability: source(set.reliability.is_some()),
            durability: source(set.durability.is_some()),
            history: source(set.history.is_some()),
        },
    )
}
