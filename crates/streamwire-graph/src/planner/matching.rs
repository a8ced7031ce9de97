//! Phase 2: which output feeds each input: explicit connections first, then autoconnect
//! by stream name and message type; an unfed input gets a suggestion of the stream it
//! probably meant. Apart because it is the one phase that reads the connections.

use std::collections::{BTreeMap, BTreeSet};

use streamwire_core::{PayloadForm, PortInfo};

use super::ports::Ports;
use super::{PortKey, port_name};
use crate::blueprint::Blueprint;
use crate::error::{Problem, StreamSuggestion, SuggestionReason};
use crate::names;
use crate::plan::Note;
use crate::settings::Report;

/// Which output feeds an input.
#[derive(Clone, Copy)]
pub(super) struct Feed {
    pub(super) from: PortKey,
    pub(super) explicit: bool,
}

pub(super) struct Matching {
    /// The producers of each stream.
    pub(super) producers: BTreeMap<String, Vec<PortKey>>,
    /// Input -> its feed.
    pub(super) feeds: BTreeMap<PortKey, Feed>,
    /// Optional inputs nobody feeds.
    pub(super) unfed_optional: Vec<Note>,
}

impl Matching {
    /// The consumers of `output`, in input order.
    pub(super) fn consumers(&self, output: PortKey) -> impl Iterator<Item = (PortKey, bool)> + '_ {
        self.feeds
            .iter()
            .filter(move |(_, feed)| feed.from == output)
            .map(|(&to, feed)| (to, feed.explicit))
    }
}

/// Explicit connections first, then autoconnect; reports two producers of one stream,
/// message mismatches and inputs nobody feeds.
pub(super) fn match_ports(bp: &Blueprint, ports: &Ports, problems: &mut Vec<Problem>) -> Matching {
    let mut producers: BTreeMap<String, Vec<PortKey>> = BTreeMap::new();
    for key in ports.outputs() {
        producers
            .entry(ports.stream(key).to_owned())
            .or_default()
            .push(key);
    }
    for (stream, outputs) in &producers {
        if outputs.len() > 1 {
            problems.push(Problem::TwoProducers {
                stream: stream.clone(),
                producers: outputs.iter().map(|&k| port_name(bp, k)).collect(),
            });
        }
    }

    let mismatch = |from: PortKey, to: PortKey| Problem::MessageMismatch {
        stream: ports.stream(from).to_owned(),
        output: port_name(bp, from),
        output_message: ports.info(from).message().rust_name(),
        input: port_name(bp, to),
        input_message: ports.info(to).message().rust_name(),
    };

    let mut feeds: BTreeMap<PortKey, Feed> = BTreeMap::new();
    // Inputs whose explicit connection failed: reported once, as that failure.
    let mut attempted: BTreeSet<PortKey> = bp.failed_inputs.clone();
    for connection in &bp.connections {
        let (from, to) = (
            (connection.from.0 as usize, connection.from.1),
            (connection.to.0 as usize, connection.to.1),
        );
        attempted.insert(to);
        if let Some(first) = feeds.get(&to) {
            problems.push(Problem::InputConnectedTwice {
                input: port_name(bp, to),
                outputs: [port_name(bp, first.from), port_name(bp, from)],
            });
            continue;
        }
        // The compiler checked the message types of explicit connections; a hand-written
        // `Module` impl could still lie about them, so check again.
        if ports.info(from).message() != ports.info(to).message() {
            problems.push(mismatch(from, to));
            continue;
        }
        feeds.insert(
            to,
            Feed {
                from,
                explicit: true,
            },
        );
    }

    let mut unfed_optional = Vec::new();
    for key in ports.inputs() {
        if attempted.contains(&key) {
            continue;
        }
        let info = ports.info(key);
        let stream = ports.stream(key);
        let producer = if bp.autoconnect {
            find_producer(&producers, stream, info, key.0)
        } else {
            None
        };
        match producer {
            Some(Some(from)) if ports.info(from).message() == info.message() => {
                feeds.insert(
                    key,
                    Feed {
                        from,
                        explicit: false,
                    },
                );
            }
            Some(Some(from)) => problems.push(mismatch(from, key)),
            // Several producers: already reported.
            Some(None) => {}
            // A bad stream name: already reported.
            None if ports.invalid.contains(&key) => {}
            None => {
                let optional = info.attrs().optional;
                let instance = &bp.instances[key.0];
                if optional {
                    unfed_optional.push(Note::UnfedOptional {
                        input: format!("{}.{}", instance.name, info.field()),
                        stream: stream.to_owned(),
                    });
                }
                if !optional || bp.settings.unfed_optional == Report::Error {
                    problems.push(Problem::UnfedInput {
                        input: port_name(bp, key),
                        stream: stream.to_owned(),
                        suggestion: suggest_stream(bp, ports, &producers, key),
                        optional,
                    });
                }
            }
        }
    }
    Matching {
        producers,
        feeds,
        unfed_optional,
    }
}

/// The producer an input autoconnects to: `Some(Some(port))`, `Some(None)` when the
/// stream has several producers (reported elsewhere), `None` when it has none. A byte
/// input named `<stream>/<suffix>` (`color_image/compressed`) listens to `<stream>`.
/// An instance never feeds its own input (a filter with one name in and out).
fn find_producer(
    producers: &BTreeMap<String, Vec<PortKey>>,
    stream: &str,
    input: &PortInfo,
    instance: usize,
) -> Option<Option<PortKey>> {
    let mut candidates: Vec<&str> = vec![stream];
    if let PayloadForm::Codec(codec) = input.payload_form()
        && let Some(base) = stream.strip_suffix(&format!("/{}", codec.stream_suffix()))
    {
        candidates.push(base);
    }
    for name in candidates {
        if let Some(outputs) = producers.get(name) {
            let others: Vec<PortKey> = outputs
                .iter()
                .copied()
                .filter(|o| o.0 != instance)
                .collect();
            return match others.as_slice() {
                [] => None,
                [one] => Some(Some(*one)),
                _ => Some(None),
            };
        }
    }
    None
}

/// A stream an unfed input probably meant, among the streams of its message type (by
/// the names it would listen to: a byte input also under `<stream>/<suffix>`): a close
/// name, else the same name under another namespace, else the only stream of its type.
fn suggest_stream(
    bp: &Blueprint,
    ports: &Ports,
    producers: &BTreeMap<String, Vec<PortKey>>,
    input: PortKey,
) -> Option<StreamSuggestion> {
    let info = ports.info(input);
    let stream = ports.stream(input);
    let suffix = info.payload_form().codec().map(|c| c.stream_suffix());
    if !bp.autoconnect && producers.contains_key(stream) {
        return Some(StreamSuggestion {
            stream: stream.to_owned(),
            remap: stream.to_owned(),
            reason: SuggestionReason::AutoconnectOff,
        });
    }
    let same_type: Vec<&str> = producers
        .iter()
        .filter(|(_, outputs)| {
            outputs
                .iter()
                .any(|&o| o.0 != input.0 && ports.info(o).message() == info.message())
        })
        .filter(|(s, _)| s.as_str() != stream)
        .map(|(s, _)| s.as_str())
        .collect();
    // What the input could write to listen to each of them.
    let names: Vec<String> = same_type
        .iter()
        .flat_map(|s| {
            let encoded = suffix.map(|suffix| format!("{s}/{suffix}"));
            std::iter::once((*s).to_owned()).chain(encoded)
        })
        .collect();
    let namespace = &bp.instances[input.0].namespace;
    let suggestion = |stream: &str, reason| {
        Some(StreamSuggestion {
            stream: stream.to_owned(),
            remap: if namespace.is_empty() {
                stream.to_owned()
            } else {
                format!("/{stream}")
            },
            reason,
        })
    };
    if let Some(close) = names::did_you_mean(stream, names.iter().map(String::as_str)) {
        return suggestion(close, SuggestionReason::CloseName);
    }
    // The name the input gave, without the instance's namespace.
    let relative = stream
        .strip_prefix(namespace.as_str())
        .and_then(|s| s.strip_prefix('/'))
        .unwrap_or(stream);
    let tail = format!("/{relative}");
    let elsewhere: Vec<&String> = names
        .iter()
        .filter(|n| n.as_str() != stream && (n.as_str() == relative || n.ends_with(&tail)))
        .collect();
    if let [one] = elsewhere.as_slice() {
        return suggestion(one, SuggestionReason::OtherNamespace);
    }
    if let [only] = same_type.as_slice() {
        let only = match suffix {
            Some(suffix) => format!("{only}/{suffix}"),
            None => (*only).to_owned(),
        };
        return suggestion(
            &only,
            SuggestionReason::OnlyStreamOfType {
                message: info.message().rust_name(),
            },
        );
    }
    None
}
