//! Phase 5: the checks of a wired plan: QoS of every feed, lossy paths, keep-all inputs
//! that can hold back a fan-out, lossy pixels, wire names, unfed optional inputs. Each
//! is a problem or a note as the blueprint's `Report` settings say. Apart because it
//! reads the finished graph and changes nothing in it.

use std::collections::{BTreeMap, BTreeSet};

use streamwire_core::{Durability, History, MessageInfo, Qos, Reliability};

use super::matching::Matching;
use super::ports::Ports;
use super::wiring::Wired;
use super::{PortKey, port_name};
use crate::blueprint::Blueprint;
use crate::error::Problem;
use crate::plan::Note;
use crate::settings::Report;

/// QoS of every feed, lossy pixels, wire names, unfed optional inputs: problems for
/// what is an error, notes (and log lines with `Warn`) for the rest.
pub(super) fn check(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    wired: &Wired,
    problems: &mut Vec<Problem>,
) -> Vec<Note> {
    let mut notes = Vec::new();
    check_qos(bp, ports, matching, problems, &mut notes);
    check_lossy_path(bp, ports, matching, problems, &mut notes);
    check_blocking_fan_out(bp, ports, matching, &mut notes);

    // Lossy inputs: listed always; logged with Warn; errors with Error.
    for (key, note) in &wired.lossy {
        if let Note::LossyPixels {
            stream,
            codec,
            fidelity,
            ..
        } = note
        {
            match bp.settings.lossy_pixels {
                Report::Ignore => {}
                Report::Warn if first_time(&note.to_string()) => tracing::warn!(
                    stream = %stream,
                    codec,
                    "{note}: for exact pixels mark the input `#[port(lossless)]` (its link \
                     stays raw) or set `streams.{stream}.compression=off`; \
                     `lossy_pixels=ignore` keeps this to the plan's notes"
                ),
                Report::Warn => {}
                Report::Error => problems.push(Problem::LossyPixels {
                    input: port_name(bp, *key),
                    stream: stream.clone(),
                    codec,
                    fidelity: fidelity.to_string(),
                }),
            }
        }
        notes.push(note.clone());
    }

    if bp.settings.unfed_optional == Report::Warn {
        for note in &matching.unfed_optional {
            tracing::warn!("{note}");
        }
    }
    notes.extend(matching.unfed_optional.iter().cloned());

    check_wire_names(ports, wired, problems);
    notes
}

/// Whether this process has not logged `warning` yet: a command builds its plan more
/// than once (`run --record` three times), and a warning said once per run is read.
fn first_time(warning: &str) -> bool {
    static SAID: parking_lot::Mutex<BTreeSet<String>> = parking_lot::Mutex::new(BTreeSet::new());
    SAID.lock().insert(warning.to_owned())
}

/// What keeps output QoS `output` from satisfying input QoS `input`, as ROS 2 matches
/// them: a best-effort output cannot feed a reliable input, a volatile output cannot
/// feed a transient-local input. Queue depths may differ.
pub(crate) fn qos_mismatches(output: &Qos, input: &Qos) -> Vec<String> {
    let mut reasons = Vec::new();
    if output.reliability == Reliability::BestEffort && input.reliability == Reliability::Reliable {
        reasons.push(
            "the output is best_effort (it may drop messages) and the input wants reliable \
             delivery"
                .to_owned(),
        );
    }
    if output.durability == Durability::Volatile && input.durability == Durability::TransientLocal {
        reasons.push(
            "the output is volatile (it keeps nothing for late joiners) and the input wants \
             transient_local"
                .to_owned(),
        );
    }
    reasons
}

fn check_qos(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Note>,
) {
    for (&to, feed) in &matching.feeds {
        let (output, input) = (ports.get(feed.from), ports.get(to));
        let reasons = qos_mismatches(&output.qos, &input.qos);
        if reasons.is_empty() {
            continue;
        }
        if bp.settings.incompatible_qos == Report::Error {
            problems.push(Problem::IncompatibleQos {
                stream: output.stream.clone(),
                output: port_name(bp, feed.from),
                output_qos: output.qos,
                output_origin: output.qos_origin,
                input: port_name(bp, to),
                input_qos: input.qos,
                input_origin: input.qos_origin,
                reasons,
            });
            continue;
        }
        let short =
            |key: PortKey| format!("{}.{}", bp.instances[key.0].name, ports.info(key).field());
        let note = Note::IncompatibleQos {
            output: short(feed.from),
            input: short(to),
            stream: output.stream.clone(),
            reasons,
        };
        if bp.settings.incompatible_qos == Report::Warn {
            tracing::warn!("{note}");
        }
        notes.push(note);
    }
}

/// A `keep_all` input fed from another process by a `best_effort` output: every queue on
/// the way keeps all for it, but the wire may lose what nothing resends. (A reliable
/// input there is already an incompatible QoS.)
fn check_lossy_path(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Note>,
) {
    for (&to, feed) in &matching.feeds {
        let (output, input) = (ports.get(feed.from), ports.get(to));
        let crosses = bp.instances[feed.from.0].placement != bp.instances[to.0].placement;
        let lossy = crosses
            && input.qos.history == History::KeepAll
            && input.qos.reliability == Reliability::BestEffort
            && output.qos.reliability == Reliability::BestEffort;
        if !lossy {
            continue;
        }
        match bp.settings.lossy_path {
            Report::Error => problems.push(Problem::LossyPath {
                stream: output.stream.clone(),
                output: port_name(bp, feed.from),
                input: port_name(bp, to),
            }),
            report => {
                let short = |key: PortKey| {
                    format!("{}.{}", bp.instances[key.0].name, ports.info(key).field())
                };
                let note = Note::LossyPath {
                    output: short(feed.from),
                    input: short(to),
                    stream: output.stream.clone(),
                };
                if report == Report::Warn {
                    tracing::warn!("{note}");
                }
                notes.push(note);
            }
        }
    }
}

/// A keep-all input on a stream with other consumers: listed (and logged) so that a
/// stalled consumer holding back the others is not a surprise at run time.
fn check_blocking_fan_out(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    notes: &mut Vec<Note>,
) {
    let mut consumers: BTreeMap<PortKey, Vec<PortKey>> = BTreeMap::new();
    for (&to, feed) in &matching.feeds {
        consumers.entry(feed.from).or_default().push(to);
    }
    for (from, inputs) in consumers {
        if inputs.len() < 2 {
            continue;
        }
        for &input in &inputs {
            if ports.get(input).qos.history != History::KeepAll {
                continue;
            }
            let note = Note::BlockingFanOut {
                input: format!(
                    "{}.{}",
                    bp.instances[input.0].name,
                    ports.info(input).field()
                ),
                stream: ports.get(from).stream.clone(),
                others: inputs.len() - 1,
            };
            tracing::warn!("{note}");
            notes.push(note);
        }
    }
}

/// Two message types with one wire name: received bytes could not be told apart.
fn check_wire_names(ports: &Ports, wired: &Wired, problems: &mut Vec<Problem>) {
    let mut messages: Vec<MessageInfo> = Vec::new();
    for key in ports.keys() {
        let info = ports.info(key);
        messages.push(info.message());
        if let Some(codec) = info.payload_form().codec() {
            messages.push(codec.encoded());
        }
    }
    messages.extend(wired.codec_nodes.iter().map(|c| c.codec.encoded()));
    let mut by_name: BTreeMap<&'static str, Vec<MessageInfo>> = BTreeMap::new();
    for message in messages {
        let same = by_name.entry(message.name()).or_default();
        if !same.contains(&message) {
            same.push(message);
        }
    }
    for (name, types) in by_name {
        if let [first, second, ..] = types.as_slice() {
            problems.push(Problem::DuplicateWireName {
                name,
                types: [first.rust_name(), second.rust_name()],
            });
        }
    }
}
