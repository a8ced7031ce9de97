//! A point cloud's encoded form, as `point_cloud_interfaces/msg/CompressedPointCloud2`.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

use crate::PointField;

/// A point cloud encoded by a cloud codec ([`Cloudini`](crate::Cloudini),
/// [`CloudZstd`](crate::CloudZstd)): the cloud's shape as `sensor_msgs/PointCloud2` has it and
/// the encoded bytes, with the `format` string point_cloud_transport's plugins read
/// (`cloudini`, `zstd`, or `zstd-shuffled`, streamwire's own). It maps to ROS 2's
/// `point_cloud_interfaces/msg/CompressedPointCloud2` field for field.
///
/// Nothing here is trusted by a decoder: the codecs check the shape against the encoded
/// bytes, and the bytes against their limits, before allocating.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/CompressedPointCloud", kind = sensor, crate = streamwire_core)]
pub struct CompressedPointCloud {
    pub(crate) fields: Arc<[PointField]>,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) point_step: u32,
    pub(crate) row_step: u32,
    pub(crate) is_bigendian: bool,
    pub(crate) is_dense: bool,
    pub(crate) format: Arc<str>,
    #[serde(with = "streamwire_core::blob")]
    pub(crate) compressed_data: Bytes,
    pub(crate) stamp: Timestamp,
    pub(crate) frame_id: Arc<str>,
}

impl CompressedPointCloud {
    /// An encoded cloud as a peer sent it (a ROS 2 publisher, a recording): `format` names
    /// what `compressed_data` holds, the rest is the cloud's shape. Nothing is checked here:
    /// the decoders check the shape against the bytes.
    pub fn new(
        fields: impl Into<Arc<[PointField]>>,
        (width, height): (u32, u32),
        (point_step, row_step): (u32, u32),
        format: impl Into<Arc<str>>,
        compressed_data: impl Into<Bytes>,
    ) -> CompressedPointCloud {
        CompressedPointCloud {
            fields: fields.into(),
            width,
            height,
            point_step,
            row_step,
            is_bigendian: false,
            is_dense: false,
            format: format.into(),
            compressed_data: compressed_data.into(),
            stamp: Timestamp::ZERO,
            frame_id: Arc::from(""),
        }
    }

    /// This message with its values marked big-endian or not.
    pub fn with_bigendian(mut self, is_bigendian: bool) -> CompressedPointCloud {
        self.is_bigendian = is_bigendian;
        self
    }

    /// This message marked as holding no invalid points (`true`) or maybe some.
    pub fn with_dense(mut self, is_dense: bool) -> CompressedPointCloud {
        self.is_dense = is_dense;
        self
    }

    /// The fields of each point of the cloud before encoding.
    pub fn fields(&self) -> &[PointField] {
        &self.fields
    }

    /// Points per row.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Bytes per point.
    pub fn point_step(&self) -> u32 {
        self.point_step
    }

    /// Bytes per row of the decoded cloud (packed: `width * point_step`).
    pub fn row_step(&self) -> u32 {
        self.row_step
    }

    /// True when values are big-endian (never, for what the codecs write).
    pub fn is_bigendian(&self) -> bool {
        self.is_bigendian
    }

    /// True when the producer said the cloud holds no invalid points.
    pub fn is_dense(&self) -> bool {
        self.is_dense
    }

    /// The format string: `cloudini`, `zstd`, or `zstd-shuffled`.
    pub fn format(&self) -> &str {
        &self.format
    }

    /// The encoded bytes.
    pub fn compressed_data(&self) -> &Bytes {
        &self.compressed_data
    }

    /// The frame id, shared (codecs pass it on without copying the string).
    pub(crate) fn frame_id_shared(&self) -> Arc<str> {
        self.frame_id.clone()
    }
}

crate::header::stamp_and_frame_id!(impl CompressedPointCloud);
