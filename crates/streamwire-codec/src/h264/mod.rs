//! H.264 through Cisco's OpenH264 (the `openh264` crate, this crate's `h264` feature): a
//! temporal codec for 8-bit colour video, one access unit per frame.
//!
//! What a stream of [`H264Encoder`] looks like, and what [`H264Decoder`] insists on:
//!
//! - **Annex B**, one access unit per [`encode`](H264Encoder::encode): start codes before
//!   every NAL unit; constrained baseline profile, so no B-frames and every access unit
//!   decodes as soon as it arrives; an SPS and a PPS before every IDR (keyframe), so a
//!   decoder can start at any keyframe.
//! - **Keyframes**: the first frame, every [`EncodeSettings::gop_seconds`] of stamps, after
//!   a size change (a new SPS), and on [`H264Encoder::request_keyframe`].
//! - **Colour on our side**: rgb8/bgr8 rows (any step) to I420 (BT.601, limited range;
//!   [`yuv`]) before OpenH264 and back after it.
//! - **Any size**: the `openh264` crate panics on odd sides and OpenH264 refuses sides
//!   under 16, so such a side is padded by repeating its last column or row
//!   ([`yuv::padded`]); the SPS crops a coded side that is not a multiple of 16 (1080 is
//!   coded as 1088), and the padding is dropped again by the decoder's caller, which knows
//!   the real size ([`H264Decoder::decode_rgb`]'s `size`): 4:2:0 crops in steps of two
//!   pixels, so the SPS cannot say an odd size itself.
//! - **Hostile input**: [`H264Decoder`] reads every SPS itself ([`sps`]) and refuses a
//!   size over its [`DecodeLimits`] before OpenH264 sees it (OpenH264 refuses 60000x60000
//!   but still allocates for sizes up to about 4096x2304); a corrupt or truncated access
//!   unit, a lost frame (a gap in `frame_num`) or a stream joined mid-GOP is an error, and
//!   every access unit after it is [`H264Error::AwaitingKeyframe`] until the next IDR.
//!   A panic inside the library is caught and returned as an error.

mod decoder;
mod encoder;
pub mod nal;
pub mod sps;
pub mod yuv;

use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

pub use decoder::{DecodeLimits, DecodedSize, H264Decoder};
pub use encoder::{EncodedFrame, H264Encoder};

/// Why an H.264 encode or decode failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum H264Error {
    /// A setting outside its declared range.
    #[error("h264 setting `{key}` = {value}: {reason}")]
    Setting {
        /// The setting's key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What it accepts.
        reason: String,
    },
    /// A pixel format H.264 does not carry here (only rgb8 and bgr8).
    #[error("h264 encodes rgb8 and bgr8 only, not {0}")]
    Unsupported(String),
    /// A picture larger than the limits (the decoder's, or OpenH264's 3840x2160).
    #[error("a {width}x{height} picture is over the limit of {max_width}x{max_height}")]
    TooLarge {
        /// Width found.
        width: u64,
        /// Height found.
        height: u64,
        /// Largest width allowed.
        max_width: u32,
        /// Largest height allowed.
        max_height: u32,
    },
    /// Bytes that are not a well-formed access unit.
    #[error("corrupt h264 access unit: {0}")]
    Corrupt(String),
    /// A frame before the first keyframe, or after a loss or an error: it cannot be
    /// decoded, and decoding resumes at the next IDR.
    #[error("h264 decoder awaits a keyframe (joined mid-GOP, or after a loss)")]
    AwaitingKeyframe,
    /// A gap in `frame_num`: the frame before this one was lost.
    #[error("h264 frame lost before this one: frame_num {found}, expected {expected}")]
    MissingFrame {
        /// The `frame_num` that should have come.
        expected: u32,
        /// The `frame_num` that came.
        found: u32,
    },
    /// OpenH264 itself failed (or panicked).
    #[error("openh264: {0}")]
    Engine(String),
    /// Downscaling to `max_width` failed.
    #[error("h264 downscale: {0}")]
    Resize(String),
}

/// How hard OpenH264 searches: speed against quality at the same bit rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Complexity {
    /// Fastest.
    #[default]
    Low,
    /// OpenH264's default.
    Medium,
    /// Slowest, best.
    High,
}

impl Complexity {
    fn engine(self) -> openh264::encoder::Complexity {
        match self {
            Complexity::Low => openh264::encoder::Complexity::Low,
            Complexity::Medium => openh264::encoder::Complexity::Medium,
            Complexity::High => openh264::encoder::Complexity::High,
        }
    }
}

impl fmt::Display for Complexity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Complexity::Low => "low",
            Complexity::Medium => "medium",
            Complexity::High => "high",
        })
    }
}

impl FromStr for Complexity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "low" => Ok(Complexity::Low),
            "medium" => Ok(Complexity::Medium),
            "high" => Ok(Complexity::High),
            other => Err(format!("`{other}`: one of low, medium, high")),
        }
    }
}

/// The encoder's settings; each numeric one has a declared range (the `*_RANGE` consts),
/// checked by [`EncodeSettings::check`] and by [`H264Encoder::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncodeSettings {
    /// Target bit rate, bits per second.
    pub bitrate: u32,
    /// Seconds of stamps between periodic keyframes.
    pub gop_seconds: f32,
    /// Downscale wider images to this width, keeping the aspect ratio.
    pub max_width: Option<u32>,
    /// Speed against quality.
    pub complexity: Complexity,
    /// The frame rate the rate control plans for.
    pub frame_rate: f32,
}

impl Default for EncodeSettings {
    fn default() -> Self {
        EncodeSettings {
            bitrate: 2_000_000,
            gop_seconds: 2.0,
            max_width: None,
            complexity: Complexity::Low,
            frame_rate: 30.0,
        }
    }
}

impl EncodeSettings {
    /// `bitrate`: 50 kbit/s to 100 Mbit/s.
    pub const BITRATE_RANGE: RangeInclusive<u32> = 50_000..=100_000_000;
    /// `gop_seconds`: a tenth of a second to a minute.
    pub const GOP_SECONDS_RANGE: RangeInclusive<f32> = 0.1..=60.0;
    /// `max_width`: 16 to OpenH264's 3840.
    pub const MAX_WIDTH_RANGE: RangeInclusive<u32> = 16..=3840;
    /// `frame_rate`: 1 to 240 frames per second.
    pub const FRAME_RATE_RANGE: RangeInclusive<f32> = 1.0..=240.0;

    /// Checks every setting against its range.
    pub fn check(&self) -> Result<(), H264Error> {
        let outside = |key, value: String, range: String| H264Error::Setting {
            key,
            value,
            reason: format!("outside {range}"),
        };
        if !Self::BITRATE_RANGE.contains(&self.bitrate) {
            return Err(outside(
                "bitrate",
                self.bitrate.to_string(),
                "50000..=100000000 bit/s".into(),
            ));
        }
        if !Self::GOP_SECONDS_RANGE.contains(&self.gop_seconds) {
            return Err(outside(
                "gop_seconds",
                self.gop_seconds.to_string(),
                "0.1..=60 s".into(),
            ));
        }
        if let Some(width) = self
            .max_width
            .filter(|w| !Self::MAX_WIDTH_RANGE.contains(w))
        {
            return Err(outside("max_width", width.to_string(), "16..=3840".into()));
        }
        if !Self::FRAME_RATE_RANGE.contains(&self.frame_rate) {
            return Err(outside(
                "frame_rate",
                self.frame_rate.to_string(),
                "1..=240 fps".into(),
            ));
        }
        Ok(())
    }
}

/// OpenH264's largest picture: 3840x2160 either way round (level 5.2).
pub(crate) const ENGINE_MAX_LONG_SIDE: u32 = 3840;
/// The short side of OpenH264's largest picture.
pub(crate) const ENGINE_MAX_SHORT_SIDE: u32 = 2160;

/// Runs `f`, turning a panic inside OpenH264 (or the crate) into an error.
fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, H264Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| H264Error::Engine("panicked".to_owned()))
}
