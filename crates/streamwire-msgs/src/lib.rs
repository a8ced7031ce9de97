//! streamwire's built-in messages and the codecs that carry them.
//!
//! # Messages
//!
//! | type | as in ROS | type name |
//! |---|---|---|
//! | [`Image`] | `sensor_msgs/Image` (rgb8, bgr8, rgba8, bgra8, mono8) | `streamwire/Image` |
//! | [`DepthImage`] | `sensor_msgs/Image` (16UC1 mm, 32FC1 m) | `streamwire/DepthImage` |
//! | [`CompressedImage`] | `sensor_msgs/CompressedImage` | `streamwire/CompressedImage` |
//! | [`PointCloud`] | `sensor_msgs/PointCloud2` (+ a [PCD reader](pcd)) | `streamwire/PointCloud` |
//! | [`Odometry`] | `nav_msgs/Odometry` | `streamwire/Odometry` |
//! | [`Detections`] | `vision_msgs/Detection2DArray` (boxes) | `streamwire/Detections` |
//! | [`OccupancyGrid`] | `nav_msgs/OccupancyGrid` | `streamwire/OccupancyGrid` |
//! | [`Twist`] | `geometry_msgs/Twist` (a velocity command) | `streamwire/Twist` |
//! | [`Transforms`] | `tf2_msgs/TFMessage` (frame transforms, `/tf`) | `streamwire/Transforms` |
//! | [`LogRecord`] | `rcl_interfaces/Log` (a log line, `/rosout`) | `streamwire/LogRecord` |
//!
//! [`Image`] and [`DepthImage`] are one raster: each is a message (its own type name) around
//! a [`Raster`] of its [`RasterEncoding`], which holds the size check, the accessors and the
//! wire form once; generic code over both takes a [`RasterMessage`].
//!
//! Every message is cheap to clone (pixels and points are shared [`bytes::Bytes`], names
//! are `Arc<str>`), has a sensor `stamp` and a `frame_id`, and is valid by construction:
//! the constructors check sizes with overflow-checked arithmetic and return an error
//! ([`LayoutError`], [`PointCloudError`], [`OdometryError`]) rather than panic. Deserializing
//! runs the same checks, so corrupt or hostile bytes from a wire or a file become an
//! error, never an invalid message.
//!
//! # Codecs
//!
//! | codec | carries | fidelity | format strings | default of |
//! |---|---|---|---|---|
//! | [`Jpeg`] | [`Image`] | lossy | `"rgb8; jpeg compressed bgr8"`, `"mono8; jpeg compressed "` | `Compressed<Image>` |
//! | [`Zstd`] | [`DepthImage`] | lossless | `"16UC1; zstd"`, `"32FC1; zstd"` | `Compressed<DepthImage>` |
//! | [`Zstd`] | [`Image`] | lossless | `"rgb8; zstd"`, ... | |
//!
//! Both encode into a [`CompressedImage`] that keeps the stamp, the frame id and the
//! original size. JPEG refuses rgba8/bgra8 unless `drop_alpha` is set, and cannot carry
//! depth at all: `Compressed<DepthImage, Jpeg>` does not compile (see [`JpegPixels`]).
//!
//! ```
//! use streamwire::{Codec, Timestamp};
//! use streamwire::msgs::{DepthImage, Image, ImageEncoding, Jpeg, Zstd};
//!
//! let pixels: Vec<u8> = (0..64 * 48 * 3).map(|i| (i % 251) as u8).collect();
//! let image = Image::from_packed(64, 48, ImageEncoding::Rgb8, pixels)?
//!     .with_stamp(Timestamp::from_nanos(7))
//!     .with_frame_id("camera");
//! let jpeg = Jpeg::default();
//! let compressed = jpeg.encode(&image)?;
//! assert_eq!(compressed.format(), "rgb8; jpeg compressed bgr8");
//! let decoded: Image = jpeg.decode(&compressed)?;
//! assert_eq!((decoded.width(), decoded.height(), decoded.stamp()), (64, 48, image.stamp()));
//!
//! let depth = DepthImage::from_mm(4, 2, &[0, 500, 1000, 1500, 2000, 2500, 3000, 65535])?;
//! let compressed = Zstd::default().encode(&depth)?;
//! assert_eq!(compressed.format(), "16UC1; zstd");
//! let back: DepthImage = Zstd::default().decode(&compressed)?;
//! assert_eq!(back, depth); // exact
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Adding your own message and codec
//!
//! A message is any `Clone + Debug + Serialize + Deserialize` type with
//! `#[derive(Message)]` and a stable type name. Keep large payloads in [`bytes::Bytes`]
//! (or an `Arc`) so clones are cheap, and validate in `Deserialize` (serde's
//! `try_from`) if the type has invariants.
//!
//! A codec is a type implementing [`Codec<M>`](streamwire_core::Codec) for your message:
//! its parameters (built from text in [`from_params`](streamwire_core::Codec::from_params),
//! so a typo fails when the blueprint is built), its [`Fidelity`](streamwire_core::Fidelity),
//! and `encode`/`decode`. `decode` gets bytes from the wire: it must return an error on
//! corrupt or hostile input, never panic or allocate what the input merely claims. The
//! engines of `streamwire-codec` (JPEG with decode limits, exact-size zstd; re-exported as
//! `streamwire::engines`) do the hard part. Implement [`DefaultCodec`](streamwire_core::DefaultCodec) for your message so
//! ports can say `Compressed<MyMessage>`.
//!
//! Here a laser scan of millimetre ranges gets a lossless codec reusing the zstd engine:
//!
//! ```
//! use bytes::Bytes;
//! use serde::{Deserialize, Serialize};
//! use streamwire::engines::lossless;
//! use streamwire::prelude::*;
//! use streamwire::Payload;
//!
//! /// One sweep of a 2D lidar: ranges in millimetres, little-endian u16.
//! #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Message)]
//! #[message(name = "acme/Scan")]
//! pub struct Scan {
//!     pub stamp: Timestamp,
//!     #[serde(with = "streamwire::blob")]
//!     pub ranges_mm: Bytes,
//! }
//!
//! /// The scan, zstd-compressed, with its length so the decoder allocates no more.
//! #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! #[message(name = "acme/ScanZstd")]
//! pub struct ScanZstd {
//!     pub stamp: Timestamp,
//!     pub len: u32,
//!     #[serde(with = "streamwire::blob")]
//!     pub data: Bytes,
//! }
//!
//! /// Lossless scan compression.
//! pub struct ScanCodec {
//!     level: i32,
//! }
//!
//! impl Codec<Scan> for ScanCodec {
//!     const NAME: &'static str = "scan_zstd";
//!     type Encoded = ScanZstd;
//!
//!     fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
//!         params.expect_only(Self::NAME, &["level"])?;
//!         Ok(ScanCodec { level: params.parse("level")?.unwrap_or(3) })
//!     }
//!     fn params(&self) -> CodecParams {
//!         CodecParams::new().with("level", self.level)
//!     }
//!     fn fidelity(&self) -> Fidelity {
//!         Fidelity::LOSSLESS
//!     }
//!     fn encode(&self, scan: &Scan) -> Result<ScanZstd, CodecError> {
//!         let len = scan.ranges_mm.len();
//!         let data = lossless::compress_rows(std::iter::once(&scan.ranges_mm[..]), len, self.level)
//!             .map_err(|e| CodecError::Encode(Box::new(e)))?;
//!         let len = u32::try_from(len).map_err(|e| CodecError::Encode(Box::new(e)))?;
//!         Ok(ScanZstd { stamp: scan.stamp, len, data: data.into() })
//!     }
//!     fn decode(&self, encoded: &ScanZstd) -> Result<Scan, CodecError> {
//!         // The engine refuses a frame whose size differs from `len`, and a `len` no
//!         // frame of this size could expand to.
//!         let ranges = lossless::decompress_exact(&encoded.data, encoded.len as usize)
//!             .map_err(|e| CodecError::Decode(Box::new(e)))?;
//!         Ok(Scan { stamp: encoded.stamp, ranges_mm: ranges.into() })
//!     }
//! }
//!
//! impl DefaultCodec for Scan {
//!     type Codec = ScanCodec;
//! }
//!
//! // `Out<Compressed<Scan>>` now works: the port's payload names the codec.
//! let codec = <Compressed<Scan> as Payload>::FORM.codec().map(|c| c.name());
//! assert_eq!(codec, Some("scan_zstd"));
//!
//! let scan = Scan { stamp: Timestamp::from_nanos(5), ranges_mm: Bytes::from(vec![7u8; 720]) };
//! let codec = ScanCodec::from_params(&CodecParams::new().with("level", 1))?;
//! let encoded = codec.encode(&scan)?;
//! assert!(encoded.data.len() < 720);
//! assert_eq!(codec.decode(&encoded)?, scan);
//! // Hostile input is an error.
//! let bad = ScanZstd { len: 4_000_000_000, ..encoded };
//! assert!(codec.decode(&bad).is_err());
//! # Ok::<(), CodecError>(())
//! ```
//!
//! A codec for a built-in message works the same way: implement `Codec<PointCloud>` for
//! your own codec type and name it on the port, `Out<Compressed<PointCloud, MyCloudCodec>>`
//! (Rust's orphan rule leaves `DefaultCodec` for built-in messages to this crate).

mod cloud;
pub mod codecs;
mod compressed;
mod compressed_cloud;
mod depth;
mod header;
mod image;
mod layout;
mod log;
pub mod log_hub;
mod odometry;
pub mod pcd;
mod perception;
mod raster;
mod transforms;

pub use cloud::{PointCloud, PointCloudError, PointDatatype, PointField, PointScalar};
#[cfg(feature = "h264")]
pub use codecs::H264;
pub use codecs::{
    BitrateBudget, CloudZstd, Cloudini, Jpeg, JpegPixels, Zstd, format_bitrate, parse_bitrate,
};
pub use compressed::{
    CompressedFormat, CompressedImage, FormatError, ImageCompression, RawEncoding,
};
pub use compressed_cloud::CompressedPointCloud;
pub use depth::{DepthEncoding, DepthImage};
pub use image::{Image, ImageEncoding};
pub use layout::{LayoutError, ParseEncodingError};
pub use log::{LogLevel, LogRecord};
pub use odometry::{
    Covariance6, Odometry, OdometryError, Pose, QUATERNION_TOLERANCE, Quaternion, Twist, Vector3,
};
pub use pcd::PcdError;
pub use perception::{DetectionBox, Detections, OccupancyGrid, PerceptionError};
pub use raster::{Raster, RasterEncoding, RasterMessage};
pub use transforms::{TransformError, TransformStamped, Transforms};

/// Every built-in message carries its sensor stamp, so inputs of them can be paired by
/// it (`pair_by_stamp`).
macro_rules! stamped {
    ($($message:ty),*) => {
        $(impl streamwire_core::Stamped for $message {
            fn stamp(&self) -> streamwire_core::Timestamp {
                <$message>::stamp(self)
            }
        })*
    };
}

// Image and DepthImage: `raster_message!`.
stamped!(
    CompressedImage,
    CompressedPointCloud,
    PointCloud,
    Odometry,
    OccupancyGrid
);

impl streamwire_core::Stamped for LogRecord {
    fn stamp(&self) -> streamwire_core::Timestamp {
        self.stamp
    }
}

impl streamwire_core::Stamped for Detections {
    fn stamp(&self) -> streamwire_core::Timestamp {
        self.stamp
    }
}
