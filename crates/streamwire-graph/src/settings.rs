//! The knobs of a blueprint: placement, compression, and how loudly to report.

use std::fmt;

use streamwire_core::{Codec, CodecInfo, CodecParams, Message};

/// Where an instance runs: a process on a host. Instances in one process exchange
/// messages zero-copy; between processes and hosts they go through the transport.
///
/// ```
/// # use streamwire_graph::Placement;
/// let viewer = Placement::process("ui");
/// assert_eq!(viewer.host(), "localhost");
/// let remote = Placement::process("mapper").on_host("base_station");
/// assert_eq!(remote.to_string(), "base_station/mapper");
/// ```
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

/// How far apart the two ends of a link are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// Whether pixel links of compressible streams carry encoded bytes.
///
/// It decides only what travels between the two ends of a link: an input that asked for
/// bytes (`In<Compressed<..>>`) always gets them, whatever this says.
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

/// What a link carries under [`Compression::Auto`].
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

/// The locality-to-format table of [`Compression::Auto`].
///
/// The defaults: in-process raw (zero-copy delivery costs nothing to skip), same-host and
/// cross-host compressed (moving 2.76 MB frames between processes costs more CPU than
/// JPEG encode + decode, and loses frames on robot-class CPUs; see RFC.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AutoTable {
    /// Links inside one process.
    pub in_process: WireFormat,
    /// Links between processes of one host.
    pub same_host: WireFormat,
    /// Links between hosts.
    pub cross_host: WireFormat,
}

impl AutoTable {
    /// The format of a link of `locality`.
    pub fn format(&self, locality: Locality) -> WireFormat {
        match locality {
            Locality::InProcess => self.in_process,
            Locality::SameHost => self.same_host,
            Locality::CrossHost => self.cross_host,
        }
    }
}

impl Default for AutoTable {
    fn default() -> Self {
        AutoTable {
            in_process: WireFormat::Raw,
            same_host: WireFormat::Compressed,
            cross_host: WireFormat::Compressed,
        }
    }
}

impl fmt::Display for AutoTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in-process {}, same-host {}, cross-host {}",
            self.in_process, self.same_host, self.cross_host
        )
    }
}

/// What to do about a finding that a user may or may not care about (as bevy's
/// `LogLevel` for schedule ambiguities).
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

/// Per-stream settings: they beat the global ones.
///
/// ```
/// # use streamwire_graph::{Compression, StreamSettings};
/// # use streamwire_msgs::{Image, Jpeg};
/// let settings = StreamSettings::new()
///     .compression(Compression::On)
///     .codec::<Image, Jpeg>()
///     .param("jpeg_quality", 90);
/// # let _ = settings;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamSettings {
    pub(crate) compression: Option<Compression>,
    pub(crate) codec: Option<CodecInfo>,
    pub(crate) params: CodecParams,
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
        self.codec = Some(C::INFO);
        self
    }

    /// A codec parameter, e.g. `("jpeg_quality", 90)`; checked when the blueprint is built.
    pub fn param(mut self, key: impl Into<String>, value: impl ToString) -> StreamSettings {
        self.params.set(key, value);
        self
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
        }
    }
}
