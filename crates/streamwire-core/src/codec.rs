//! Codecs: how a message becomes bytes on the wire and back.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::message::{AnyMessage, Message, MessageInfo};
use crate::text::ParseError;

/// Turns messages of type `M` into an encoded message and back.
///
/// A codec type is its parameters (`Jpeg { quality: 75, .. }`); the graph builds it from
/// the per-stream [`CodecParams`] with [`from_params`](Codec::from_params), so a bad
/// parameter is reported when the blueprint is built, not on the first frame.
///
/// Implement it for your own codec (here a toy run-length codec for a user message):
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use streamwire::prelude::*;
///
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/Scan")]
/// pub struct Scan { pub ranges: Vec<u8> }
///
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/ScanRle")]
/// pub struct ScanRle { pub runs: Vec<(u8, u8)> }
///
/// /// Run-length encoding: lossless, so any input may receive its output.
/// pub struct Rle;
///
/// impl Codec<Scan> for Rle {
///     const NAME: &'static str = "rle";
///     type Encoded = ScanRle;
///
///     fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
///         params.expect_only(Self::NAME, &[])?;
///         Ok(Rle)
///     }
///     fn params(&self) -> CodecParams { CodecParams::new() }
///     fn fidelity(&self) -> Fidelity { Fidelity::LOSSLESS }
///     fn encode(&self, scan: &Scan) -> Result<ScanRle, CodecError> {
///         let mut runs: Vec<(u8, u8)> = Vec::new();
///         for &r in &scan.ranges {
///             match runs.last_mut() {
///                 Some((value, count)) if *value == r && *count < u8::MAX => *count += 1,
///                 _ => runs.push((r, 1)),
///             }
///         }
///         Ok(ScanRle { runs })
///     }
///     fn decode(&self, rle: &ScanRle) -> Result<Scan, CodecError> {
///         let ranges = rle.runs.iter().flat_map(|&(v, n)| std::iter::repeat_n(v, n.into())).collect();
///         Ok(Scan { ranges })
///     }
/// }
///
/// let scan = Scan { ranges: vec![3, 3, 3, 7] };
/// let encoded = Rle.encode(&scan)?;
/// assert_eq!(encoded.runs, vec![(3, 3), (7, 1)]);
/// assert_eq!(Rle.decode(&encoded)?.ranges, scan.ranges);
/// # Ok::<(), CodecError>(())
/// ```
///
/// A port then says `Out<Compressed<Scan, Rle>>`; implement [`DefaultCodec`] for `Scan` to
/// let it say `Out<Compressed<Scan>>`.
#[diagnostic::on_unimplemented(
    message = "codec `{Self}` cannot carry `{M}`",
    label = "`{Self}` does not implement `Codec<{M}>`",
    note = "pick a codec that carries `{M}` (its default is written `Compressed<{M}>`), or implement `Codec<{M}>` for `{Self}`"
)]
pub trait Codec<M: Message>: Send + Sync + Sized + 'static {
    /// Short name used in plans, format strings and settings, e.g. `"jpeg"`.
    const NAME: &'static str;
    /// Last segment of the encoded stream's name: `color_image` is encoded as
    /// `color_image/compressed`, as ROS `image_transport` users expect.
    const STREAM_SUFFIX: &'static str = "compressed";
    /// The message that carries the encoded bytes.
    type Encoded: Message;
    /// The run-time description the graph uses. Not to be overridden, except by
    /// [`DefaultCodecOf`], which describes the codec it stands for.
    #[doc(hidden)]
    const INFO: CodecInfo = CodecInfo::of::<M, Self>();

    /// Builds the codec from parameters, rejecting unknown keys and bad values.
    fn from_params(params: &CodecParams) -> Result<Self, CodecError>;
    /// Every parameter, defaults included (shown in plans; `from_params(&c.params())`
    /// rebuilds the same codec).
    fn params(&self) -> CodecParams;
    /// Whether decoded messages may differ from the originals.
    fn fidelity(&self) -> Fidelity;
    /// Encodes one message.
    fn encode(&self, message: &M) -> Result<Self::Encoded, CodecError>;
    /// Decodes one message. Corrupt, truncated or hostile input is an error, never a panic.
    fn decode(&self, encoded: &Self::Encoded) -> Result<M, CodecError>;
    /// Where an encoder that adapts its setting as it goes stands (JPEG under a
    /// `max_bitrate`); `None`, the default, for a codec whose setting is fixed.
    fn adaptation(&self) -> Option<Adaptation> {
        None
    }
}

/// Where an adaptive encoder stands: a JPEG encoder keeping its stream under a bit-rate
/// budget (`max_bitrate`) by choosing each frame's quality, and under its quality floor
/// the width. In a run's statistics (each encode node's row), on the status line and in
/// `topic bench`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Adaptation {
    /// The quality of the next frame.
    pub quality: u8,
    /// The width the next frame is scaled to (`None`: the image's own, or the codec's
    /// `max_width`).
    pub width: Option<u32>,
    /// Settings changed so far.
    pub changes: u64,
    /// The budget, in bits per second.
    pub budget_bitrate: u64,
    /// The window the budget holds over, in milliseconds.
    pub window_ms: u64,
    /// The encoded bits per second over the last window.
    pub window_bitrate: u64,
    /// The highest encoded bit rate over any full window after the first (`None` before
    /// one has ended): what the budget is judged by.
    pub worst_window_bitrate: Option<u64>,
    /// The settings over time, each from the stamp of its first frame (the first 4096).
    pub history: Vec<AdaptationStep>,
}

/// One setting of an [`Adaptation`], from the stamp of the first frame encoded with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdaptationStep {
    /// The stamp of the first frame with this setting, nanoseconds since the epoch.
    pub stamp_nanos: u64,
    /// The JPEG quality.
    pub quality: u8,
    /// The width (`None`: not narrowed).
    pub width: Option<u32>,
}

/// The codec that `Compressed<M>` uses when no codec is written.
///
/// ```
/// use streamwire::prelude::*;
///
/// // in the messages crate: impl DefaultCodec for Image { type Codec = Jpeg; }
/// fn default_codec_name<M: DefaultCodec>() -> &'static str {
///     <M::Codec as Codec<M>>::NAME
/// }
/// assert_eq!(default_codec_name::<Image>(), "jpeg");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no default codec",
    label = "`Compressed<{Self}>` needs a default codec",
    note = "name the codec: `Compressed<{Self}, SomeCodec>`, or implement `DefaultCodec` for `{Self}`"
)]
pub trait DefaultCodec: Message {
    /// The codec used by `Compressed<Self>`.
    type Codec: Codec<Self>;
}

/// The codec that `Compressed<M>` names when no codec is written: `M`'s
/// [`DefaultCodec`], to which it delegates everything.
///
/// A marker rather than the projection `<M as DefaultCodec>::Codec`, so that a message
/// without a default codec is reported once, on the port, instead of at every place the
/// type appears. Plans and the runtime see the codec it stands for (`jpeg` for `Image`).
pub struct DefaultCodecOf<M> {
    /// The `M::Codec` built by `from_params` (boxed because the struct cannot name
    /// `M::Codec` without requiring `M: DefaultCodec` wherever the type is written).
    inner: Box<dyn Any + Send + Sync>,
    _message: std::marker::PhantomData<fn() -> M>,
}

impl<M: DefaultCodec> DefaultCodecOf<M> {
    fn inner(&self) -> Result<&M::Codec, CodecError> {
        self.inner
            .downcast_ref::<M::Codec>()
            .ok_or(CodecError::WrongMessage {
                expected: M::TYPE_NAME,
                found: "another message's default codec",
            })
    }
}

impl<M: Message + DefaultCodec> Codec<M> for DefaultCodecOf<M> {
    const NAME: &'static str = <M::Codec as Codec<M>>::NAME;
    const STREAM_SUFFIX: &'static str = <M::Codec as Codec<M>>::STREAM_SUFFIX;
    type Encoded = <M::Codec as Codec<M>>::Encoded;
    const INFO: CodecInfo = <M::Codec as Codec<M>>::INFO;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        Ok(DefaultCodecOf {
            inner: Box::new(M::Codec::from_params(params)?),
            _message: std::marker::PhantomData,
        })
    }

    fn params(&self) -> CodecParams {
        // infallible: the box holds `M::Codec`: `from_params` made it
        self.inner().map(Codec::params).unwrap_or_default()
    }

    fn fidelity(&self) -> Fidelity {
        // Unreachable in practice (`from_params` stores an `M::Codec`); if it ever were,
        // claiming lossy is the safe answer for lossless inputs.
        self.inner().map_or(Fidelity::LOSSY, Codec::fidelity)
    }

    fn encode(&self, message: &M) -> Result<Self::Encoded, CodecError> {
        self.inner()?.encode(message)
    }

    fn decode(&self, encoded: &Self::Encoded) -> Result<M, CodecError> {
        self.inner()?.decode(encoded)
    }

    fn adaptation(&self) -> Option<Adaptation> {
        self.inner().ok()?.adaptation()
    }
}

/// How faithful decoded messages are to the originals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fidelity {
    /// Decoded values may differ from the originals (JPEG).
    pub lossy: bool,
    /// Decoded images may be smaller than the originals (a `max_width` setting).
    pub downscaled: bool,
}

impl Fidelity {
    /// Decoding gives back exactly what was encoded.
    pub const LOSSLESS: Fidelity = Fidelity {
        lossy: false,
        downscaled: false,
    };
    /// Values may differ, sizes are kept.
    pub const LOSSY: Fidelity = Fidelity {
        lossy: true,
        downscaled: false,
    };

    /// True when decoding gives back exactly what was encoded.
    pub fn is_exact(&self) -> bool {
        !self.lossy && !self.downscaled
    }
}

impl fmt::Display for Fidelity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.lossy, self.downscaled) {
            (false, false) => f.write_str("lossless"),
            (true, false) => f.write_str("lossy"),
            (false, true) => f.write_str("downscaled"),
            (true, true) => f.write_str("lossy, downscaled"),
        }
    }
}

/// Codec parameters as text keys and values (`jpeg_quality=90`), as they come from
/// blueprints, files and the command line. Sorted, so plans print them stably.
///
/// ```
/// # use streamwire::prelude::*;
/// let params = CodecParams::new().with("jpeg_quality", 90);
/// assert_eq!(params.parse::<u8>("jpeg_quality")?, Some(90));
/// assert_eq!(params.to_string(), "jpeg_quality=90");
/// # Ok::<(), CodecError>(())
/// ```
///
/// As text they parse what they print: `key=value` pairs separated by commas
/// (`"jpeg_quality=90, max_width=640".parse::<CodecParams>()`; the empty text is no
/// parameter), so a value cannot itself hold a comma. Serialized as a map of texts; a
/// blueprint file may write numbers and booleans as such (`{ jpeg_quality = 90 }`) or give
/// the whole text as one string.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct CodecParams(BTreeMap<String, String>);

impl CodecParams {
    /// No parameters: the codec's defaults.
    pub fn new() -> CodecParams {
        CodecParams::default()
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: impl Into<String>, value: impl ToString) -> &mut Self {
        self.0.insert(key.into(), value.to_string());
        self
    }

    /// Returns these parameters with `key` set to `value`.
    pub fn with(mut self, key: impl Into<String>, value: impl ToString) -> CodecParams {
        self.set(key, value);
        self
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The value of `key` parsed as `T`; an error names the key and the value.
    pub fn parse<T>(&self, key: &str) -> Result<Option<T>, CodecError>
    where
        T: FromStr,
        T::Err: fmt::Display,
    {
        match self.0.get(key) {
            None => Ok(None),
            Some(value) => {
                value
                    .trim()
                    .parse::<T>()
                    .map(Some)
                    .map_err(|e| CodecError::InvalidParam {
                        key: key.to_owned(),
                        value: value.clone(),
                        reason: e.to_string(),
                    })
            }
        }
    }

    /// Fails on the first key not in `known`, naming the codec and the keys it knows,
    /// and suggesting a known key that contains the unknown one or is part of it
    /// (`quality` suggests `jpeg_quality`, as ROS spells it).
    pub fn expect_only(&self, codec: &'static str, known: &[&str]) -> Result<(), CodecError> {
        match self.0.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(CodecError::UnknownParam {
                codec,
                key: key.clone(),
                hint: known
                    .iter()
                    .find(|k| k.contains(key.as_str()) || key.contains(*k))
                    .map(|k| format!("; did you mean `{k}`?"))
                    // infallible: no close key is no hint, not a failure
                    .unwrap_or_default(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            }),
        }
    }

    /// Merges `overrides` over `self`.
    pub fn merged(&self, overrides: &CodecParams) -> CodecParams {
        let mut merged = self.clone();
        for (k, v) in &overrides.0 {
            merged.0.insert(k.clone(), v.clone());
        }
        merged
    }

    /// True when no parameter is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The parameters, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl fmt::Display for CodecParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

impl FromStr for CodecParams {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let mut params = CodecParams::new();
        if text.trim().is_empty() {
            return Ok(params);
        }
        for pair in text.split(',') {
            params.insert_pair(text, pair)?;
        }
        Ok(params)
    }
}

impl CodecParams {
    /// Adds one `key=value` pair of `text`, refusing a malformed or repeated one.
    fn insert_pair(&mut self, text: &str, pair: &str) -> Result<(), ParseError> {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(ParseError::invalid(
                "codec parameters",
                text.trim(),
                format!("`{}` is not `key=value`", pair.trim()),
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return Err(ParseError::invalid(
                "codec parameters",
                text.trim(),
                format!(
                    "`{}` needs both a key and a value, as in `jpeg_quality=90`",
                    pair.trim()
                ),
            ));
        }
        if self.0.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(ParseError::invalid(
                "codec parameters",
                text.trim(),
                format!("`{key}` is given twice"),
            ));
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for CodecParams {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> serde::de::Visitor<'de> for ParamsVisitor {
    type Value = CodecParams;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("codec parameters: a map of keys to values, or `key=value, ..` text")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<CodecParams, E> {
        text.parse().map_err(E::custom)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CodecParams, A::Error> {
        let mut params = CodecParams::new();
        while let Some((key, ParamValue(value))) = map.next_entry::<String, ParamValue>()? {
            if params.0.insert(key.clone(), value).is_some() {
                return Err(serde::de::Error::custom(format_args!(
                    "codec parameter `{key}` is given twice"
                )));
            }
        }
        Ok(params)
    }
}

/// One parameter value as a file writes it: text, or a number or boolean kept as its
/// text (`max_bitrate: 6400000` and `max_bitrate: 6.4Mbit/s` alike); written back as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ParamValue(pub String);

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ParamValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl serde::de::Visitor<'_> for ValueVisitor {
            type Value = ParamValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a parameter value: text, a number or a boolean")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ParamValue, E> {
                Ok(ParamValue(v.to_owned()))
            }

            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ParamValue, E> {
                Ok(ParamValue(v.to_string()))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ParamValue, E> {
                Ok(ParamValue(v.to_string()))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ParamValue, E> {
                Ok(ParamValue(v.to_string()))
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ParamValue, E> {
                Ok(ParamValue(v.to_string()))
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}

/// Errors of codecs: bad parameters at build time, bad input at run time.
///
/// Run-time errors keep the codec's own error as their source, so a caller can downcast
/// to e.g. the JPEG decoder's error for details.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A parameter's value could not be used.
    #[error("invalid codec parameter `{key}={value}`: {reason}")]
    InvalidParam {
        /// The parameter.
        key: String,
        /// Its value as given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// A parameter the codec does not know (often a typo).
    #[error("codec `{codec}` has no parameter `{key}`{hint} (it knows: {known})")]
    UnknownParam {
        /// The codec.
        codec: &'static str,
        /// The unknown key.
        key: String,
        /// `; did you mean `..`?` or nothing.
        hint: String,
        /// The keys the codec knows, comma separated.
        known: String,
    },
    /// The message cannot be encoded by this codec as configured (e.g. alpha through JPEG).
    #[error("cannot encode: {0}")]
    Unsupported(String),
    /// Encoding failed.
    #[error("encoding failed")]
    Encode(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The encoded input is corrupt, truncated, hostile or over a limit.
    #[error("decoding failed")]
    Decode(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A type-erased codec was given a message of another type.
    #[error("codec expected a `{expected}` message, got `{found}`")]
    WrongMessage {
        /// The type the codec handles.
        expected: &'static str,
        /// The type it was given.
        found: &'static str,
    },
}

/// A codec's parameters after validation, and what they mean for fidelity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecSummary {
    /// Every parameter, defaults included.
    pub params: CodecParams,
    /// How faithful decoding is with these parameters.
    pub fidelity: Fidelity,
}

/// The run-time description of one `Codec<M>` implementation, used by the graph planner
/// (which only has port metadata, not types) and by the runtime to build codec nodes.
#[derive(Clone, Copy)]
pub struct CodecInfo {
    name: &'static str,
    stream_suffix: &'static str,
    message: MessageInfo,
    encoded: MessageInfo,
    rust_name: fn() -> &'static str,
    summarize: fn(&CodecParams) -> Result<CodecSummary, CodecError>,
    instantiate: fn(&CodecParams) -> Result<Box<dyn DynCodec>, CodecError>,
}

impl CodecInfo {
    /// The description of codec `C` for message `M`.
    pub const fn of<M: Message, C: Codec<M>>() -> CodecInfo {
        CodecInfo {
            name: C::NAME,
            stream_suffix: C::STREAM_SUFFIX,
            message: MessageInfo::of::<M>(),
            encoded: MessageInfo::of::<C::Encoded>(),
            rust_name: crate::message::short_type_name::<C>,
            summarize: summarize::<M, C>,
            instantiate: instantiate::<M, C>,
        }
    }

    /// The codec's short name, e.g. `jpeg`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The Rust type's short name, e.g. `Jpeg`.
    pub fn rust_name(&self) -> &'static str {
        (self.rust_name)()
    }

    /// Suffix of the encoded stream (`compressed`).
    pub fn stream_suffix(&self) -> &'static str {
        self.stream_suffix
    }

    /// The message it encodes.
    pub fn message(&self) -> MessageInfo {
        self.message
    }

    /// The message that carries the encoded bytes.
    pub fn encoded(&self) -> MessageInfo {
        self.encoded
    }

    /// Validates `params` and reports every parameter and the resulting fidelity.
    pub fn summarize(&self, params: &CodecParams) -> Result<CodecSummary, CodecError> {
        (self.summarize)(params)
    }

    /// Builds a type-erased codec with `params`, for a runtime that handles streams by
    /// metadata.
    pub fn instantiate(&self, params: &CodecParams) -> Result<Box<dyn DynCodec>, CodecError> {
        (self.instantiate)(params)
    }
}

impl PartialEq for CodecInfo {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.message == other.message && self.encoded == other.encoded
    }
}

impl Eq for CodecInfo {}

impl fmt::Debug for CodecInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodecInfo")
            .field("name", &self.name)
            .field("message", &self.message)
            .field("encoded", &self.encoded)
            .finish()
    }
}

fn summarize<M: Message, C: Codec<M>>(params: &CodecParams) -> Result<CodecSummary, CodecError> {
    let codec = C::from_params(params)?;
    Ok(CodecSummary {
        params: codec.params(),
        fidelity: codec.fidelity(),
    })
}

fn instantiate<M: Message, C: Codec<M>>(
    params: &CodecParams,
) -> Result<Box<dyn DynCodec>, CodecError> {
    Ok(Box::new(Erased::<M, C> {
        codec: C::from_params(params)?,
        _message: std::marker::PhantomData,
    }))
}

/// A codec known by name, so that settings given as text (`codec=jpeg` in a blueprint
/// file or on the command line) can name it for a stream whose ports do not. Made by
/// [`register_codec!`](crate::register_codec), collected at link time.
pub struct CodecRegistration {
    info: CodecInfo,
}

impl CodecRegistration {
    /// The registration of codec `C` for message `M`.
    pub const fn new<M: Message, C: Codec<M>>() -> CodecRegistration {
        CodecRegistration { info: C::INFO }
    }
}

inventory::collect!(CodecRegistration);

/// Every codec registered with [`register_codec!`](crate::register_codec) in the crates
/// linked into this program, e.g. the built-in `jpeg` and `zstd` for `Image`.
pub fn registered_codecs() -> impl Iterator<Item = CodecInfo> {
    inventory::iter::<CodecRegistration>
        .into_iter()
        .map(|registration| registration.info)
}

/// Makes codec `$codec` of message `$message` known by name to settings given as text:
/// `register_codec!(Scan, Rle);` at the top level of the crate that implements it.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// use streamwire::prelude::*;
/// # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// # #[message(name = "doc/Scan")]
/// # pub struct Scan(Vec<u8>);
/// # pub struct Raw;
/// # impl Codec<Scan> for Raw {
/// #     const NAME: &'static str = "raw_scan";
/// #     type Encoded = Scan;
/// #     fn from_params(_: &CodecParams) -> Result<Self, CodecError> { Ok(Raw) }
/// #     fn params(&self) -> CodecParams { CodecParams::new() }
/// #     fn fidelity(&self) -> Fidelity { Fidelity::LOSSLESS }
/// #     fn encode(&self, scan: &Scan) -> Result<Scan, CodecError> { Ok(scan.clone()) }
/// #     fn decode(&self, scan: &Scan) -> Result<Scan, CodecError> { Ok(scan.clone()) }
/// # }
/// streamwire::register_codec!(Scan, Raw);
///
/// assert!(streamwire::registered_codecs().any(|c| c.name() == "raw_scan"));
/// assert!(streamwire::registered_codecs().any(|c| c.name() == "jpeg"));
/// ```
#[macro_export]
macro_rules! register_codec {
    ($message:ty, $codec:ty) => {
        $crate::__private::inventory::submit! {
            $crate::CodecRegistration::new::<$message, $codec>()
        }
    };
}

/// A codec behind a trait object: encodes and decodes messages given as [`AnyMessage`].
pub trait DynCodec: Send + Sync {
    /// Encodes `message`, which must be of the codec's message type.
    fn encode_any(&self, message: &dyn AnyMessage) -> Result<Box<dyn AnyMessage>, CodecError>;
    /// Decodes `encoded`, which must be of the codec's encoded type.
    fn decode_any(&self, encoded: &dyn AnyMessage) -> Result<Box<dyn AnyMessage>, CodecError>;
    /// [`Codec::adaptation`].
    fn adaptation(&self) -> Option<Adaptation>;
}

struct Erased<M, C> {
    codec: C,
    _message: std::marker::PhantomData<fn() -> M>,
}

impl<M: Message, C: Codec<M>> DynCodec for Erased<M, C> {
    fn encode_any(&self, message: &dyn AnyMessage) -> Result<Box<dyn AnyMessage>, CodecError> {
        let message = downcast::<M>(message)?;
        Ok(Box::new(self.codec.encode(message)?))
    }

    fn decode_any(&self, encoded: &dyn AnyMessage) -> Result<Box<dyn AnyMessage>, CodecError> {
        let encoded = downcast::<C::Encoded>(encoded)?;
        Ok(Box::new(self.codec.decode(encoded)?))
    }

    fn adaptation(&self) -> Option<Adaptation> {
        self.codec.adaptation()
    }
}

fn downcast<M: Message>(message: &dyn AnyMessage) -> Result<&M, CodecError> {
    let any: &dyn Any = message.as_any();
    any.downcast_ref::<M>().ok_or(CodecError::WrongMessage {
        expected: M::TYPE_NAME,
        found: message.type_name(),
    })
}
