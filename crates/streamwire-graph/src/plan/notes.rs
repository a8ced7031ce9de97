//! What a plan wants a person to know without failing the build (lossy pixels, unfed
//! optional inputs, QoS let through): listed in the plan, logged with `Warn`, a build
//! error with `Error`. Apart because the planner's checks make them and `Display` prints
//! them, each on its own line.

use std::fmt;

use streamwire_core::Fidelity;

/// Something the plan wants a person to know: listed in the plan, logged with `Warn`,
/// a build error with `Error`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// An input receives lossy or downscaled pixels.
    LossyPixels {
        /// `instance.port`.
        input: String,
        /// The stream.
        stream: String,
        /// The codec.
        codec: &'static str,
        /// `lossy`, `downscaled`, or both.
        fidelity: Fidelity,
    },
    /// An optional input that nobody feeds.
    UnfedOptional {
        /// `instance.port`.
        input: String,
        /// The stream it listens to.
        stream: String,
    },
    /// An output's QoS cannot satisfy the input it feeds (kept only when
    /// `incompatible_qos` is not `Error`).
    IncompatibleQos {
        /// `instance.port` of the output.
        output: String,
        /// `instance.port` of the input.
        input: String,
        /// The stream.
        stream: String,
        /// What does not match, e.g. `the output is best_effort, the input wants reliable`.
        reasons: Vec<String>,
    },
    /// A `keep_all` input fed from another process by a `best_effort` output (kept only
    /// when `lossy_path` is not `Error`).
    LossyPath {
        /// `instance.port` of the output.
        output: String,
        /// `instance.port` of the input.
        input: String,
        /// The stream.
        stream: String,
    },
    /// A `keep_all` input shares its stream with other consumers: when its queue is full
    /// it holds the producer back (up to the runtime's keep-all deadline per message),
    /// and so delays the others too.
    BlockingFanOut {
        /// `instance.port` of the keep-all input.
        input: String,
        /// The stream.
        stream: String,
        /// How many other consumers the stream has.
        others: usize,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::LossyPixels {
                input,
                stream,
                codec,
                fidelity,
            } => write!(
                f,
                "lossy pixels: {input} receives {fidelity} pixels of `{stream}` (decoded from {codec})"
            ),
            Note::UnfedOptional { input, stream } => write!(
                f,
                "unfed optional input: {input} listens to `{stream}`, which no output produces"
            ),
            Note::IncompatibleQos {
                output,
                input,
                stream,
                reasons,
            } => write!(
                f,
                "incompatible qos: {output} feeds {input} on `{stream}`, but {}",
                reasons.join(", and ")
            ),
            Note::LossyPath {
                output,
                input,
                stream,
            } => write!(
                f,
                "lossy path: {output} feeds keep_all {input} on `{stream}` from another \
                 process over a best_effort wire, which may lose frames"
            ),
            Note::BlockingFanOut {
                input,
                stream,
                others,
            } => write!(
                f,
                "blocking input on a fan-out: {input} keeps all of `{stream}`; when its queue is \
                 full it holds the producer back (up to the keep-all deadline), delaying the \
                 other {others} consumer{}",
                if *others == 1 { "" } else { "s" }
            ),
        }
    }
}
