//! From a blueprint to a plan, in phases a reader can follow:
//!
//! 1. [`ports::resolve_ports`]: every port's stream name (namespaces, remaps) and
//!    effective QoS.
//! 2. [`matching::match_ports`]: which output feeds each input (explicit connections,
//!    then autoconnect by stream name and message type).
//! 3. [`stream_plan::resolve_settings`]: per stream, its compression mode, codec and
//!    parameters.
//! 4. [`wiring::insert_codec_nodes`]: the graph: instances, links, and the encode and
//!    decode nodes ([`codec_nodes`]).
//! 5. [`checks::check`]: QoS compatibility, lossy pixels, wire names, unfed optional
//!    inputs.
//!
//! One module per phase; this one runs them in order and assembles the [`Plan`].
//!
//! Every phase records its problems and carries on, so one build reports every mistake;
//! a mistake already reported (a foreign handle, a bad stream name) is not reported again
//! as its consequence (an input fed by nobody).
//!
//! The codec rules (also stated in RFC.md):
//! - Encode at most once per (stream, codec, parameters), in the producer's process; the
//!   bytes are shared by every byte consumer and every compressed link.
//! - A pixel input in the producer's process gets the producer's message directly
//!   (unless compression is `on`); in another process it gets pixels from one decoder
//!   per (receiving process, stream) when its link compresses, else the raw message.
//! - A byte input always gets its encoder, even behind a plain `Out<M>`.
//! - Settings only decide whether a pixel link carries bytes. The global setting applies
//!   to `Out<Compressed<..>>` outputs; a plain `Out<M>` compresses only when its stream's
//!   setting asks. Per-stream beats global.
//! - A `lossless` input never receives lossy or downscaled pixels: its link stays raw, or
//!   the build fails when a per-stream `on` forces compression.

mod checks;
mod codec_nodes;
mod matching;
mod ports;
mod stream_plan;
mod wiring;

use crate::blueprint::Blueprint;
use crate::error::{BuildError, PortName, Problem};
use crate::plan::{InstanceIndex, InstanceNode, Plan, PlanSettings};

/// A port of an instance: (instance index, port index).
type PortKey = (usize, usize);

pub(crate) fn plan(bp: &Blueprint) -> Result<Plan, BuildError> {
    let mut problems = bp.problems.clone();
    problems.extend(settings_problems(bp));
    let ports = ports::resolve_ports(bp, &mut problems);
    let matching = matching::match_ports(bp, &ports, &mut problems);
    let streams = stream_plan::resolve_settings(bp, &ports, &matching, &mut problems);
    let wired = wiring::insert_codec_nodes(bp, &ports, &matching, &streams, &mut problems);
    let notes = checks::check(bp, &ports, &matching, &wired, &mut problems);

    if !problems.is_empty() {
        return Err(BuildError { problems });
    }
    let instances = bp
        .instances
        .iter()
        .zip(ports.ports)
        .enumerate()
        .map(|(i, (entry, ports))| InstanceNode {
            id: InstanceIndex(i),
            name: entry.name.clone(),
            module_type: entry.module_type,
            placement: entry.placement.clone(),
            ports,
            settings: settings_of(&*entry.module),
            taps: entry.module.taps(),
        })
        .collect();
    Ok(Plan {
        instances,
        codec_nodes: wired.codec_nodes,
        graph: wired.graph,
        streams: wired.summaries,
        notes,
        settings: PlanSettings {
            compression: bp.settings.compression,
            auto_table: bp.settings.auto_table,
            lossy_pixels: bp.settings.lossy_pixels,
            unfed_optional: bp.settings.unfed_optional,
            incompatible_qos: bp.settings.incompatible_qos,
            supervision: bp.settings.supervision,
        },
    })
}

/// Every instance's settings against its module's declared ranges and own check, and
/// every placement's names against what zenoh key expressions reserve: what must hold
/// before any worker starts.
pub(crate) fn settings_problems(bp: &Blueprint) -> Vec<Problem> {
    let mut problems = Vec::new();
    for entry in &bp.instances {
        for problem in entry.module.check_config() {
            problems.push(Problem::InvalidConfig {
                instance: entry.name.clone(),
                module: entry.module_type,
                problem,
            });
        }
        if let Some(reason) = entry.placement.name_problem() {
            problems.push(Problem::InvalidPlacement {
                instance: entry.name.clone(),
                placement: entry.placement.to_string(),
                reason,
            });
        }
    }
    problems
}

/// How errors name port `key`: `instance.field` and its type.
fn port_name(bp: &Blueprint, (i, p): PortKey) -> PortName {
    let instance = &bp.instances[i];
    PortName {
        instance: instance.name.clone(),
        port: instance.ports[p].field(),
        type_name: instance.ports[p].type_name(),
    }
}

/// The `#[config]` fields of `module` as (field, value as JSON text), as a blueprint file
/// holds them; empty for a module without file support. A value that does not serialize
/// leaves the list empty: the settings are shown to people, the run does not need them.
fn settings_of(module: &dyn streamwire_core::ModuleValue) -> Vec<(String, String)> {
    let Some(config) = module.as_config() else {
        return Vec::new();
    };
    match serde_json::to_value(config) {
        Ok(serde_json::Value::Object(fields)) => fields
            .into_iter()
            // The module's tag is its type, shown apart.
            .filter(|(field, _)| field != "type")
            .map(|(field, value)| (field, value.to_string()))
            .collect(),
        Ok(_) | Err(_) => Vec::new(),
    }
}
