//! The knobs of a blueprint: placement, compression, and how loudly to report.
//!
//! Every setting parses (`FromStr`) what its `Display` prints and serializes with serde to
//! that text, so the command line, blueprint files and `-o key=value` share one parser
//! (see [`streamwire_core::text`]). A refusal lists the values that would be accepted.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use streamwire_core::text::{ParseError, is_keyword, parse_keyword};
use streamwire_core::{Codec, CodecInfo, CodecParams, Message, MessageInfo};

/// Where an instance runs: a process on a host. Instances in one process exchange
/// messages zero-copy; between processes and hosts they go through the transport.
///
/// ```
/// # use streamwire::prelude::*;
/// let viewer = Placement::process("ui");
/// assert_eq!(viewer.host(), "localhost");
/// let remote = Placement::process("mapper").on_host("base_station");
/// assert_eq!(remote.to_string(), "base_station/mapper");
/// assert_eq!("base_station/mapper".parse::<Placement>()?, remote);
/// assert_eq!("ui".parse::<Placement>()?, viewer);
/// # Ok::<(), streamwire::text::ParseError>(())
/// ```
///
/// Text: `host/process`, or `process` alone on the default host.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Placement {
    host: String,
    process: String,
}

impl Placement {
    /// The host of instances that are not placed explicitly.
    pub const DEFAULT_HOST: &'static str = "localhost";
    /// The process of instances that are not placed explicitly.
    pub const DEFAULT_PROCESS: &'static str = "main";

    /// Process `process` on the default host.
    pub fn process(process: impl Into<String>) -> Placement {
        Placement {
            host: Self::DEFAULT_HOST.to_owned(),
            process: process.into(),
        }
    }

    /// The same process name, on `host`.
    pub fn on_host(mut self, host: impl Into<String>) -> Placement {
        self.host = host.into();
        self
    }

    /// The host's name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The process's name (unique within its host).
    pub fn process_name(&self) -> &str {
        &self.process
    }

    /// Why the host or process name cannot be used, if one cannot: each is one chunk of
    /// the zenoh key expressions a distributed run declares, so neither may be empty or
    /// hold a character zenoh reserves (`/`, `*`, `$`, `#`, `?`, a leading `@`).
    pub fn name_problem(&self) -> Option<String> {
        let host = streamwire_names::key_chunk_problem(&self.host)
            .map(|p| format!("host `{}`: {p}", self.host));
        host.or_else(|| {
            streamwire_names::key_chunk_problem(&self.process)
                .map(|p| format!("process `{}`: {p}", self.process))
        })
    }

    /// How a message from an instance placed at `self` travels to one placed at `other`.
    pub fn locality_to(&self, other: &Placement) -> Locality {
        if self.host != other.host {
            Locality::CrossHost
        } else if self.process != other.process {
            Locality::SameHost
        } else {
            Locality::InProcess
        }
    }
}

impl Default for Placement {
    fn default() -> Self {
        Placement::process(Self::DEFAULT_PROCESS)
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.host, self.process)
    }
}

impl FromStr for Placement {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let trimmed = text.trim();
        let (host, process) = trimmed
            .split_once('/')
            .unwrap_or((Self::DEFAULT_HOST, trimmed));
        if let Some(problem) = Placement::process(process).on_host(host).name_problem() {
            return Err(ParseError::invalid(
                "placement",
                trimmed,
                format!("expected `host/process` or `process`: {problem}"),
            ));
        }
        Ok(Placement::process(process).on_host(host))
    }
}

streamwire_core::__serde_as_text!(Placement);

/// How far apart the two ends of a link are. Text: `in-process`, `same-host`,
/// `cross-host`.
///
/// Non-exhaustive: a transport may add kinds of links (say, over a radio link).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Locality {
    /// One process: zero-copy delivery of the same `Arc`ed message.
    InProcess,
    /// Two processes on one host.
    SameHost,
    /// Two hosts.
    CrossHost,
}

impl fmt::Display for Locality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Locality::InProcess => "in-process",
            Locality::SameHost => "same-host",
            Locality::CrossHost => "cross-host",
        })
    }
}

impl Locality {
    /// Every locality, nearest first.
    pub const ALL: [Locality; 3] = [Locality::InProcess, Locality::SameHost, Locality::CrossHost];

    const KEYWORDS: [(&'static str, Locality); 3] = [
        ("in-process", Locality::InProcess),
        ("same-host", Locality::SameHost),
        ("cross-host", Locality::CrossHost),
    ];
}

impl FromStr for Locality {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        parse_keyword("locality", text, &Locality::KEYWORDS)
    }
}

streamwire_core::__serde_as_text!(Locality);

/// What a distributed run does when one of its worker processes dies (exits with a
/// failure or is killed): stop the run (the default), or start the worker again.
///
/// ```
/// # use streamwire_graph::Supervision;
/// assert_eq!("restart:3".parse::<Supervision>()?, Supervision::Restart { max: 3 });
/// assert_eq!("restart".parse::<Supervision>()?, Supervision::Restart { max: 5 });
/// assert_eq!(Supervision::default().to_string(), "stop");
/// # Ok::<(), streamwire_core::text::ParseError>(())
/// ```
///
/// Text: `stop`, `restart` (at most 5 times), `restart:N`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Supervision {
    /// A worker that dies stops the whole run; the report names it and its exit status.
    #[default]
    Stop,
    /// A worker that dies is started again (it rejoins the run and delivery resumes), at
    /// most `max` times over the run; the next death stops the run.
    Restart {
        /// Restarts allowed over the whole run.
        max: u32,
    },
}

impl Supervision {
    /// Restarts allowed by a bare `restart`.
    pub const DEFAULT_RESTARTS: u32 = 5;
}

impl fmt::Display for Supervision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Supervision::Stop => f.write_str("stop"),
            Supervision::Restart { max } => write!(f, "restart:{max}"),
        }
    }
}

impl FromStr for Supervision {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let (word, count) = match text.split_once(':') {
            Some((word, count)) => (word, Some(count)),
            None => (text, None),
        };
        #[derive(Clone, Copy)]
        enum Word {
            Stop,
            Restart,
        }
        match (
            parse_keyword(
                "supervision",
                word,
                &[("stop", Word::Stop), ("restart", Word::Restart)],
            )?,
            count,
        ) {
            (Word::Stop, None) => Ok(Supervision::Stop),
            (Word::Stop, Some(_)) => Err(ParseError::invalid(
                "supervision",
                text,
                "`stop` takes no count: write `stop`, or `restart:N`",
            )),
            (Word::Restart, None) => Ok(Supervision::Restart {
                max: Self::DEFAULT_RESTARTS,
            }),
            (Word::Restart, Some(count)) => count
                .trim()
                .parse()
                .map(|max| Supervision::Restart { max })
                .map_err(|_| {
                    ParseError::invalid(
                        "supervision",
                        text,
                        "the count of `restart:N` is a whole number, e.g. `restart:3`",
                    )
                }),
        }
    }
}

streamwire_core::__serde_as_text!(Supervision);

/// Whether pixel links of compressible streams carry encoded bytes.
///
/// It decides only what travels between the two ends of a link: an input that asked for
/// bytes (`In<Compressed<..>>`) always gets them, whatever this says. Text: `auto`, `on`,
/// `off`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Decide per link from its locality, with the [`AutoTable`].
    #[default]
    Auto,
    /// Compress every pixel link, in-process ones included (e.g. to see the codec's
    /// effect in a one-process simulation).
    On,
    /// Never compress pixel links.
    Off,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::Auto => "auto",
            Compression::On => "on",
            Compression::Off => "off",
        })
    }
}

impl FromStr for Compression {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        parse_keyword(
            "compression",
            text,
            &[
                ("auto", Compression::Auto),
                ("on", Compression::On),
                ("off", Compression::Off),
            ],
        )
    }
}

streamwire_core::__serde_as_text!(Compression);

/// What a link carries under [`Compression::Auto`]. Text: `raw`, `compress`
/// (`compressed` is accepted too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireFormat {
    /// The message itself.
    Raw,
    /// The encoded message.
    Compressed,
}

impl fmt::Display for WireFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireFormat::Raw => "raw",
            WireFormat::Compressed => "compress",
        })
    }
}

impl FromStr for WireFormat {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        if is_keyword(text, "compressed") {
            return Ok(WireFormat::Compressed);
        }
        parse_keyword(
            "wire format",
            text,
            &[
                ("raw", WireFormat::Raw),
                ("compress", WireFormat::Compressed),
            ],
        )
    }
}

streamwire_core::__serde_as_text!(WireFormat);

/// The locality-to-format table of [`Compression::Auto`].
///
/// The defaults, from measurements (RFC.md, open question 1): in-process raw (zero-copy
/// delivery costs nothing to skip), same-host raw (between two processes on one host,
/// moving a 2.76 MB frame through zenoh costs less CPU and latency than a JPEG encode and
/// decode, and only loopback bandwidth), cross-host compressed (a network link's
/// bandwidth is what a robot runs out of: a q75 frame is 50x smaller).
///
/// ```
/// # use streamwire::prelude::*;
/// let table = AutoTable::default().with(Locality::SameHost, WireFormat::Compressed);
/// assert_eq!(table.format(Locality::SameHost), WireFormat::Compressed);
/// assert_eq!(table.to_string(), "in-process raw, same-host compress, cross-host compress");
/// assert_eq!("same-host compress".parse::<AutoTable>()?, table);
/// # Ok::<(), streamwire::text::ParseError>(())
/// ```
///
/// Text: `<locality> <format>` entries, comma separated, as `Display` prints them
/// (`locality=format` is accepted too); a locality left out keeps its default. Serialized as
/// a table (`{ same_host = "raw" }`, missing keys defaulted); either form deserializes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct AutoTable {
    in_process: WireFormat,
    same_host: WireFormat,
    cross_host: WireFormat,
}

impl AutoTable {
    /// One format for every locality, e.g. `AutoTable::uniform(WireFormat::Raw)`.
    pub fn uniform(format: WireFormat) -> AutoTable {
        AutoTable {
            in_process: format,
            same_host: format,
            cross_host: format,
        }
    }

    /// This table with links of `locality` carrying `format`.
    pub fn with(mut self, locality: Locality, format: WireFormat) -> AutoTable {
        *self.slot(locality) = format;
        self
    }

    /// The format of a link of `locality`.
    pub fn format(&self, locality: Locality) -> WireFormat {
        match locality {
            Locality::InProcess => self.in_process,
            Locality::SameHost => self.same_host,
            Locality::CrossHost => self.cross_host,
        }
    }

    fn slot(&mut self, locality: Locality) -> &mut WireFormat {
        match locality {
            Locality::InProcess => &mut self.in_process,
            Locality::SameHost => &mut self.same_host,
            Locality::CrossHost => &mut self.cross_host,
        }
    }
}

impl Default for AutoTable {
    fn default() -> Self {
        AutoTable {
            in_process: WireFormat::Raw,
            same_host: WireFormat::Raw,
            cross_host: WireFormat::Compressed,
        }
    }
}

impl fmt::Display for AutoTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, locality) in Locality::ALL.into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{locality} {}", self.format(locality))?;
        }
        Ok(())
    }
}

impl FromStr for AutoTable {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let mut table = AutoTable::default();
        let mut seen = Vec::new();
        for entry in text.split(',') {
            let entry = entry.trim();
            let Some((locality, format)) = entry
                .split_once('=')
                .or_else(|| entry.split_once(char::is_whitespace))
            else {
                return Err(ParseError::invalid(
                    "auto table",
                    text.trim(),
                    format!(
                        "`{entry}` is not `<locality> <format>`; write e.g. \
                         `in-process raw, same-host compress, cross-host compress`"
                    ),
                ));
            };
            let locality: Locality = locality.parse()?;
            if seen.contains(&locality) {
                return Err(ParseError::invalid(
                    "auto table",
                    text.trim(),
                    format!("`{locality}` is given twice"),
                ));
            }
            seen.push(locality);
            *table.slot(locality) = format.parse()?;
        }
        Ok(table)
    }
}

/// The table form of [`AutoTable`]: any key may be left out.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct AutoTableFields {
    in_process: WireFormat,
    same_host: WireFormat,
    cross_host: WireFormat,
}

impl Default for AutoTableFields {
    fn default() -> Self {
        let AutoTable {
            in_process,
            same_host,
            cross_host,
        } = AutoTable::default();
        AutoTableFields {
            in_process,
            same_host,
            cross_host,
        }
    }
}

impl From<AutoTableFields> for AutoTable {
    fn from(fields: AutoTableFields) -> AutoTable {
        AutoTable {
            in_process: fields.in_process,
            same_host: fields.same_host,
            cross_host: fields.cross_host,
        }
    }
}

impl<'de> Deserialize<'de> for AutoTable {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        streamwire_core::text::serde_text::deserialize_text_or_table::<AutoTable, AutoTableFields, D>(
            deserializer,
        )
    }
}

/// What to do about a finding that a user may or may not care about (as bevy's
/// `LogLevel` for schedule ambiguities). Text: `ignore`, `warn`, `error`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Report {
    /// Say nothing.
    Ignore,
    /// List it in the plan and log a warning.
    #[default]
    Warn,
    /// Fail the build.
    Error,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Report::Ignore => "ignore",
            Report::Warn => "warn",
            Report::Error => "error",
        })
    }
}

impl FromStr for Report {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        parse_keyword(
            "report",
            text,
            &[
                ("ignore", Report::Ignore),
                ("warn", Report::Warn),
                ("error", Report::Error),
            ],
        )
    }
}

streamwire_core::__serde_as_text!(Report);

/// Per-stream settings: they beat the global ones.
///
/// ```
/// use streamwire::prelude::*;
///
/// // Typed: the compiler checks that the codec carries the message.
/// let typed = StreamSettings::new()
///     .compression(Compression::On)
///     .codec::<Image, Jpeg>()
///     .param("jpeg_quality", 90);
/// // A codec value: its parameters come from `Codec::params`, checked by the compiler.
/// let value = StreamSettings::new()
///     .compression(Compression::On)
///     .codec_value::<Image>(Jpeg { quality: 90, ..Jpeg::default() });
/// assert_eq!(value.codec_name(), Some("jpeg"));
/// assert_eq!(value.params().get("jpeg_quality"), Some("90"));
/// // Text, as a blueprint file or the command line gives it; the codec is found by name
/// // when the blueprint is built.
/// let text: StreamSettings = "compression=on, codec=jpeg, jpeg_quality=90".parse()?;
/// assert_eq!(text.to_string(), typed.to_string());
/// # Ok::<(), streamwire::text::ParseError>(())
/// ```
///
/// Text: comma-separated `key=value` pairs, as `Display` prints them: `compression=` a
/// [`Compression`], `codec=` a codec's name (`jpeg`, `zstd`), and every other key a codec
/// parameter; the empty text changes nothing. Serialized as a table
/// (`{ compression = "on", codec = "jpeg", params = { jpeg_quality = 90 } }`, every key
/// optional); either form deserializes. A codec read from text or a file is a name,
/// resolved against the stream's message when the blueprint is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamSettings {
    pub(crate) compression: Option<Compression>,
    pub(crate) codec: Option<CodecSetting>,
    pub(crate) params: CodecParams,
}

/// The codec a [`StreamSettings`] names: a type the compiler checked, or a name from text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CodecSetting {
    /// `codec::<M, C>()` or `codec_value(..)`.
    Typed(CodecInfo),
    /// `codec=<name>` from text: resolved against the stream's message at build time.
    Named(String),
}

impl CodecSetting {
    fn name(&self) -> &str {
        match self {
            CodecSetting::Typed(info) => info.name(),
            CodecSetting::Named(name) => name,
        }
    }
}

impl StreamSettings {
    /// No override: the global settings apply.
    pub fn new() -> StreamSettings {
        StreamSettings::default()
    }

    /// Compression of this stream's pixel links. On a plain `Out<M>`, only this setting
    /// makes the wire compress.
    pub fn compression(mut self, compression: Compression) -> StreamSettings {
        self.compression = Some(compression);
        self
    }

    /// The codec of this stream's compressed links (by default the one its output names:
    /// `Out<Compressed<M, C>>`). Needed to compress a plain `Out<M>`.
    pub fn codec<M: Message, C: Codec<M>>(mut self) -> StreamSettings {
        self.codec = Some(CodecSetting::Typed(C::INFO));
        self
    }

    /// The codec `codec` of message `M`, with every parameter it has
    /// ([`Codec::params`]): `.codec_value::<Image>(Jpeg { quality: 90, ..Jpeg::default() })`.
    /// A field the codec does not have is a compile error; a later [`param`](Self::param)
    /// still overrides one of its values.
    pub fn codec_value<M: Message>(mut self, codec: impl Codec<M>) -> StreamSettings {
        self.codec = Some(CodecSetting::Typed(codec_info_of(&codec)));
        self.params = self.params.merged(&codec.params());
        self
    }

    /// The codec by name (`"jpeg"`), as text and files give it; found among the codecs
    /// of the stream's message when the blueprint is built.
    pub fn codec_named(mut self, name: impl Into<String>) -> StreamSettings {
        self.codec = Some(CodecSetting::Named(name.into()));
        self
    }

    /// A codec parameter, e.g. `("jpeg_quality", 90)`; checked when the blueprint is built.
    pub fn param(mut self, key: impl Into<String>, value: impl ToString) -> StreamSettings {
        self.params.set(key, value);
        self
    }

    /// `self` with every setting `overrides` makes on top (a later layer of
    /// configuration: a file, then the environment, then `-o`).
    pub fn merged(&self, overrides: &StreamSettings) -> StreamSettings {
        StreamSettings {
            compression: overrides.compression.or(self.compression),
            codec: overrides.codec.clone().or_else(|| self.codec.clone()),
            params: self.params.merged(&overrides.params),
        }
    }

    /// The compression this stream asks for, if it overrides the global one.
    pub fn compression_override(&self) -> Option<Compression> {
        self.compression
    }

    /// The name of the codec this stream asks for, if any.
    pub fn codec_name(&self) -> Option<&str> {
        self.codec.as_ref().map(CodecSetting::name)
    }

    /// The codec parameters set on this stream.
    pub fn params(&self) -> &CodecParams {
        &self.params
    }

    /// The codec this stream asks for, for a stream of `message` that knows the codecs
    /// `known` (those its ports name, `Compressed<M, C>`, and the registered ones,
    /// [`registered_codecs`](streamwire_core::registered_codecs)): a typed codec as given
    /// (the caller checks its message), a name looked up among `known` codecs of
    /// `message`. `Ok(None)` when no codec is set.
    pub fn resolve_codec(
        &self,
        message: MessageInfo,
        known: &[CodecInfo],
    ) -> Result<Option<CodecInfo>, UnknownCodec> {
        match &self.codec {
            None => Ok(None),
            Some(CodecSetting::Typed(info)) => Ok(Some(*info)),
            Some(CodecSetting::Named(name)) => {
                let of_message = || known.iter().filter(|c| c.message() == message);
                of_message()
                    .find(|c| c.name() == name.as_str())
                    .copied()
                    .map(Some)
                    .ok_or_else(|| {
                        let mut names: Vec<&str> = of_message().map(CodecInfo::name).collect();
                        names.sort_unstable();
                        names.dedup();
                        UnknownCodec {
                            name: name.clone(),
                            message: message.rust_name(),
                            known: names.join(", "),
                            suggestion: crate::names::did_you_mean(name, names.iter().copied())
                                .map(str::to_owned),
                        }
                    })
            }
        }
    }
}

/// The [`CodecInfo`] of a codec value (the type is known from the value).
fn codec_info_of<M: Message, C: Codec<M>>(_codec: &C) -> CodecInfo {
    C::INFO
}

/// A codec named in text that the stream does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no codec `{name}` is known for `{message}` on this stream (known: {}){}",
    if known.is_empty() { "none" } else { known.as_str() },
    // infallible: no close name is no hint, not a failure
    suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default()
)]
pub struct UnknownCodec {
    /// The name as given.
    pub name: String,
    /// The stream's message.
    pub message: &'static str,
    /// The codec names that were known, comma separated.
    pub known: String,
    /// A known name close to the one given.
    pub suggestion: Option<String>,
}

impl fmt::Display for StreamSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(compression) = self.compression {
            parts.push(format!("compression={compression}"));
        }
        if let Some(codec) = &self.codec {
            parts.push(format!("codec={}", codec.name()));
        }
        if !self.params.is_empty() {
            parts.push(self.params.to_string());
        }
        f.write_str(&parts.join(", "))
    }
}

impl FromStr for StreamSettings {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let mut settings = StreamSettings::new();
        let mut params = Vec::new();
        for pair in text.split(',').filter(|pair| !pair.trim().is_empty()) {
            let key = pair.split_once('=').map_or(pair, |(key, _)| key);
            let value = pair.split_once('=').map(|(_, value)| value.trim());
            let twice = || {
                ParseError::invalid(
                    "stream settings",
                    text.trim(),
                    format!("`{}` is given twice", key.trim()),
                )
            };
            if is_keyword(key, "compression") {
                // infallible: a key without a value is the empty text, which the parse refuses
                let compression = value.unwrap_or_default().parse()?;
                if settings.compression.replace(compression).is_some() {
                    return Err(twice());
                }
            } else if is_keyword(key, "codec") {
                // infallible: a key without a value is the empty text, refused just below
                let name = value.unwrap_or_default();
                if name.is_empty() || name.contains(char::is_whitespace) {
                    return Err(ParseError::invalid(
                        "stream settings",
                        text.trim(),
                        "`codec=` needs a codec name, as in `codec=jpeg`",
                    ));
                }
                if settings
                    .codec
                    .replace(CodecSetting::Named(name.to_owned()))
                    .is_some()
                {
                    return Err(twice());
                }
            } else {
                params.push(pair);
            }
        }
        settings.params = params.join(",").parse()?;
        Ok(settings)
    }
}

impl Serialize for StreamSettings {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StreamSettingsFields {
            compression: self.compression,
            codec: self.codec_name().map(str::to_owned),
            params: self.params.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StreamSettings {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        streamwire_core::text::serde_text::deserialize_text_or_table::<
            StreamSettings,
            StreamSettingsFields,
            D,
        >(deserializer)
    }
}

/// The table form of [`StreamSettings`].
#[derive(Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct StreamSettingsFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    compression: Option<Compression>,
    #[serde(skip_serializing_if = "Option::is_none")]
    codec: Option<String>,
    #[serde(skip_serializing_if = "CodecParams::is_empty")]
    params: CodecParams,
}

impl From<StreamSettingsFields> for StreamSettings {
    fn from(fields: StreamSettingsFields) -> StreamSettings {
        StreamSettings {
            compression: fields.compression,
            codec: fields.codec.map(CodecSetting::Named),
            params: fields.params,
        }
    }
}

/// The global settings of a blueprint.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) compression: Compression,
    pub(crate) auto_table: AutoTable,
    pub(crate) lossy_pixels: Report,
    pub(crate) unfed_optional: Report,
    pub(crate) incompatible_qos: Report,
    /// A `keep_all` input fed across processes by a best-effort output.
    pub(crate) lossy_path: Report,
    pub(crate) supervision: Supervision,
    /// Blueprint-wide codec-parameter defaults (`jpeg_quality=60`, `max_width=640`):
    /// applied to every stream whose codec has the parameter, beaten by the stream's own.
    pub(crate) codec_defaults: CodecParams,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            compression: Compression::Auto,
            auto_table: AutoTable::default(),
            // Lossy pixels are the price of compression: worth a warning by default.
            lossy_pixels: Report::Warn,
            // An optional input is optional by design: listed in the plan, not warned about.
            unfed_optional: Report::Ignore,
            // An output that cannot satisfy its input loses messages the input counts on.
            incompatible_qos: Report::Error,
            // Frames a keep-all input was promised, lost where nothing resends them.
            lossy_path: Report::Error,
            supervision: Supervision::Stop,
            codec_defaults: CodecParams::new(),
        }
    }
}
