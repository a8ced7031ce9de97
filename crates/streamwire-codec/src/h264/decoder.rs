//! [`H264Decoder`]: Annex B access units back to pictures, refusing hostile ones first.

use openh264::OpenH264API;
use openh264::decoder::{Decoder, DecoderConfig};
use openh264::formats::YUVSource;

use super::nal::{self, nal_type};
use super::sps::{self, SpsInfo};
use super::yuv::{self, I420, PlanesRef};
use super::{ENGINE_MAX_LONG_SIDE, ENGINE_MAX_SHORT_SIDE, H264Error, guarded};
use crate::jpeg::PixelFormat;

/// The largest pictures a decoder accepts, checked on every SPS before OpenH264 sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Widest picture, pixels.
    pub max_width: u32,
    /// Tallest picture, pixels.
    pub max_height: u32,
}

impl Default for DecodeLimits {
    /// OpenH264's own largest picture, 3840x2160, either way round.
    fn default() -> Self {
        DecodeLimits {
            max_width: ENGINE_MAX_LONG_SIDE,
            max_height: ENGINE_MAX_LONG_SIDE,
        }
    }
}

impl DecodeLimits {
    fn check(&self, sps: &SpsInfo) -> Result<(), H264Error> {
        let (long, short) = (
            sps.coded_width.max(sps.coded_height),
            sps.coded_width.min(sps.coded_height),
        );
        // The coded size (cropping included) is what gets allocated.
        if sps.width > self.max_width
            || sps.height > self.max_height
            || long > ENGINE_MAX_LONG_SIDE + 16
            || short > ENGINE_MAX_SHORT_SIDE + 16
        {
            return Err(H264Error::TooLarge {
                width: u64::from(sps.width),
                height: u64::from(sps.height),
                max_width: self.max_width.min(ENGINE_MAX_LONG_SIDE),
                max_height: self.max_height.min(ENGINE_MAX_LONG_SIDE),
            });
        }
        Ok(())
    }
}

/// The size of a decoded picture (the SPS's, after cropping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedSize {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Whether the access unit was an IDR.
    pub keyframe: bool,
}

/// An H.264 decoder: one per consumer of a stream, stateful.
pub struct H264Decoder {
    limits: DecodeLimits,
    /// Made at the first keyframe, and again after a panic inside it.
    engine: Option<Decoder>,
    /// The last SPS read (checked against the limits).
    sps: Option<SpsInfo>,
    /// Whether every frame since the last IDR decoded: otherwise only an IDR is accepted.
    synced: bool,
    /// The `frame_num` the next picture must carry (after a reference picture).
    next_frame_num: u32,
}

impl std::fmt::Debug for H264Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H264Decoder")
            .field("limits", &self.limits)
            .field("sps", &self.sps)
            .field("synced", &self.synced)
            .finish_non_exhaustive()
    }
}

impl Default for H264Decoder {
    fn default() -> Self {
        H264Decoder::new(DecodeLimits::default())
    }
}

/// What an access unit holds, read before OpenH264 sees it.
struct Unit {
    keyframe: bool,
    /// `frame_num` and reference flag of its first slice.
    frame_num: Option<(u32, bool)>,
}

impl H264Decoder {
    /// A decoder refusing pictures over `limits`.
    #[must_use]
    pub fn new(limits: DecodeLimits) -> Self {
        H264Decoder {
            limits,
            engine: None,
            sps: None,
            synced: false,
            next_frame_num: 0,
        }
    }

    /// Whether it decodes the next non-IDR frame (`false` before the first IDR and after
    /// an error, until the next one).
    #[must_use]
    pub fn is_synced(&self) -> bool {
        self.synced
    }

    /// Reads the access unit's SPS (checking it), its IDR and its first slice's frame_num.
    fn inspect(&mut self, access_unit: &[u8]) -> Result<Unit, H264Error> {
        let mut keyframe = false;
        let mut first_slice = None;
        for unit in nal::units(access_unit)? {
            match nal::unit_type(unit) {
                nal_type::SPS => {
                    let info = sps::parse(unit)?;
                    self.limits.check(&info)?;
                    self.sps = Some(info);
                }
                nal_type::IDR => {
                    keyframe = true;
                    first_slice.get_or_insert(unit);
                }
                nal_type::SLICE => {
                    first_slice.get_or_insert(unit);
                }
                // Data partitions (2..=4) are not baseline: refuse rather than guess.
                2..=4 => return Err(H264Error::Corrupt("data partitioning".to_owned())),
                _ => {}
            }
        }
        let Some(slice) = first_slice else {
            return Err(H264Error::Corrupt(
                "no picture in the access unit".to_owned(),
            ));
        };
        let Some(sps) = self.sps else {
            return Err(if keyframe {
                H264Error::Corrupt("a keyframe without an SPS".to_owned())
            } else {
                H264Error::AwaitingKeyframe
            });
        };
        Ok(Unit {
            keyframe,
            frame_num: Some(sps::slice_frame_num(slice, &sps)?),
        })
    }

    /// Checks that no frame was lost since the last reference picture.
    fn check_order(&mut self, unit: &Unit) -> Result<(), H264Error> {
        let (Some((found, reference)), Some(sps)) = (unit.frame_num, self.sps) else {
            return Ok(());
        };
        let modulo = 1u32 << sps.log2_max_frame_num;
        if !unit.keyframe {
            if !self.synced {
                return Err(H264Error::AwaitingKeyframe);
            }
            let previous = (self.next_frame_num + modulo - 1) % modulo;
            if found != self.next_frame_num && found != previous && !sps.gaps_allowed {
                return Err(H264Error::MissingFrame {
                    expected: self.next_frame_num,
                    found,
                });
            }
        }
        if reference {
            self.next_frame_num = (found + 1) % modulo;
        }
        Ok(())
    }

    /// Decodes one access unit and hands the picture to `use_picture`. Any error leaves
    /// the decoder waiting for the next IDR.
    pub fn decode_with<R>(
        &mut self,
        access_unit: &[u8],
        use_picture: impl FnOnce(&PlanesRef<'_>, DecodedSize) -> R,
    ) -> Result<R, H264Error> {
        let unit = match self
            .inspect(access_unit)
            .and_then(|unit| self.check_order(&unit).map(|()| unit))
        {
            Ok(unit) => unit,
            Err(error) => {
                self.synced = false;
                return Err(error);
            }
        };
        self.synced = false;
        if self.engine.is_none() {
            // Quiet, single-threaded, error concealment off (OpenH264's defaults here).
            let made = guarded(|| {
                Decoder::with_api_config(OpenH264API::from_source(), DecoderConfig::new())
            })?;
            self.engine = Some(made.map_err(|e| H264Error::Engine(e.to_string()))?);
        }
        let Some(engine) = self.engine.as_mut() else {
            return Err(H264Error::Engine("no decoder".to_owned()));
        };
        let decoded = guarded(|| match engine.decode(access_unit) {
            Ok(Some(picture)) => {
                let (width, height) = picture.dimensions();
                let (y_stride, uv_stride, _) = picture.strides();
                let planes = PlanesRef {
                    y: picture.y(),
                    u: picture.u(),
                    v: picture.v(),
                    y_stride,
                    uv_stride,
                };
                let size = DecodedSize {
                    width: u32::try_from(width).unwrap_or(u32::MAX),
                    height: u32::try_from(height).unwrap_or(u32::MAX),
                    keyframe: unit.keyframe,
                };
                Ok(use_picture(&planes, size))
            }
            Ok(None) => Err(H264Error::Corrupt("no picture came out".to_owned())),
            Err(error) => Err(H264Error::Corrupt(error.to_string())),
        });
        match decoded {
            Ok(Ok(result)) => {
                self.synced = true;
                Ok(result)
            }
            Ok(Err(error)) => Err(error),
            Err(panic) => {
                self.engine = None;
                Err(panic)
            }
        }
    }

    /// Decodes into packed rgb8 or bgr8 in `out`, cropped to `size` when given and not
    /// larger than the decoded picture (the picture's real size: an odd side, or one under
    /// 16 pixels, was padded); returns the size written.
    pub fn decode_rgb(
        &mut self,
        access_unit: &[u8],
        format: PixelFormat,
        size: Option<(u32, u32)>,
        out: &mut Vec<u8>,
    ) -> Result<DecodedSize, H264Error> {
        if !matches!(format, PixelFormat::Rgb8 | PixelFormat::Bgr8) {
            return Err(H264Error::Unsupported(format.to_string()));
        }
        self.decode_with(access_unit, |planes, decoded| {
            let (width, height) = match size {
                Some((w, h)) if w <= decoded.width && h <= decoded.height => (w, h),
                _ => (decoded.width, decoded.height),
            };
            let written = yuv::to_rgb(planes, width, height, format, out);
            (
                written,
                DecodedSize {
                    width,
                    height,
                    ..decoded
                },
            )
        })
        .and_then(|(written, decoded)| {
            if written {
                Ok(decoded)
            } else {
                Err(H264Error::Corrupt(
                    "planes smaller than the picture".to_owned(),
                ))
            }
        })
    }

    /// Decodes into packed I420 planes (for comparisons with other decoders).
    pub fn decode_i420(&mut self, access_unit: &[u8]) -> Result<I420, H264Error> {
        self.decode_with(access_unit, |planes, size| {
            let (w, h) = (size.width as usize, size.height as usize);
            let copy = |plane: &[u8], stride: usize, cols: usize, rows: usize| -> Vec<u8> {
                (0..rows)
                    .flat_map(|row| {
                        plane
                            .get(row * stride..row * stride + cols)
                            // infallible: OpenH264 hands planes of stride x rows of its picture
                            .unwrap_or_default()
                    })
                    .copied()
                    .collect()
            };
            I420 {
                width: size.width,
                height: size.height,
                y: copy(planes.y, planes.y_stride, w, h),
                u: copy(planes.u, planes.uv_stride, w / 2, h / 2),
                v: copy(planes.v, planes.uv_stride, w / 2, h / 2),
            }
        })
    }
}
