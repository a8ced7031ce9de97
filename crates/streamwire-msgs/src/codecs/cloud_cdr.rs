//! `sensor_msgs/msg/PointCloud2` as CDR (XCDR1 little-endian, with its 4-byte encapsulation
//! header), the bytes point_cloud_transport's `zstd` plugin compresses. Written here rather
//! than taken from `streamwire-ros2`, which sits beside this crate, not below it; its
//! `tests/cloud_codecs.rs` checks that both write the same bytes.

use std::sync::Arc;

use bytes::Bytes;
use streamwire_core::Timestamp;

use crate::{PointCloud, PointDatatype, PointField};

/// Why serialized PointCloud2 bytes could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CdrCloudError {
    /// The bytes end before the field.
    #[error("the serialized PointCloud2 ends inside `{0}`")]
    Truncated(&'static str),
    /// A value is not one the field can hold.
    #[error("the serialized PointCloud2 has an invalid `{field}`: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

/// Writes CDR, aligning each primitive to its size from the end of the encapsulation header.
struct Writer(Vec<u8>);

impl Writer {
    fn align(&mut self, size: usize) {
        while !(self.0.len() - 4).is_multiple_of(size) {
            self.0.push(0);
        }
    }

    fn u32(&mut self, value: u32) {
        self.align(4);
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn string(&mut self, text: &str) {
        // A name or frame id longer than u32 cannot come from a message that fits memory.
        self.u32(u32::try_from(text.len() + 1).unwrap_or(u32::MAX));
        self.0.extend_from_slice(text.as_bytes());
        self.0.push(0);
    }
}

/// The serialized bytes before and after the cloud's data: `(prefix, suffix)`. The whole
/// message is `prefix`, the `height * row_step` data bytes, `suffix`.
pub(super) fn frame(cloud: &PointCloud) -> (Vec<u8>, [u8; 1]) {
    let mut w = Writer(vec![0x00, 0x01, 0x00, 0x00]);
    let nanos = cloud.stamp().as_nanos();
    // ROS 2's Time holds i32 seconds: until 2038 a stamp fits; past it, it saturates.
    w.u32(i32::try_from(nanos / 1_000_000_000).unwrap_or(i32::MAX) as u32);
    w.u32((nanos % 1_000_000_000) as u32);
    w.string(cloud.frame_id());
    w.u32(cloud.height());
    w.u32(cloud.width());
    w.u32(u32::try_from(cloud.fields().len()).unwrap_or(u32::MAX));
    for field in cloud.fields() {
        w.string(&field.name);
        w.u32(field.offset);
        w.0.push(field.datatype.ros_id());
        w.u32(field.count);
    }
    w.0.push(u8::from(cloud.is_bigendian()));
    w.u32(cloud.point_step());
    w.u32(cloud.row_step());
    w.u32(u32::try_from(cloud.data().len()).unwrap_or(u32::MAX));
    (w.0, [u8::from(cloud.is_dense())])
}

/// Reads CDR with every length checked against the bytes left.
struct Reader {
    data: Bytes,
    pos: usize,
}

impl Reader {
    fn take(&mut self, len: usize, what: &'static str) -> Result<Bytes, CdrCloudError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.data.len())
            .ok_or(CdrCloudError::Truncated(what))?;
        let bytes = self.data.slice(self.pos..end);
        self.pos = end;
        Ok(bytes)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, CdrCloudError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, CdrCloudError> {
        self.pos += (4 - (self.pos - 4) % 4) % 4;
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn string(&mut self, what: &'static str) -> Result<String, CdrCloudError> {
        let len = self.u32(what)? as usize;
        let bytes = self.take(len, what)?;
        let text = bytes.strip_suffix(&[0]).ok_or(CdrCloudError::Invalid {
            field: what,
            reason: "a string without its NUL".to_owned(),
        })?;
        String::from_utf8(text.to_vec()).map_err(|e| CdrCloudError::Invalid {
            field: what,
            reason: e.to_string(),
        })
    }

    fn bool(&mut self, what: &'static str) -> Result<bool, CdrCloudError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(CdrCloudError::Invalid {
                field: what,
                reason: format!("{other} is not a bool"),
            }),
        }
    }
}

/// The parts of a serialized PointCloud2, the data a slice of `data` (no copy).
pub(super) struct Parsed {
    pub(super) stamp: Timestamp,
    pub(super) frame_id: Arc<str>,
    pub(super) fields: Vec<PointField>,
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) point_step: u32,
    pub(super) row_step: u32,
    pub(super) is_bigendian: bool,
    pub(super) is_dense: bool,
    pub(super) data: Bytes,
}

/// Reads a serialized PointCloud2 (little-endian CDR only).
pub(super) fn parse(data: Bytes) -> Result<Parsed, CdrCloudError> {
    if data.get(..2) != Some(&[0x00, 0x01]) {
        return Err(CdrCloudError::Invalid {
            field: "encapsulation",
            reason: "not little-endian CDR (00 01)".to_owned(),
        });
    }
    let mut r = Reader { data, pos: 4 };
    let sec = r.u32("header.stamp.sec")?;
    let nanosec = r.u32("header.stamp.nanosec")?;
    let stamp =
        Timestamp::from_nanos(u64::from(sec).saturating_mul(1_000_000_000) + u64::from(nanosec));
    let frame_id = Arc::from(r.string("header.frame_id")?);
    let height = r.u32("height")?;
    let width = r.u32("width")?;
    let count = r.u32("fields")? as usize;
    // Each field takes at least 13 bytes: a count past the bytes left is refused unallocated.
    if count > (r.data.len() - r.pos) / 13 {
        return Err(CdrCloudError::Truncated("fields"));
    }
    let mut fields = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.string("fields.name")?;
        let offset = r.u32("fields.offset")?;
        let id = r.u8("fields.datatype")?;
        let datatype = PointDatatype::from_ros_id(id).ok_or(CdrCloudError::Invalid {
            field: "fields.datatype",
            reason: format!("{id} is not one of 1..=8"),
        })?;
        fields.push(PointField::new(
            name,
            offset,
            datatype,
            r.u32("fields.count")?,
        ));
    }
    let is_bigendian = r.bool("is_bigendian")?;
    let point_step = r.u32("point_step")?;
    let row_step = r.u32("row_step")?;
    let len = r.u32("data")? as usize;
    let data = r.take(len, "data")?;
    let is_dense = r.bool("is_dense")?;
    Ok(Parsed {
        stamp,
        frame_id,
        fields,
        width,
        height,
        point_step,
        row_step,
        is_bigendian,
        is_dense,
        data,
    })
}
