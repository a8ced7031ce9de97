//! The one raster behind [`Image`](crate::Image) and [`DepthImage`](crate::DepthImage):
//! `height` rows of `step` bytes, a row holding `width` pixels of an encoding and maybe
//! padding, with the sensor stamp and frame id. Generic over the encoding as image-rs's
//! `ImageBuffer` is over its pixel: one size check ([`Raster::new`]), one set of accessors,
//! one wire form; the two messages are newtypes of it ([`RasterMessage`]) so each keeps its
//! own name on the wire, in plans and in compiler errors.

use std::fmt;
use std::hash::Hash;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use streamwire_core::{Message, Timestamp};

use crate::compressed::RawEncoding;
use crate::layout::{self, Layout, LayoutError, ParseEncodingError};

/// The pixel layout of a [`Raster`]: [`ImageEncoding`](crate::ImageEncoding) or
/// [`DepthEncoding`](crate::DepthEncoding) (sealed). Its names are the ROS ones, parsed by
/// [`FromStr`] and written by [`Display`](fmt::Display).
pub trait RasterEncoding:
    Copy
    + Eq
    + Hash
    + fmt::Debug
    + fmt::Display
    + FromStr<Err = ParseEncodingError>
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// The Rust name of the message holding rasters of this encoding: `Image`, `DepthImage`.
    const MESSAGE: &'static str;
    /// The last segment of the name of a compressed stream of these rasters, as ROS
    /// `image_transport` writes it: `compressed`, or `compressedDepth` for depth.
    const COMPRESSED_SUFFIX: &'static str;

    /// The ROS name, e.g. `rgb8` or `16UC1`.
    fn as_str(self) -> &'static str;

    /// Bytes per pixel.
    fn bytes_per_pixel(self) -> u32;

    /// This encoding among every encoding a compressed image may name.
    fn raw(self) -> RawEncoding;

    /// The encoding of this kind that `raw` names, if it is one.
    fn from_raw(raw: RawEncoding) -> Option<Self>;
}

pub(crate) mod sealed {
    /// Only this crate's encodings and raster messages: the wire forms depend on them.
    pub trait Sealed {}
}

/// Implements [`RasterEncoding`], [`Display`](fmt::Display) and [`FromStr`] for an encoding
/// enum with `ALL`, `as_str` and `bytes_per_pixel`.
macro_rules! raster_encoding {
    ($encoding:ident {
        kind: $kind:literal,
        message: $message:expr,
        compressed_suffix: $suffix:literal,
        raw: $raw:ident,
        expected: $expected:literal $(,)?
    }) => {
        impl $crate::raster::sealed::Sealed for $encoding {}

        impl $crate::raster::RasterEncoding for $encoding {
            const MESSAGE: &'static str = $message;
            const COMPRESSED_SUFFIX: &'static str = $suffix;

            fn as_str(self) -> &'static str {
                $encoding::as_str(self)
            }

            fn bytes_per_pixel(self) -> u32 {
                $encoding::bytes_per_pixel(self)
            }

            fn raw(self) -> $crate::RawEncoding {
                $crate::RawEncoding::$raw(self)
            }

            fn from_raw(raw: $crate::RawEncoding) -> Option<Self> {
                match raw {
                    $crate::RawEncoding::$raw(encoding) => Some(encoding),
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $encoding {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $encoding {
            type Err = $crate::ParseEncodingError;

            fn from_str(name: &str) -> Result<Self, $crate::ParseEncodingError> {
                $encoding::ALL
                    .into_iter()
                    .find(|e| e.as_str() == name)
                    .ok_or_else(|| $crate::ParseEncodingError {
                        kind: $kind,
                        name: $crate::layout::clip(name),
                        expected: $expected,
                    })
            }
        }
    };
}

pub(crate) use raster_encoding;

/// `height` rows of `step` bytes, each row `width` pixels of `encoding` and maybe padding,
/// with a sensor stamp and a frame id: what [`Image`](crate::Image) and
/// [`DepthImage`](crate::DepthImage) hold (and give through `Deref`).
///
/// The pixels are shared ([`Bytes`]): cloning never copies them. Every constructor (and
/// deserialization) checks the layout, so a raster always has at least one pixel and a
/// buffer of exactly `height * step` bytes.
///
/// ```
/// use streamwire::msgs::{Image, ImageEncoding, Raster};
///
/// let raster = Raster::from_packed(2, 1, ImageEncoding::Rgb8, vec![255, 0, 0, 0, 255, 0])?;
/// assert_eq!(raster.step(), 6);
/// let image = Image::from(raster.with_frame_id("camera"));
/// assert_eq!(image.pixel(1, 0), Some(&[0, 255, 0][..]));
/// # Ok::<(), streamwire_msgs::LayoutError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    try_from = "RasterRepr<E>",
    bound(serialize = "E: RasterEncoding", deserialize = "E: RasterEncoding")
)]
pub struct Raster<E> {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) encoding: E,
    pub(crate) step: u32,
    #[serde(with = "streamwire_core::blob")]
    pub(crate) data: Bytes,
    pub(crate) stamp: Timestamp,
    pub(crate) frame_id: Arc<str>,
}

/// The unchecked wire form of a [`Raster`]; deserialization goes through
/// [`Raster::new`]'s checks.
#[derive(Deserialize)]
#[serde(bound(deserialize = "E: RasterEncoding"))]
struct RasterRepr<E> {
    width: u32,
    height: u32,
    encoding: E,
    step: u32,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

impl<E: RasterEncoding> TryFrom<RasterRepr<E>> for Raster<E> {
    type Error = LayoutError;

    fn try_from(repr: RasterRepr<E>) -> Result<Raster<E>, LayoutError> {
        Ok(
            Raster::new(repr.width, repr.height, repr.encoding, repr.step, repr.data)?
                .with_stamp(repr.stamp)
                .with_frame_id(repr.frame_id),
        )
    }
}

impl<E: RasterEncoding> fmt::Debug for Raster<E> {
    /// Written as the message it is, e.g. `Image { width: 2, .. }`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(E::MESSAGE)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("encoding", &self.encoding)
            .field("step", &self.step)
            .field("data", &self.data)
            .field("stamp", &self.stamp)
            .field("frame_id", &self.frame_id)
            .finish()
    }
}

impl<E: RasterEncoding> Raster<E> {
    /// A raster of `width x height` pixels of `encoding`, rows `step` bytes apart.
    ///
    /// `data` must be exactly `height * step` bytes, and `step` at least `width *
    /// bytes_per_pixel`. A `Vec<u8>` or [`Bytes`] is taken without copying. The stamp is
    /// [`Timestamp::ZERO`] and the frame id empty until set.
    pub fn new(
        width: u32,
        height: u32,
        encoding: E,
        step: u32,
        data: impl Into<Bytes>,
    ) -> Result<Raster<E>, LayoutError> {
        let data = data.into();
        Layout::check(width, height, encoding.bytes_per_pixel(), step, data.len())?;
        Ok(Raster {
            width,
            height,
            encoding,
            step,
            data,
            stamp: Timestamp::ZERO,
            frame_id: Arc::from(""),
        })
    }

    /// A raster whose rows follow each other without padding (`step = width *
    /// bytes_per_pixel`).
    pub fn from_packed(
        width: u32,
        height: u32,
        encoding: E,
        data: impl Into<Bytes>,
    ) -> Result<Raster<E>, LayoutError> {
        let step = Layout::packed_step(width, encoding.bytes_per_pixel())?;
        Raster::new(width, height, encoding, step, data)
    }

    /// Width in pixels (at least 1).
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels (at least 1).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The pixel layout.
    pub fn encoding(&self) -> E {
        self.encoding
    }

    /// Bytes from the start of one row to the start of the next (padding included).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// All `height * step` bytes, padding included.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The frame id, shared (codecs pass it on without copying the string).
    pub(crate) fn frame_id_shared(&self) -> Arc<str> {
        self.frame_id.clone()
    }

    /// Bytes of one row's pixels, without padding: `width * bytes_per_pixel`.
    pub fn row_bytes(&self) -> usize {
        self.layout().row_bytes
    }

    /// True when the rows have no padding (`step == row_bytes`).
    pub fn is_packed(&self) -> bool {
        self.layout().is_packed()
    }

    /// The pixels of row `y` without padding, or `None` past the last row.
    pub fn row(&self, y: u32) -> Option<&[u8]> {
        self.data.get(self.layout().row_range(y)?)
    }

    /// Every row, top to bottom, without padding.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        layout::rows(&self.data, self.layout())
    }

    /// The bytes of pixel `(x, y)`, or `None` outside the raster.
    pub fn pixel(&self, x: u32, y: u32) -> Option<&[u8]> {
        let range = self
            .layout()
            .pixel_range(x, y, self.encoding.bytes_per_pixel())?;
        self.data.get(range)
    }

    /// The pixels without row padding: the shared buffer itself when the rows are already
    /// packed, else a packed copy.
    pub fn packed(&self) -> Bytes {
        layout::packed(&self.data, self.layout())
    }

    fn layout(&self) -> Layout {
        // Checked at construction; a fallback keeps the accessors panic-free regardless.
        Layout::check(
            self.width,
            self.height,
            self.encoding.bytes_per_pixel(),
            self.step,
            self.data.len(),
        )
        .unwrap_or(Layout {
            height: 0,
            step: 0,
            row_bytes: 0,
        })
    }
}

crate::header::stamp_and_frame_id!(impl<E: RasterEncoding> Raster<E>);

/// A message that is a [`Raster`]: [`Image`](crate::Image) and
/// [`DepthImage`](crate::DepthImage) (sealed). Generic code over both (the zstd codec, the
/// ROS 2 mapping) reads one through `Deref` and makes one with `From`.
pub trait RasterMessage:
    Message
    + std::ops::Deref<Target = Raster<Self::Encoding>>
    + From<Raster<Self::Encoding>>
    + Into<Raster<Self::Encoding>>
    + sealed::Sealed
{
    /// The encoding of its pixels.
    type Encoding: RasterEncoding;
}

/// The content bytes of a raster message (`Message::payload_len`): its buffer.
pub(crate) fn payload_len<M: RasterMessage>(message: &M) -> usize {
    message.data.len()
}

/// A raster message, declared: the newtype of [`Raster`] with its wire name, and what it
/// shares with the other one: `Deref` to its raster, the conversions, `Debug` as the
/// raster, its constructors and builders returning the message, `Stamped`; and its
/// encoding's [`RasterEncoding`], `Display` and `FromStr` (`raster_encoding!`).
///
/// ```text
/// raster_message! {
///     /// docs
///     Image: "streamwire/Image",
///     ImageEncoding: "image", raw Image, "compressed", expected "rgb8, bgr8, rgba8, bgra8, mono8",
/// }
/// ```
macro_rules! raster_message {
    (
        $(#[$doc:meta])*
        $message:ident: $type_name:literal,
        $encoding:ident: $kind:literal, raw $raw:ident, $suffix:literal, expected $expected:literal $(,)?
    ) => {
        $crate::raster::raster_encoding!($encoding {
            kind: $kind,
            message: stringify!($message),
            compressed_suffix: $suffix,
            raw: $raw,
            expected: $expected,
        });

        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, streamwire_macros::Message)]
        #[message(
            name = $type_name,
            kind = sensor,
            crate = streamwire_core,
            payload_len = crate::raster::payload_len
        )]
        #[serde(transparent)]
        pub struct $message($crate::Raster<$encoding>);

        impl $crate::raster::sealed::Sealed for $message {}

        impl $crate::raster::RasterMessage for $message {
            type Encoding = $encoding;
        }

        impl std::ops::Deref for $message {
            type Target = $crate::Raster<$encoding>;

            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        impl From<$crate::Raster<$encoding>> for $message {
            fn from(raster: $crate::Raster<$encoding>) -> $message {
                $message(raster)
            }
        }

        impl From<$message> for $crate::Raster<$encoding> {
            fn from(message: $message) -> $crate::Raster<$encoding> {
                message.0
            }
        }

        impl std::fmt::Debug for $message {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl streamwire_core::Stamped for $message {
            fn stamp(&self) -> streamwire_core::Timestamp {
                self.0.stamp()
            }
        }

        impl $message {
            #[doc = concat!("A `", stringify!($message), "` of `width x height` pixels of `encoding`, rows `step` bytes apart: [`Raster::new`](crate::Raster::new)'s rules.")]
            pub fn new(
                width: u32,
                height: u32,
                encoding: $encoding,
                step: u32,
                data: impl Into<bytes::Bytes>,
            ) -> Result<$message, $crate::LayoutError> {
                $crate::Raster::new(width, height, encoding, step, data).map($message)
            }

            #[doc = concat!("A `", stringify!($message), "` whose rows have no padding (`step = width * bytes_per_pixel`).")]
            pub fn from_packed(
                width: u32,
                height: u32,
                encoding: $encoding,
                data: impl Into<bytes::Bytes>,
            ) -> Result<$message, $crate::LayoutError> {
                $crate::Raster::from_packed(width, height, encoding, data).map($message)
            }

            #[doc = concat!("This `", stringify!($message), "` with the sensor time `stamp` (when it was captured).")]
            pub fn with_stamp(self, stamp: streamwire_core::Timestamp) -> $message {
                $message(self.0.with_stamp(stamp))
            }

            #[doc = concat!("This `", stringify!($message), "` with the coordinate frame `frame_id` (the camera's optical frame).")]
            pub fn with_frame_id(self, frame_id: impl Into<std::sync::Arc<str>>) -> $message {
                $message(self.0.with_frame_id(frame_id))
            }
        }
    };
}

pub(crate) use raster_message;
