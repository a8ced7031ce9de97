//! Build errors: what is wrong with a blueprint, naming instances, ports and types, and
//! worded like the compile-time errors of explicit connections.

use std::fmt;

use streamwire_core::{Direction, Qos};

use crate::plan::QosOrigin;
use crate::settings::Locality;

/// One port of one instance, as errors show it: `front_cam.color_image`
/// (`Out<Compressed<Image>>`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortName {
    /// The instance's full name (namespaces included).
    pub instance: String,
    /// The port's field.
    pub port: &'static str,
    /// The port's type as written in the module.
    pub type_name: &'static str,
}

impl fmt::Display for PortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}.{}` ({})", self.instance, self.port, self.type_name)
    }
}

/// Everything wrong with a blueprint, found in one build.
///
/// `Debug` prints the same text as `Display`, so `fn main() -> Result<(), BuildError>`
/// shows the readable errors (as `anyhow` does), not a struct dump.
#[derive(thiserror::Error)]
#[error("{}", render_all(problems))]
pub struct BuildError {
    /// The problems, in a stable order.
    pub problems: Vec<Problem>,
}

impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A stream an unfed input probably meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSuggestion {
    /// The stream to remap the input to.
    pub stream: String,
    /// What to give `remap` for it: the stream, made absolute (`/right/color_image`)
    /// when the input's instance is in a namespace.
    pub remap: String,
    /// Why this one.
    pub reason: SuggestionReason,
}

/// Why a stream is suggested.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SuggestionReason {
    /// Its name is a likely typo away (`pointz` for `points`).
    CloseName,
    /// It has the same name under another namespace (`color_image` for `left/color_image`).
    OtherNamespace,
    /// It is the only produced stream of the input's message type.
    OnlyStreamOfType {
        /// The message type.
        message: &'static str,
    },
    /// The input's own stream has a producer, but autoconnect is off.
    AutoconnectOff,
}

fn render_all(problems: &[Problem]) -> String {
    match problems {
        [one] => format!("blueprint error: {one}"),
        many => {
            let mut out = format!("the blueprint has {} errors", many.len());
            for (i, problem) in many.iter().enumerate() {
                out.push_str(&format!("\n\nerror {}: {problem}", i + 1));
            }
            out
        }
    }
}

/// One thing wrong with a blueprint.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// An instance's settings are outside the ranges its module declares, or its
    /// module's own check refuses them together.
    InvalidConfig {
        /// The instance.
        instance: String,
        /// Its module type.
        module: &'static str,
        /// What is wrong.
        problem: streamwire_core::ConfigProblem,
    },
    /// A placement's host or process name cannot be a chunk of a zenoh key expression.
    InvalidPlacement {
        /// The instance placed.
        instance: String,
        /// The placement, `host/process`.
        placement: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A global key's value that its row cannot set (a [`GlobalValues`](crate::keys::GlobalValues)
    /// holds only values its rows read, so this is a bug, reported rather than dropped).
    InvalidGlobal {
        /// The key.
        key: String,
        /// Its value, as text.
        value: String,
        /// Why it cannot be set.
        reason: String,
    },
    /// An instance or namespace name breaks the naming rules.
    InvalidInstanceName {
        /// The name given.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// Two instances have the same full name.
    DuplicateInstance {
        /// The name.
        name: String,
        /// Module type of the first instance.
        first_module: &'static str,
        /// Module type of the second.
        second_module: &'static str,
    },
    /// A stream name (from a module or a remap) breaks the naming rules.
    InvalidStreamName {
        /// The port it names.
        port: PortName,
        /// The name given.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A setting names an instance the blueprint does not have.
    UnknownInstance {
        /// The name given.
        name: String,
        /// What named it, as a user reads it: "a placement", "a stream remap".
        context: &'static str,
        /// A close existing name.
        suggestion: Option<String>,
    },
    /// `remap_stream` names a stream the instance has no port for.
    UnknownPortStream {
        /// The instance.
        instance: String,
        /// The stream given.
        stream: String,
        /// The streams its ports use.
        known: Vec<String>,
    },
    /// Two ports of one direction of one instance resolve to the same stream.
    DuplicatePortStream {
        /// The instance.
        instance: String,
        /// Input or output.
        direction: Direction,
        /// The stream.
        stream: String,
        /// The two ports.
        ports: [PortName; 2],
    },
    /// A port handle or instance this blueprint does not have (from another blueprint,
    /// or made by hand) was used.
    ForeignHandle {
        /// What it was used for: `connect`, `remap`, `place`.
        context: &'static str,
    },
    /// A connection given by names (`connect_named`, a blueprint file's `connect:`)
    /// that does not name an output and an input of one message type.
    BadNamedConnection {
        /// The output given, `instance.port`.
        from: String,
        /// The input given, `instance.port`.
        to: String,
        /// What is wrong, with what is valid.
        reason: String,
    },
    /// One stream, several producers.
    TwoProducers {
        /// The stream.
        stream: String,
        /// Its producers.
        producers: Vec<PortName>,
    },
    /// An output and an input share a stream (or an explicit connection) but not the
    /// message type.
    MessageMismatch {
        /// The stream.
        stream: String,
        /// The output.
        output: PortName,
        /// Its message type.
        output_message: &'static str,
        /// The input.
        input: PortName,
        /// Its message type.
        input_message: &'static str,
    },
    /// An input connected explicitly more than once.
    InputConnectedTwice {
        /// The input.
        input: PortName,
        /// The outputs connected to it.
        outputs: [PortName; 2],
    },
    /// An input nobody feeds.
    UnfedInput {
        /// The input.
        input: PortName,
        /// The stream it listens to.
        stream: String,
        /// A produced stream of the same message type it probably meant.
        suggestion: Option<StreamSuggestion>,
        /// True for an optional input (reported only when `unfed_optional` is `Error`).
        optional: bool,
    },
    /// A `lossless` input would receive lossy or downscaled pixels because a per-stream
    /// setting forces compression.
    LosslessConflict {
        /// The input.
        input: PortName,
        /// The stream.
        stream: String,
        /// The codec.
        codec: &'static str,
        /// What it does to pixels (`lossy`, `downscaled`).
        fidelity: String,
        /// The link's locality.
        locality: Locality,
    },
    /// An input receives lossy or downscaled pixels and `lossy_pixels` is `Error`.
    LossyPixels {
        /// The input.
        input: PortName,
        /// The stream.
        stream: String,
        /// The codec.
        codec: &'static str,
        /// What it does to pixels.
        fidelity: String,
    },
    /// A stream must be compressed but no codec is known for it.
    NoCodec {
        /// The stream.
        stream: String,
        /// Its producer.
        producer: PortName,
        /// Its message type.
        message: &'static str,
    },
    /// A per-stream codec is for another message type than the stream's.
    CodecForOtherMessage {
        /// The stream.
        stream: String,
        /// The codec.
        codec: &'static str,
        /// The message the codec carries.
        codec_message: &'static str,
        /// The stream's message.
        stream_message: &'static str,
    },
    /// Settings name a codec (as text: `codec=jpeg`) that is not among the codecs of the
    /// stream's message known to the stream (named by its ports, or registered).
    UnknownCodec {
        /// The stream.
        stream: String,
        /// The codec name, as given.
        codec: String,
        /// The stream's message.
        message: &'static str,
        /// The codec names the stream knows, comma separated (empty: none).
        known: String,
        /// A known name close to the one given.
        suggestion: Option<String>,
    },
    /// Codec parameters were refused by the codec.
    InvalidCodecParams {
        /// The stream.
        stream: String,
        /// The codec.
        codec: &'static str,
        /// The codec's reason.
        reason: String,
    },
    /// Codec parameters are set for a stream that has no codec (a plain `Out<M>` and no
    /// codec in its settings).
    ParamsWithoutCodec {
        /// The stream.
        stream: String,
        /// The parameters, as given.
        params: String,
        /// Its producer.
        producer: PortName,
        /// Its message type.
        message: &'static str,
    },
    /// Settings name a stream that no output produces.
    UnknownStreamSetting {
        /// The stream named.
        stream: String,
        /// A produced stream with a close name.
        suggestion: Option<String>,
    },
    /// An output's QoS cannot satisfy the input it feeds (and `incompatible_qos` is
    /// `Error`, the default).
    IncompatibleQos {
        /// The stream.
        stream: String,
        /// The output.
        output: PortName,
        /// Its effective QoS.
        output_qos: Qos,
        /// Where the output's QoS values came from.
        output_origin: QosOrigin,
        /// The input.
        input: PortName,
        /// Its effective QoS.
        input_qos: Qos,
        /// Where the input's QoS values came from.
        input_origin: QosOrigin,
        /// What does not match.
        reasons: Vec<String>,
    },
    /// A `keep_all` input is fed from another process by a `best_effort` output (and
    /// `lossy_path` is `Error`, the default).
    LossyPath {
        /// The stream.
        stream: String,
        /// The output.
        output: PortName,
        /// The input.
        input: PortName,
    },
    /// Two message types share one wire name, which decides how received bytes are
    /// deserialized.
    DuplicateWireName {
        /// The wire name.
        name: &'static str,
        /// The two Rust types.
        types: [&'static str; 2],
    },
    /// The name of an encoded stream (`color_image/compressed`) is also a produced stream.
    EncodedNameTaken {
        /// The stream being encoded.
        stream: String,
        /// The encoded stream's name.
        encoded: String,
        /// The output that already produces a stream of that name.
        producer: PortName,
    },
}

impl fmt::Display for Problem {
    #[expect(
        clippy::too_many_lines,
        reason = "one arm per problem kind, each the message a person reads: one match keeps \
                  every message beside its variant, in the enum's order"
    )]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::InvalidConfig {
                instance,
                module,
                problem,
            } => write!(f, "instance `{instance}` (`{module}`): {problem}"),
            Problem::InvalidPlacement {
                instance,
                placement,
                reason,
            } => write!(
                f,
                "instance `{instance}` is placed at `{placement}`, which cannot name a process: \
                 {reason}"
            ),
            Problem::InvalidGlobal { key, value, reason } => {
                write!(f, "global key `{key}` = `{value}` cannot be set: {reason}")
            }
            Problem::InvalidInstanceName { name, reason } => {
                write!(f, "invalid instance name `{name}`: {reason}")
            }
            Problem::DuplicateInstance {
                name,
                first_module,
                second_module,
            } => write!(
                f,
                "two instances are named `{name}` (a `{first_module}` and a `{second_module}`)\n  \
                 = note: instance names are unique in a blueprint; rename one, or add it in a \
                 namespace (`blueprint.namespace(\"left\").add(..)`)"
            ),
            Problem::InvalidStreamName { port, name, reason } => {
                write!(f, "invalid stream name `{name}` for {port}: {reason}")
            }
            Problem::UnknownInstance {
                name,
                context,
                suggestion,
            } => {
                write!(
                    f,
                    "{context} names instance `{name}`, which the blueprint does not have"
                )?;
                note_suggestion(f, suggestion.as_deref())
            }
            Problem::UnknownPortStream {
                instance,
                stream,
                known,
            } => write!(
                f,
                "a stream remap names stream `{stream}` of `{instance}`, which has no port on it\n  \
                 = note: its ports use: {}",
                quoted_list(known)
            ),
            Problem::DuplicatePortStream {
                instance,
                direction,
                stream,
                ports: [a, b],
            } => write!(
                f,
                "{a} and {b} are both {direction}s of stream `{stream}` in `{instance}`\n  \
                 = note: two {direction}s of one instance cannot share a stream; remap one of them"
            ),
            Problem::ForeignHandle { context } => write!(
                f,
                "`{context}` was given a port or instance this blueprint does not have\n  \
                 = note: handles are only valid in the blueprint whose `add` returned them"
            ),
            Problem::BadNamedConnection { from, to, reason } => {
                write!(f, "connection `{from}` -> `{to}`: {reason}")
            }
            Problem::TwoProducers { stream, producers } => {
                let names: Vec<String> = producers.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "stream `{stream}` has {} producers: {}\n  \
                     = note: a stream has one producer; remap all but one \
                     (`blueprint.remap(instance.port, \"new_name\")`), or add them in namespaces",
                    producers.len(),
                    and_list(&names)
                )
            }
            Problem::MessageMismatch {
                stream,
                output,
                output_message,
                input,
                input_message,
            } => write!(
                f,
                "an output of `{output_message}` cannot feed an input of `{input_message}`: \
                 {output} and {input} meet on stream `{stream}`\n  \
                 = note: ports connect only when they carry the same message type; remap one \
                 of them to another stream"
            ),
            Problem::InputConnectedTwice {
                input,
                outputs: [a, b],
            } => write!(
                f,
                "input {input} is connected twice: from {a} and from {b}\n  \
                 = note: an input has one producer; fan-in needs one input per producer"
            ),
            Problem::UnfedInput {
                input,
                stream,
                suggestion,
                optional,
            } => {
                if let Some(StreamSuggestion {
                    reason: SuggestionReason::AutoconnectOff,
                    ..
                }) = suggestion
                {
                    return write!(
                        f,
                        "input {input} is fed by nobody: no `connect` reaches it, and \
                         autoconnect is off\n  \
                         = help: stream `{stream}` has a producer: call \
                         `blueprint.autoconnect()`, or connect the two ports"
                    );
                }
                write!(
                    f,
                    "input {input} is fed by nobody: no output produces stream `{stream}`"
                )?;
                match suggestion {
                    Some(StreamSuggestion {
                        stream: s,
                        remap,
                        reason,
                    }) => {
                        let why = match reason {
                            SuggestionReason::CloseName => String::new(),
                            SuggestionReason::OtherNamespace => {
                                " (the same name in another namespace)".to_owned()
                            }
                            SuggestionReason::OnlyStreamOfType { message } => {
                                format!(" (the only stream of `{message}`)")
                            }
                            SuggestionReason::AutoconnectOff => String::new(),
                        };
                        write!(
                            f,
                            "\n  = help: did you mean `{s}`{why}? remap it: \
                             `blueprint.remap(instance.{}, \"{remap}\")`",
                            input.port
                        )
                    }
                    None if *optional => write!(
                        f,
                        "\n  = note: the input is optional, and `unfed_optional` is set to `Error`"
                    ),
                    None => write!(
                        f,
                        "\n  = note: connect it, remap it to a produced stream, or mark it \
                         `#[port(optional)]`"
                    ),
                }
            }
            Problem::LosslessConflict {
                input,
                stream,
                codec,
                fidelity,
                locality,
            } => write!(
                f,
                "input {input} is lossless, but stream `{stream}` is set to compress with \
                 `{codec}` ({fidelity}) on its {locality} link\n  \
                 = note: a lossless input never receives lossy or downscaled pixels; set the \
                 stream's compression to `auto` (which keeps this link raw) or `off`, or \
                 choose a lossless codec"
            ),
            Problem::LossyPixels {
                input,
                stream,
                codec,
                fidelity,
            } => write!(
                f,
                "input {input} receives {fidelity} pixels of stream `{stream}`, decoded from \
                 `{codec}`\n  \
                 = note: `lossy_pixels` is set to `Error`; mark the input `#[port(lossless)]` \
                 to keep its link raw, or turn the stream's compression off"
            ),
            Problem::NoCodec {
                stream,
                producer,
                message,
            } => write!(
                f,
                "stream `{stream}` is set to compress, but its output {producer} names no codec\n  \
                 = note: declare it `Out<Compressed<{message}>>`, or give the stream a codec: \
                 `StreamSettings::new().codec::<{message}, SomeCodec>()`"
            ),
            Problem::CodecForOtherMessage {
                stream,
                codec,
                codec_message,
                stream_message,
            } => write!(
                f,
                "codec `{codec}` set for stream `{stream}` carries `{codec_message}`, but the \
                 stream carries `{stream_message}`"
            ),
            Problem::UnknownCodec {
                stream,
                codec,
                message,
                known,
                suggestion,
            } => write!(
                f,
                "stream `{stream}` asks for codec `{codec}`, but no codec of that name is known \
                 for `{message}` on this stream (known: {}){}\n  \
                 = note: a codec given by name must be named by a port of the stream \
                 (`Out<Compressed<{message}, C>>`, `In<Compressed<{message}, C>>`) or registered \
                 with `register_codec!({message}, C)`; or name the codec's type: \
                 `StreamSettings::new().codec::<{message}, C>()`",
                if known.is_empty() {
                    "none"
                } else {
                    known.as_str()
                },
                suggestion
                    .as_ref()
                    .map(|s| format!("; did you mean `{s}`?"))
                    // infallible: no close name is no hint, not a failure
                    .unwrap_or_default()
            ),
            Problem::InvalidCodecParams {
                stream,
                codec,
                reason,
            } => write!(f, "codec `{codec}` of stream `{stream}`: {reason}"),
            Problem::ParamsWithoutCodec {
                stream,
                params,
                producer,
                message,
            } => write!(
                f,
                "stream `{stream}` sets codec parameters `{params}`, but its output {producer} \
                 names no codec\n  \
                 = note: declare it `Out<Compressed<{message}>>`, or give the stream a codec: \
                 `StreamSettings::new().codec::<{message}, SomeCodec>()`"
            ),
            Problem::UnknownStreamSetting { stream, suggestion } => {
                write!(
                    f,
                    "settings name stream `{stream}`, which no output produces"
                )?;
                note_suggestion(f, suggestion.as_deref())
            }
            Problem::IncompatibleQos {
                stream,
                output,
                output_qos,
                output_origin,
                input,
                input_qos,
                input_origin,
                reasons,
            } => write!(
                f,
                "incompatible qos: {output} feeds {input} on stream `{stream}`, but {}\n  \
                 = note: the output is {output_qos} ({output_origin}); the input is {input_qos} \
                 ({input_origin})\n  \
                 = help: set the same reliability and durability on both in `#[port(..)]`, or \
                 let it through with `blueprint.incompatible_qos(Report::Warn)`",
                reasons.join(", and ")
            ),
            Problem::LossyPath {
                stream,
                output,
                input,
            } => write!(
                f,
                "lossy path: {output} feeds {input} on stream `{stream}` from another process, \
                 but the output is best_effort and the input keeps all\n  \
                 = note: every queue on the way keeps all for it, but a best_effort wire may \
                 lose frames and nothing resends them (each would be counted as lost_on_wire \
                 on the input's row)\n  \
                 = help: make the output `#[port(reliable)]`, place both in one process, or \
                 let it through with `blueprint.lossy_path(Report::Warn)`"
            ),
            Problem::DuplicateWireName {
                name,
                types: [a, b],
            } => write!(
                f,
                "message types `{a}` and `{b}` have the same wire name `{name}`\n  \
                 = note: the wire name decides how received bytes are deserialized; give one \
                 of them another `#[message(name = \"...\")]`"
            ),
            Problem::EncodedNameTaken {
                stream,
                encoded,
                producer,
            } => write!(
                f,
                "stream `{stream}` is encoded as `{encoded}`, but {producer} already produces \
                 a stream of that name\n  = note: remap one of the two streams"
            ),
        }
    }
}

fn note_suggestion(f: &mut fmt::Formatter<'_>, suggestion: Option<&str>) -> fmt::Result {
    match suggestion {
        Some(s) => write!(f, "\n  = help: did you mean `{s}`?"),
        None => Ok(()),
    }
}

fn quoted_list(items: &[String]) -> String {
    if items.is_empty() {
        return "nothing".to_owned();
    }
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
