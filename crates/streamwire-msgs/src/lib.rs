//! streamwire's built-in messages and the codecs that carry them.
//!
//! Messages: [`Image`], [`DepthImage`], [`CompressedImage`], [`PointCloud`], [`Odometry`].
//! Codecs: [`Jpeg`] for 8-bit colour and greyscale images (the default of
//! `Compressed<Image>`), [`Zstd`] lossless for depth (the default of
//! `Compressed<DepthImage>`) and for images that must stay exact.

mod cloud;
pub mod codecs;
mod compressed;
mod depth;
mod image;
mod odometry;

pub use cloud::{PointCloud, PointField};
pub use codecs::{Jpeg, JpegPixels, Zstd};
pub use compressed::CompressedImage;
pub use depth::{DepthEncoding, DepthImage};
pub use image::{Image, ImageEncoding};
pub use odometry::Odometry;
