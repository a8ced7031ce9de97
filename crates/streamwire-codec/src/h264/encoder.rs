//! [`H264Encoder`]: rgb8/bgr8 frames to Annex B access units through OpenH264.

use openh264::encoder::{
    BitRate, Encoder, EncoderConfig, FrameRate, FrameType, IntraFramePeriod, Profile,
    RateControlMode, SpsPpsStrategy, UsageType,
};
use openh264::formats::YUVSource;
use openh264::{OpenH264API, Timestamp};

use super::yuv::{self, I420};
use super::{ENGINE_MAX_LONG_SIDE, ENGINE_MAX_SHORT_SIDE, EncodeSettings, H264Error, guarded};
use crate::jpeg::encode::{downscale, target_size};
use crate::jpeg::{PixelFormat, PixelsRef};

/// One encoded access unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedFrame {
    /// Annex B bytes: start codes and NAL units (SPS and PPS first on a keyframe).
    pub data: Vec<u8>,
    /// The picture's width (after a `max_width` downscale), before any padding.
    pub width: u32,
    /// The picture's height, before any padding.
    pub height: u32,
    /// Whether this is an IDR: a decoder can start here.
    pub keyframe: bool,
}

impl YUVSource for I420 {
    fn dimensions(&self) -> (usize, usize) {
        (self.width as usize, self.height as usize)
    }

    fn strides(&self) -> (usize, usize, usize) {
        let half = self.width as usize / 2;
        (self.width as usize, half, half)
    }

    fn y(&self) -> &[u8] {
        &self.y
    }

    fn u(&self) -> &[u8] {
        &self.u
    }

    fn v(&self) -> &[u8] {
        &self.v
    }
}

/// An H.264 encoder: one per stream, stateful (each frame refers to the ones before it).
pub struct H264Encoder {
    settings: EncodeSettings,
    /// Made at the first frame; OpenH264 reinitialises itself (new SPS, IDR) on a new size.
    engine: Option<Encoder>,
    planes: I420,
    /// The stamp of the first frame: OpenH264's timestamps count from it.
    first_stamp_ns: Option<u64>,
    last_keyframe_ns: Option<u64>,
    keyframe_requested: bool,
}

impl std::fmt::Debug for H264Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H264Encoder")
            .field("settings", &self.settings)
            .field("size", &(self.planes.width, self.planes.height))
            .finish_non_exhaustive()
    }
}

impl H264Encoder {
    /// An encoder with `settings`, checked against their ranges.
    pub fn new(settings: EncodeSettings) -> Result<Self, H264Error> {
        settings.check()?;
        Ok(H264Encoder {
            settings,
            engine: None,
            planes: I420::default(),
            first_stamp_ns: None,
            last_keyframe_ns: None,
            keyframe_requested: false,
        })
    }

    /// The settings it encodes with.
    #[must_use]
    pub fn settings(&self) -> &EncodeSettings {
        &self.settings
    }

    /// Makes the next frame a keyframe (a late joiner, a decoder that lost a frame).
    pub fn request_keyframe(&mut self) {
        self.keyframe_requested = true;
    }

    fn engine_config(&self) -> EncoderConfig {
        EncoderConfig::new()
            .bitrate(BitRate::from_bps(self.settings.bitrate))
            .max_frame_rate(FrameRate::from_hz(self.settings.frame_rate))
            .rate_control_mode(RateControlMode::Bitrate)
            // A skipped frame would be a message without a picture.
            .skip_frames(false)
            .complexity(self.settings.complexity.engine())
            .usage_type(UsageType::CameraVideoRealTime)
            // Baseline: no B-frames, every access unit decodes when it arrives.
            .profile(Profile::Baseline)
            .sps_pps_strategy(SpsPpsStrategy::ConstantId)
            // Keyframes by stamps (`gop_seconds`), not by frame count.
            .intra_frame_period(IntraFramePeriod::from_num_frames(0))
            .num_threads(1)
    }

    /// The coded size: `max_width` applied (then even sides, so the decoder's size is the
    /// picture's), within OpenH264's 3840x2160.
    fn coded_size(&self, width: u32, height: u32) -> Result<(u32, u32), H264Error> {
        let (mut w, mut h) = target_size(width, height, self.settings.max_width)
            .map_err(|e| H264Error::Resize(e.to_string()))?;
        if w < width {
            (w, h) = ((w & !1).max(2), (h & !1).max(2));
        }
        let (long, short) = (w.max(h), w.min(h));
        if long > ENGINE_MAX_LONG_SIDE || short > ENGINE_MAX_SHORT_SIDE {
            return Err(H264Error::TooLarge {
                width: u64::from(w),
                height: u64::from(h),
                max_width: ENGINE_MAX_LONG_SIDE,
                max_height: ENGINE_MAX_SHORT_SIDE,
            });
        }
        Ok((w, h))
    }

    /// Encodes one frame stamped `stamp_ns` (nanoseconds; only differences matter).
    pub fn encode(
        &mut self,
        pixels: &PixelsRef<'_>,
        stamp_ns: u64,
    ) -> Result<EncodedFrame, H264Error> {
        let mut data = Vec::new();
        let (width, height, keyframe) = self.encode_into(pixels, stamp_ns, &mut data)?;
        Ok(EncodedFrame {
            data,
            width,
            height,
            keyframe,
        })
    }

    /// Encodes one frame into `out` (cleared first): its width, height and whether it is
    /// a keyframe.
    pub fn encode_into(
        &mut self,
        pixels: &PixelsRef<'_>,
        stamp_ns: u64,
        out: &mut Vec<u8>,
    ) -> Result<(u32, u32, bool), H264Error> {
        if !matches!(pixels.format(), PixelFormat::Rgb8 | PixelFormat::Bgr8) {
            return Err(H264Error::Unsupported(pixels.format().to_string()));
        }
        let (width, height) = self.coded_size(pixels.width(), pixels.height())?;
        self.convert(pixels, width, height)?;
        let first = *self.first_stamp_ns.get_or_insert(stamp_ns);
        // Whole milliseconds: 0.2 as an f32 is a hair over 0.2 s.
        let gop_ns = (f64::from(self.settings.gop_seconds) * 1e3).round() as u64 * 1_000_000;
        let keyframe_due = self.keyframe_requested
            || self
                .last_keyframe_ns
                .is_none_or(|last| stamp_ns.saturating_sub(last) >= gop_ns);
        if self.engine.is_none() {
            let config = self.engine_config();
            let engine = guarded(|| Encoder::with_api_config(OpenH264API::from_source(), config))?
                .map_err(|e| H264Error::Engine(e.to_string()))?;
            self.engine = Some(engine);
        }
        let (Some(engine), planes) = (self.engine.as_mut(), &self.planes) else {
            return Err(H264Error::Engine("no encoder".to_owned()));
        };
        if keyframe_due {
            engine.force_intra_frame();
        }
        // Milliseconds from the first frame, well inside OpenH264's i64.
        let millis = (stamp_ns.saturating_sub(first) / 1_000_000).min(1 << 52);
        out.clear();
        let encoded = guarded(|| {
            engine
                .encode_at(planes, Timestamp::from_millis(millis))
                .map(|stream| {
                    stream.write_vec(out);
                    stream.frame_type()
                })
        });
        let frame_type = match encoded {
            Ok(Ok(frame_type)) => frame_type,
            Ok(Err(error)) => return Err(H264Error::Engine(error.to_string())),
            Err(panic) => {
                // Whatever state it was left in, the next frame starts a new stream.
                self.engine = None;
                return Err(panic);
            }
        };
        if out.is_empty() {
            return Err(H264Error::Engine(format!(
                "no bytes for a {frame_type:?} frame"
            )));
        }
        let keyframe = frame_type == FrameType::IDR;
        if keyframe {
            self.last_keyframe_ns = Some(stamp_ns);
            self.keyframe_requested = false;
        }
        Ok((width, height, keyframe))
    }

    /// Fills the I420 planes from `pixels`, downscaled to `width`x`height` first if smaller.
    fn convert(
        &mut self,
        pixels: &PixelsRef<'_>,
        width: u32,
        height: u32,
    ) -> Result<(), H264Error> {
        if (self.planes.width, self.planes.height) != yuv::padded(width, height) {
            self.planes = I420::for_size(width, height);
        }
        let filled = if width == pixels.width() {
            yuv::from_rgb(pixels, &mut self.planes)
        } else {
            let scaled =
                downscale(pixels, width, height).map_err(|e| H264Error::Resize(e.to_string()))?;
            let step = width as usize * 3;
            let scaled = PixelsRef::new(width, height, step, pixels.format(), &scaled)
                .map_err(|e| H264Error::Resize(e.to_string()))?;
            yuv::from_rgb(&scaled, &mut self.planes)
        };
        if filled {
            Ok(())
        } else {
            Err(H264Error::Unsupported(pixels.format().to_string()))
        }
    }
}
