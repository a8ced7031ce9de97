//! `point_cloud_interfaces/msg/CompressedPointCloud2`: a [`CompressedPointCloud`] field for
//! field (point_cloud_transport's encoded clouds; the `format` string names the plugin).

use streamwire_msgs::{CompressedPointCloud, PointDatatype, PointField};

use crate::cdr::{CdrReader, CdrWriter};
use crate::{DecodeError, EncodeError, RosMessage, read_header, write_header};

const COMPRESSED_POINT_CLOUD2: &str = "point_cloud_interfaces/msg/CompressedPointCloud2";
/// The fewest CDR bytes of one `sensor_msgs/msg/PointField` (an empty name, aligned).
const MIN_POINT_FIELD_BYTES: usize = 13;

impl RosMessage for CompressedPointCloud {
    const ROS_TYPE: &'static str = COMPRESSED_POINT_CLOUD2;

    fn write_cdr(&self, w: &mut CdrWriter) -> Result<(), EncodeError> {
        write_header(w, self.stamp(), self.frame_id())?;
        w.u32(self.height());
        w.u32(self.width());
        w.sequence_len(self.fields().len(), "fields")?;
        for field in self.fields() {
            w.string(&field.name, "fields.name")?;
            w.u32(field.offset);
            w.u8(field.datatype.ros_id());
            w.u32(field.count);
        }
        w.bool(self.is_bigendian());
        w.u32(self.point_step());
        w.u32(self.row_step());
        w.bytes(self.compressed_data(), "compressed_data")?;
        w.bool(self.is_dense());
        w.string(self.format(), "format")?;
        Ok(())
    }

    fn read_cdr(r: &mut CdrReader) -> Result<CompressedPointCloud, DecodeError> {
        let (stamp, frame_id) = read_header(r, COMPRESSED_POINT_CLOUD2)?;
        let height = r.u32("height")?;
        let width = r.u32("width")?;
        let count = r.sequence_len(MIN_POINT_FIELD_BYTES, "fields")?;
        let mut fields = Vec::with_capacity(count);
        for _ in 0..count {
            let name = r.string("fields.name")?;
            let offset = r.u32("fields.offset")?;
            let id = r.u8("fields.datatype")?;
            let datatype = PointDatatype::from_ros_id(id).ok_or_else(|| DecodeError::Unmapped {
                ros_type: COMPRESSED_POINT_CLOUD2,
                field: "fields.datatype",
                value: id.to_string(),
                rule: "a point field's datatype is 1..=8 (INT8..FLOAT64)",
            })?;
            let values = r.u32("fields.count")?;
            fields.push(PointField::new(name.as_ref(), offset, datatype, values));
        }
        let is_bigendian = r.bool("is_bigendian")?;
        let point_step = r.u32("point_step")?;
        let row_step = r.u32("row_step")?;
        let data = r.bytes("compressed_data")?;
        let is_dense = r.bool("is_dense")?;
        let format = r.string("format")?;
        let message = CompressedPointCloud::new(
            fields,
            (width, height),
            (point_step, row_step),
            format,
            data,
        );
        Ok(message
            .with_bigendian(is_bigendian)
            .with_dense(is_dense)
            .with_stamp(stamp)
            .with_frame_id(frame_id))
    }
}
