//! [`H264`]: H.264 video as a codec of `Compressed<Image>` (this crate's `h264` feature,
//! streamwire-codec's engine). Registered for `Image` only: `codec=h264` on depth is a plan
//! error, as `jpeg` is.

use parking_lot::Mutex;
use streamwire_codec::h264::{
    Complexity, DecodeLimits, EncodeSettings, H264Decoder, H264Encoder, H264Error,
};
use streamwire_codec::jpeg::PixelsRef;
use streamwire_core::{Codec, CodecError, CodecParams, Fidelity};

use super::pixel_format;
use crate::{CompressedImage, Image, ImageEncoding};

/// H.264 (OpenH264, constrained baseline): Annex B, one access unit per message, an SPS and
/// a PPS with every keyframe; the format string is `"<encoding>; h264"`. A temporal codec:
/// each codec node keeps its encoder's or decoder's state, a decoder that misses a frame
/// refuses every frame until the next keyframe (each an error its node counts).
///
/// Parameters (each with the range `EncodeSettings` declares): `bitrate` (`2Mbit/s`
/// default), `gop_seconds` (2), `max_width` (`none`), `complexity` (`low`, `medium`,
/// `high`; `low` default), `frame_rate` (30, what the rate control plans for). A decoder
/// refuses an SPS wider than `max_width` (or 3840) before OpenH264 allocates.
#[derive(Debug)]
pub struct H264 {
    /// The encoder's settings.
    pub settings: EncodeSettings,
    encoder: Mutex<Option<H264Encoder>>,
    decoder: Mutex<Option<H264Decoder>>,
}

impl Default for H264 {
    fn default() -> Self {
        H264::new(EncodeSettings::default())
    }
}

impl H264 {
    const PARAM_KEYS: &'static [&'static str] = &[
        "bitrate",
        "gop_seconds",
        "max_width",
        "complexity",
        "frame_rate",
    ];

    /// A codec with `settings` (checked when the first frame is encoded).
    #[must_use]
    pub fn new(settings: EncodeSettings) -> H264 {
        H264 {
            settings,
            encoder: Mutex::new(None),
            decoder: Mutex::new(None),
        }
    }

    /// Builds the codec from text parameters (see the type's docs for the keys).
    pub fn from_params(params: &CodecParams) -> Result<H264, CodecError> {
        params.expect_only("h264", Self::PARAM_KEYS)?;
        let mut settings = EncodeSettings::default();
        if let Some(text) = params.get("bitrate") {
            let bits = streamwire_core::bitrate::parse_bitrate(text)
                .map_err(|reason| invalid("bitrate", text, reason))?;
            settings.bitrate = u32::try_from(bits).unwrap_or(u32::MAX);
        }
        if let Some(gop) = params.parse::<f32>("gop_seconds")? {
            settings.gop_seconds = gop;
        }
        match params.get("max_width").map(str::trim) {
            None | Some("none") => {}
            Some(_) => settings.max_width = params.parse::<u32>("max_width")?,
        }
        if let Some(text) = params.get("complexity") {
            settings.complexity = text
                .parse::<Complexity>()
                .map_err(|reason| invalid("complexity", text, reason))?;
        }
        if let Some(rate) = params.parse::<f32>("frame_rate")? {
            settings.frame_rate = rate;
        }
        settings.check().map_err(|error| match error {
            H264Error::Setting { key, value, reason } => invalid(key, &value, reason),
            other => CodecError::Encode(Box::new(other)),
        })?;
        Ok(H264::new(settings))
    }

    /// Every parameter, defaults included.
    #[must_use]
    pub fn params(&self) -> CodecParams {
        let s = &self.settings;
        let mut params = CodecParams::new();
        params
            .set(
                "bitrate",
                streamwire_core::bitrate::format_bitrate(u64::from(s.bitrate)),
            )
            .set("gop_seconds", s.gop_seconds)
            .set(
                "max_width",
                s.max_width.map_or("none".to_owned(), |w| w.to_string()),
            )
            .set("complexity", s.complexity)
            .set("frame_rate", s.frame_rate);
        params
    }
}

fn invalid(key: &str, value: &str, reason: String) -> CodecError {
    CodecError::InvalidParam {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

const SUFFIX: &str = "; h264";

impl Codec<Image> for H264 {
    const NAME: &'static str = "h264";
    type Encoded = CompressedImage;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        H264::from_params(params)
    }

    fn params(&self) -> CodecParams {
        H264::params(self)
    }

    fn fidelity(&self) -> Fidelity {
        Fidelity {
            lossy: true,
            downscaled: self.settings.max_width.is_some(),
        }
    }

    fn encode(&self, image: &Image) -> Result<CompressedImage, CodecError> {
        let encoding = image.encoding();
        if !matches!(encoding, ImageEncoding::Rgb8 | ImageEncoding::Bgr8) {
            return Err(CodecError::Unsupported(format!(
                "h264 encodes rgb8 and bgr8, not {encoding}"
            )));
        }
        let step = usize::try_from(image.step())
            .map_err(|_| CodecError::Unsupported("a step over usize".to_owned()))?;
        let pixels = PixelsRef::new(
            image.width(),
            image.height(),
            step,
            pixel_format(encoding),
            image.data(),
        )
        .map_err(|e| CodecError::Encode(Box::new(e)))?;
        let mut slot = self.encoder.lock();
        let encoder = match slot.as_mut() {
            Some(encoder) => encoder,
            None => slot.insert(
                H264Encoder::new(self.settings).map_err(|e| CodecError::Encode(Box::new(e)))?,
            ),
        };
        let frame = encoder
            .encode(&pixels, image.stamp().as_nanos())
            .map_err(|e| CodecError::Encode(Box::new(e)))?;
        let compressed = CompressedImage::new(
            format!("{encoding}{SUFFIX}"),
            frame.data,
            image.width(),
            image.height(),
        )
        .map_err(|e| CodecError::Encode(Box::new(e)))?;
        Ok(compressed
            .with_stamp(image.stamp())
            .with_frame_id(image.frame_id_shared()))
    }

    fn decode(&self, compressed: &CompressedImage) -> Result<Image, CodecError> {
        let encoding = compressed
            .format()
            .strip_suffix(SUFFIX)
            .and_then(|name| match name {
                "rgb8" => Some(ImageEncoding::Rgb8),
                "bgr8" => Some(ImageEncoding::Bgr8),
                _ => None,
            })
            .ok_or_else(|| {
                CodecError::Decode(
                    format!(
                        "h264 decodes `rgb8; h264` or `bgr8; h264`, not `{}`",
                        compressed.format()
                    )
                    .into(),
                )
            })?;
        let mut slot = self.decoder.lock();
        let decoder = slot.get_or_insert_with(|| {
            let max_width = self.settings.max_width.unwrap_or(3840);
            H264Decoder::new(DecodeLimits {
                max_width,
                ..DecodeLimits::default()
            })
        });
        let mut pixels = Vec::new();
        let size = (compressed.original_width(), compressed.original_height());
        let decoded = decoder
            .decode_rgb(
                compressed.data(),
                pixel_format(encoding),
                Some(size),
                &mut pixels,
            )
            .map_err(|e| CodecError::Decode(Box::new(e)))?;
        let image = Image::from_packed(decoded.width, decoded.height, encoding, pixels)
            .map_err(|e| CodecError::Decode(Box::new(e)))?;
        Ok(image
            .with_stamp(compressed.stamp())
            .with_frame_id(compressed.frame_id_shared()))
    }
}

// Known by name to settings given as text (`codec=h264`).
streamwire_core::register_codec!(Image, H264);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_a_lost_one_waits_for_the_keyframe() -> Result<(), CodecError> {
        let mut params = CodecParams::new();
        params.set("gop_seconds", 0.2).set("bitrate", "1Mbit/s");
        let encoder = H264::from_params(&params)?;
        let decoder = H264::from_params(&encoder.params())?;
        let frames: Vec<CompressedImage> = (0..6u64)
            .map(|i| {
                let data: Vec<u8> = (0..33 * 17 * 3)
                    .map(|p| ((p as u64 + i * 7) % 251) as u8)
                    .collect();
                let image = Image::from_packed(33, 17, ImageEncoding::Bgr8, data)
                    .map_err(|e| CodecError::Encode(Box::new(e)))?
                    .with_stamp(streamwire_core::Timestamp::from_nanos(i * 50_000_000));
                encoder.encode(&image)
            })
            .collect::<Result<_, _>>()?;
        assert_eq!(frames[0].format(), "bgr8; h264");
        let image = decoder.decode(&frames[0])?;
        assert_eq!((image.width(), image.height()), (33, 17));
        // Frame 2 lost: 3 is refused, then the keyframe at 4 (0.2 s) decodes again.
        decoder.decode(&frames[1])?;
        assert!(decoder.decode(&frames[3]).is_err());
        decoder.decode(&frames[4])?;
        decoder.decode(&frames[5])?;
        assert!(
            H264::from_params(&{
                let mut p = CodecParams::new();
                p.set("bitrate", "1kbit/s");
                p
            })
            .is_err()
        );
        Ok(())
    }
}
