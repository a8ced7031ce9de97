//! Phase 3: per output, how its stream is carried, from the settings: its compression
//! mode and where the mode came from, its wire codec (one given by name included) and
//! that codec's parameters (the stream's own over the blueprint-wide defaults). Apart
//! because it is the one phase that reads the settings; the graph phase reads only its
//! [`StreamPlan`]s.

use streamwire_core::{CodecError, CodecInfo, CodecParams, CodecSummary};

use super::matching::Matching;
use super::ports::Ports;
use super::{PortKey, port_name};
use crate::blueprint::Blueprint;
use crate::error::Problem;
use crate::names;
use crate::settings::Compression;

/// Where a stream's mode comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ModeSource {
    Stream,
    Global,
    PlainOutput,
}

/// How one output's stream is carried, from the settings.
pub(super) struct StreamPlan {
    pub(super) producer: PortKey,
    pub(super) mode: Compression,
    pub(super) source: ModeSource,
    /// The codec of compressed pixel links, if any (even when its parameters were bad).
    pub(super) wire_codec: Option<CodecInfo>,
    /// That codec with its validated parameters. With bad parameters (reported), its
    /// defaults, so that the other checks (a lossless conflict) still run.
    pub(super) wire: Option<(CodecInfo, CodecSummary)>,
    /// The parameters the blueprint set.
    pub(super) user_params: CodecParams,
    /// Those of them that came from the blueprint-wide defaults (`codec_default`), not
    /// from the stream's own settings: shown apart in the plan.
    pub(super) global_params: CodecParams,
    /// The stream's codec setting was refused (unknown name, another message's codec):
    /// already reported, so a missing codec is not reported again.
    pub(super) codec_refused: bool,
}

/// Per output: compression mode, codec, parameters. Reports settings for unknown
/// streams, codecs for another message, bad or codec-less parameters.
pub(super) fn resolve_settings(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    problems: &mut Vec<Problem>,
) -> Vec<StreamPlan> {
    for stream in bp.stream_settings.keys() {
        if !matching.producers.contains_key(stream) {
            problems.push(Problem::UnknownStreamSetting {
                stream: stream.clone(),
                suggestion: names::did_you_mean(
                    stream,
                    matching.producers.keys().map(String::as_str),
                )
                .map(str::to_owned),
            });
        }
    }
    ports
        .outputs()
        .map(|producer| {
            let info = ports.info(producer);
            let name = ports.stream(producer);
            let settings = bp.stream_settings.get(name);
            let producer_codec = info.payload_form().codec();
            let (mode, source) = match settings.and_then(|s| s.compression) {
                Some(mode) => (mode, ModeSource::Stream),
                None if producer_codec.is_some() => (bp.settings.compression, ModeSource::Global),
                None => (Compression::Off, ModeSource::PlainOutput),
            };
            let mut wire_codec = producer_codec;
            let mut codec_refused = false;
            // A codec named in text is looked up among the codecs the stream's ports
            // name and the registered ones (`register_codec!`).
            let known: Vec<CodecInfo> = producer_codec
                .into_iter()
                .chain(
                    matching
                        .consumers(producer)
                        .filter_map(|(consumer, _)| ports.info(consumer).payload_form().codec()),
                )
                .chain(streamwire_core::registered_codecs())
                .collect();
            let chosen = match settings.map(|s| s.resolve_codec(info.message(), &known)) {
                Some(Ok(codec)) => codec,
                Some(Err(unknown)) => {
                    problems.push(Problem::UnknownCodec {
                        stream: name.to_owned(),
                        codec: unknown.name,
                        message: unknown.message,
                        known: unknown.known,
                        suggestion: unknown.suggestion,
                    });
                    wire_codec = None;
                    // Its parameters and a missing codec are that one mistake, not more.
                    codec_refused = true;
                    None
                }
                None => None,
            };
            if let Some(codec) = chosen {
                if codec.message() == info.message() {
                    wire_codec = Some(codec);
                } else {
                    problems.push(Problem::CodecForOtherMessage {
                        stream: name.to_owned(),
                        codec: codec.name(),
                        codec_message: codec.message().rust_name(),
                        stream_message: info.message().rust_name(),
                    });
                    wire_codec = None;
                    codec_refused = true;
                }
            }
            // infallible: a stream without settings has no parameters of its own
            let stream_params = settings.map(|s| s.params.clone()).unwrap_or_default();
            // Blueprint-wide defaults apply to the parameters this stream's codec has
            // (`max_width` means nothing to zstd); the stream's own settings beat them.
            let mut global_params = CodecParams::new();
            let user_params = match wire_codec {
                Some(codec) => {
                    // A key the codec knows: listed among its defaults, or one it lists only
                    // when set (`max_bitrate`), which it then does not refuse as unknown (a
                    // bad value is still reported, below, with the stream's name).
                    let known = codec.summarize(&CodecParams::new()).ok();
                    let knows = |key: &str, value: &str| {
                        known.as_ref().is_some_and(|k| k.params.get(key).is_some())
                            || !matches!(
                                codec.summarize(&CodecParams::new().with(key, value)),
                                Err(CodecError::UnknownParam { .. })
                            )
                    };
                    for (key, value) in bp.settings.codec_defaults.iter() {
                        if knows(key, value) && stream_params.get(key).is_none() {
                            global_params.set(key, value);
                        }
                    }
                    global_params.merged(&stream_params)
                }
                None => stream_params,
            };
            let wire = match wire_codec {
                Some(codec) => match codec.summarize(&user_params) {
                    Ok(summary) => Some((codec, summary)),
                    Err(e) => {
                        problems.push(Problem::InvalidCodecParams {
                            stream: name.to_owned(),
                            codec: codec.name(),
                            reason: e.to_string(),
                        });
                        codec
                            .summarize(&CodecParams::new())
                            .ok()
                            .map(|summary| (codec, summary))
                    }
                },
                None => {
                    if !user_params.is_empty() && !codec_refused {
                        problems.push(Problem::ParamsWithoutCodec {
                            stream: name.to_owned(),
                            params: user_params.to_string(),
                            producer: port_name(bp, producer),
                            message: info.message().rust_name(),
                        });
                    }
                    None
                }
            };
            StreamPlan {
                producer,
                mode,
                source,
                wire_codec,
                wire,
                user_params,
                global_params,
                codec_refused,
            }
        })
        .collect()
}
