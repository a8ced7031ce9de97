//! Point clouds.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

use crate::layout;

/// The scalar type of a [`PointField`] (the `sensor_msgs/PointField` constants
/// `INT8 = 1` .. `FLOAT64 = 8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum PointDatatype {
    /// Signed 8-bit integer.
    Int8,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Signed 16-bit integer.
    Int16,
    /// Unsigned 16-bit integer.
    Uint16,
    /// Signed 32-bit integer.
    Int32,
    /// Unsigned 32-bit integer.
    Uint32,
    /// 32-bit float.
    Float32,
    /// 64-bit float.
    Float64,
}

impl PointDatatype {
    /// Every datatype, in the order of the ROS constants.
    pub const ALL: [PointDatatype; 8] = [
        PointDatatype::Int8,
        PointDatatype::Uint8,
        PointDatatype::Int16,
        PointDatatype::Uint16,
        PointDatatype::Int32,
        PointDatatype::Uint32,
        PointDatatype::Float32,
        PointDatatype::Float64,
    ];

    /// Bytes of one value.
    pub const fn size(self) -> u32 {
        match self {
            PointDatatype::Int8 | PointDatatype::Uint8 => 1,
            PointDatatype::Int16 | PointDatatype::Uint16 => 2,
            PointDatatype::Int32 | PointDatatype::Uint32 | PointDatatype::Float32 => 4,
            PointDatatype::Float64 => 8,
        }
    }

    /// The `sensor_msgs/PointField` constant: `INT8 = 1` .. `FLOAT64 = 8`.
    pub const fn ros_id(self) -> u8 {
        match self {
            PointDatatype::Int8 => 1,
            PointDatatype::Uint8 => 2,
            PointDatatype::Int16 => 3,
            PointDatatype::Uint16 => 4,
            PointDatatype::Int32 => 5,
            PointDatatype::Uint32 => 6,
            PointDatatype::Float32 => 7,
            PointDatatype::Float64 => 8,
        }
    }

    /// The datatype of a `sensor_msgs/PointField` constant, if it is one.
    pub fn from_ros_id(id: u8) -> Option<PointDatatype> {
        PointDatatype::ALL.into_iter().find(|d| d.ros_id() == id)
    }

    /// The ROS constant's name, e.g. `FLOAT32`.
    pub const fn as_str(self) -> &'static str {
        match self {
            PointDatatype::Int8 => "INT8",
            PointDatatype::Uint8 => "UINT8",
            PointDatatype::Int16 => "INT16",
            PointDatatype::Uint16 => "UINT16",
            PointDatatype::Int32 => "INT32",
            PointDatatype::Uint32 => "UINT32",
            PointDatatype::Float32 => "FLOAT32",
            PointDatatype::Float64 => "FLOAT64",
        }
    }
}

impl fmt::Display for PointDatatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field of a point (as `sensor_msgs/PointField`): `count` values of `datatype` at
/// byte `offset` within each point.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PointField {
    /// Field name, e.g. `x`.
    pub name: String,
    /// Byte offset within a point.
    pub offset: u32,
    /// Type of each value.
    pub datatype: PointDatatype,
    /// Number of values (at least 1).
    pub count: u32,
}

impl PointField {
    /// A field of `count` values.
    pub fn new(
        name: impl Into<String>,
        offset: u32,
        datatype: PointDatatype,
        count: u32,
    ) -> PointField {
        PointField {
            name: name.into(),
            offset,
            datatype,
            count,
        }
    }

    /// Bytes past the field's last value within a point (`offset + size * count`),
    /// computed without overflow.
    pub fn end(&self) -> u64 {
        u64::from(self.offset) + u64::from(self.datatype.size()) * u64::from(self.count)
    }
}

/// Why a point cloud's fields, sizes and buffer do not fit together, or a field could
/// not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PointCloudError {
    /// A field ends past the end of a point.
    #[error("field `{name}` ends at byte {end}, past the point step {point_step}")]
    FieldOutsidePoint {
        /// The field.
        name: String,
        /// Where the field ends (`offset + size * count`).
        end: u64,
        /// Bytes per point.
        point_step: u32,
    },
    /// A field has `count` 0.
    #[error("field `{name}` has count 0 (a field holds at least one value)")]
    ZeroCount {
        /// The field.
        name: String,
    },
    /// Two fields have the same name.
    #[error("two fields are named `{name}`")]
    DuplicateField {
        /// The repeated name.
        name: String,
    },
    /// A non-empty cloud has points of 0 bytes.
    #[error("point step is 0 for a cloud of {width}x{height} points")]
    ZeroPointStep {
        /// The width given.
        width: u32,
        /// The height given.
        height: u32,
    },
    /// The row length is shorter than `width` points.
    #[error("row step {row_step} is shorter than {width} points x point step {point_step}")]
    RowStepTooShort {
        /// The row step given.
        row_step: u32,
        /// The width given.
        width: u32,
        /// The point step given.
        point_step: u32,
    },
    /// The buffer is not exactly `height * row_step` bytes long.
    #[error(
        "the buffer holds {actual} bytes, but {height} rows x row step {row_step} = {expected}"
    )]
    WrongLength {
        /// `height * row_step`.
        expected: u64,
        /// The buffer's length.
        actual: usize,
        /// The height given.
        height: u32,
        /// The row step given.
        row_step: u32,
    },
    /// A size does not fit the integer type that must hold it.
    #[error("the point cloud is too large: {what} overflows")]
    Overflow {
        /// Which product overflowed.
        what: &'static str,
    },
    /// No field has this name.
    #[error("the point cloud has no field `{name}` (it has: {available})")]
    NoSuchField {
        /// The name asked for.
        name: String,
        /// The fields there are, comma separated.
        available: String,
    },
    /// The field holds another type than the one asked for.
    #[error("field `{name}` holds {found} values, not {expected}")]
    WrongDatatype {
        /// The field.
        name: String,
        /// The type asked for.
        expected: PointDatatype,
        /// The field's type.
        found: PointDatatype,
    },
}

/// A point cloud with packed point data, as `sensor_msgs/PointCloud2`.
///
/// `height` rows (1 for an unordered cloud, the image height for an organized one) of
/// `width` points; each point is `point_step` bytes laid out as `fields` describe, rows
/// `row_step` bytes apart. The data is shared ([`Bytes`]): a clone copies nothing.
/// An empty cloud (width or height 0) is allowed. [`PointCloud::from_pcd`] reads PCL's
/// PCD files.
///
/// ```
/// use streamwire::msgs::{PointCloud, PointDatatype, PointField};
///
/// let fields = vec![
///     PointField::new("x", 0, PointDatatype::Float32, 1),
///     PointField::new("y", 4, PointDatatype::Float32, 1),
///     PointField::new("z", 8, PointDatatype::Float32, 1),
/// ];
/// let points = [[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
/// let data: Vec<u8> = points.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
/// let cloud = PointCloud::new(fields, 2, 1, 12, 24, data)?.with_frame_id("lidar");
/// assert_eq!(cloud.xyz()?.collect::<Vec<_>>(), points);
/// assert_eq!(cloud.values::<f32>("y")?.sum::<f32>(), 7.0);
/// # Ok::<(), streamwire_msgs::PointCloudError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/PointCloud", kind = sensor, crate = streamwire_core)]
#[serde(try_from = "PointCloudRepr")]
pub struct PointCloud {
    fields: Arc<[PointField]>,
    width: u32,
    height: u32,
    point_step: u32,
    row_step: u32,
    is_bigendian: bool,
    is_dense: bool,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

/// The unchecked wire form of a [`PointCloud`].
#[derive(Deserialize)]
struct PointCloudRepr {
    fields: Vec<PointField>,
    width: u32,
    height: u32,
    point_step: u32,
    row_step: u32,
    is_bigendian: bool,
    is_dense: bool,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
}

impl TryFrom<PointCloudRepr> for PointCloud {
    type Error = PointCloudError;

    fn try_from(repr: PointCloudRepr) -> Result<PointCloud, PointCloudError> {
        Ok(PointCloud::new(
            repr.fields,
            repr.width,
            repr.height,
            repr.point_step,
            repr.row_step,
            repr.data,
        )?
        .with_bigendian(repr.is_bigendian)
        .with_dense(repr.is_dense)
        .with_stamp(repr.stamp)
        .with_frame_id(repr.frame_id))
    }
}

/// The checked sizes of a cloud, as `usize`.
#[derive(Clone, Copy)]
struct CloudLayout {
    width: usize,
    height: usize,
    point_step: usize,
    row_step: usize,
}

crate::header::stamp_and_frame_id!(impl PointCloud);

impl PointCloud {
    /// A cloud of `height` rows of `width` points, each `point_step` bytes laid out as
    /// `fields` say, rows `row_step` bytes apart, in `data` (exactly `height * row_step`
    /// bytes, little-endian until [`with_bigendian`](PointCloud::with_bigendian)).
    ///
    /// Every field must lie inside a point, have a count of at least 1 and a unique name;
    /// `point_step` must be at least 1 unless the cloud is empty, and `row_step` at least
    /// `width * point_step`. Not dense until
    /// [`with_dense`](PointCloud::with_dense).
    pub fn new(
        fields: impl Into<Arc<[PointField]>>,
        width: u32,
        height: u32,
        point_step: u32,
        row_step: u32,
        data: impl Into<Bytes>,
    ) -> Result<PointCloud, PointCloudError> {
        let fields = fields.into();
        let data = data.into();
        let mut names = HashSet::with_capacity(fields.len());
        for field in fields.iter() {
            if field.count == 0 {
                return Err(PointCloudError::ZeroCount {
                    name: layout::clip(&field.name),
                });
            }
            if field.end() > u64::from(point_step) {
                return Err(PointCloudError::FieldOutsidePoint {
                    name: layout::clip(&field.name),
                    end: field.end(),
                    point_step,
                });
            }
            if !names.insert(field.name.as_str()) {
                return Err(PointCloudError::DuplicateField {
                    name: layout::clip(&field.name),
                });
            }
        }
        // Zero-byte points would let a cloud claim billions of points in an empty buffer.
        if point_step == 0 && width != 0 && height != 0 {
            return Err(PointCloudError::ZeroPointStep { width, height });
        }
        if u64::from(row_step) < u64::from(width) * u64::from(point_step) {
            return Err(PointCloudError::RowStepTooShort {
                row_step,
                width,
                point_step,
            });
        }
        let expected = u64::from(height) * u64::from(row_step);
        if usize::try_from(expected).ok() != Some(data.len()) {
            return Err(PointCloudError::WrongLength {
                expected,
                actual: data.len(),
                height,
                row_step,
            });
        }
        let cloud = PointCloud {
            fields,
            width,
            height,
            point_step,
            row_step,
            is_bigendian: false,
            is_dense: false,
            data,
            stamp: Timestamp::ZERO,
            frame_id: Arc::from(""),
        };
        cloud.layout()?;
        Ok(cloud)
    }

    /// This cloud with its values read as big-endian (`true`) or little-endian.
    pub fn with_bigendian(mut self, is_bigendian: bool) -> PointCloud {
        self.is_bigendian = is_bigendian;
        self
    }

    /// This cloud marked as holding no invalid (NaN) points (`true`) or maybe some.
    pub fn with_dense(mut self, is_dense: bool) -> PointCloud {
        self.is_dense = is_dense;
        self
    }

    /// The fields of each point.
    pub fn fields(&self) -> &[PointField] {
        &self.fields
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&PointField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Points per row.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Rows: 1 for an unordered cloud, the image height for an organized one.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Bytes per point.
    pub fn point_step(&self) -> u32 {
        self.point_step
    }

    /// Bytes from the start of one row to the start of the next.
    pub fn row_step(&self) -> u32 {
        self.row_step
    }

    /// True when values are big-endian.
    pub fn is_bigendian(&self) -> bool {
        self.is_bigendian
    }

    /// True when the producer says there are no invalid points.
    pub fn is_dense(&self) -> bool {
        self.is_dense
    }

    /// All `height * row_step` bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The number of points, `width * height`.
    pub fn len(&self) -> usize {
        self.layout()
            .map_or(0, |l| l.width.saturating_mul(l.height))
    }

    /// True when the cloud has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the point in column `u`, row `v`, or `None` outside the cloud. In an
    /// organized cloud that is the point seen by pixel `(u, v)`.
    pub fn point(&self, u: u32, v: u32) -> Option<&[u8]> {
        let layout = self.layout().ok()?;
        point_bytes(
            &self.data,
            layout,
            usize::try_from(u).ok()?,
            usize::try_from(v).ok()?,
        )
    }

    /// Every point's bytes, row by row.
    pub fn points(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let layout = self.layout().unwrap_or(CloudLayout {
            width: 0,
            height: 0,
            point_step: 0,
            row_step: 0,
        });
        let data = &self.data;
        // A cloud of zero-width rows has no point, however many rows it claims.
        let rows = if layout.width == 0 { 0 } else { layout.height };
        (0..rows).flat_map(move |v| {
            (0..layout.width).filter_map(move |u| point_bytes(data, layout, u, v))
        })
    }

    /// The first value of field `name` for every point, row by row, as `T` (which must be
    /// the field's datatype: `f32` for `FLOAT32`, `u8` for `UINT8`, ...).
    pub fn values<T: PointScalar>(
        &self,
        name: &str,
    ) -> Result<impl Iterator<Item = T> + '_, PointCloudError> {
        let field = self
            .field(name)
            .ok_or_else(|| PointCloudError::NoSuchField {
                name: layout::clip(name),
                available: self
                    .fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        if field.datatype != T::DATATYPE {
            return Err(PointCloudError::WrongDatatype {
                name: field.name.clone(),
                expected: T::DATATYPE,
                found: field.datatype,
            });
        }
        let start = usize::try_from(field.offset).map_err(|_| PointCloudError::Overflow {
            what: "field offset",
        })?;
        let size = usize::try_from(T::DATATYPE.size())
            .map_err(|_| PointCloudError::Overflow { what: "field size" })?;
        let big_endian = self.is_bigendian;
        Ok(self.points().filter_map(move |point| {
            let bytes = point.get(start..start.checked_add(size)?)?;
            T::from_bytes(bytes, big_endian)
        }))
    }

    /// The `x`, `y`, `z` fields (all `FLOAT32`) of every point, row by row. Invalid points
    /// come out as they are stored (usually NaN).
    pub fn xyz(&self) -> Result<impl Iterator<Item = [f32; 3]> + '_, PointCloudError> {
        let xs = self.values::<f32>("x")?;
        let ys = self.values::<f32>("y")?;
        let zs = self.values::<f32>("z")?;
        Ok(xs.zip(ys).zip(zs).map(|((x, y), z)| [x, y, z]))
    }

    fn layout(&self) -> Result<CloudLayout, PointCloudError> {
        let overflow = |what| PointCloudError::Overflow { what };
        Ok(CloudLayout {
            width: usize::try_from(self.width).map_err(|_| overflow("width"))?,
            height: usize::try_from(self.height).map_err(|_| overflow("height"))?,
            point_step: usize::try_from(self.point_step).map_err(|_| overflow("point step"))?,
            row_step: usize::try_from(self.row_step).map_err(|_| overflow("row step"))?,
        })
    }
}

fn point_bytes(data: &[u8], layout: CloudLayout, u: usize, v: usize) -> Option<&[u8]> {
    if u >= layout.width || v >= layout.height {
        return None;
    }
    let start = v
        .checked_mul(layout.row_step)?
        .checked_add(u.checked_mul(layout.point_step)?)?;
    data.get(start..start.checked_add(layout.point_step)?)
}

mod sealed {
    pub trait Sealed {}
}

/// A scalar type a [`PointField`] can hold: `i8`, `u8`, `i16`, `u16`, `i32`, `u32`,
/// `f32`, `f64`. Used by [`PointCloud::values`].
pub trait PointScalar: sealed::Sealed + Copy + 'static {
    /// The field datatype of this type.
    const DATATYPE: PointDatatype;
    /// Reads a value from exactly `size` bytes, or `None` if `bytes` has another length.
    fn from_bytes(bytes: &[u8], big_endian: bool) -> Option<Self>;
}

macro_rules! point_scalar {
    ($($t:ty => $datatype:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl PointScalar for $t {
            const DATATYPE: PointDatatype = PointDatatype::$datatype;
            fn from_bytes(bytes: &[u8], big_endian: bool) -> Option<Self> {
                let array = bytes.try_into().ok()?;
                Some(if big_endian { <$t>::from_be_bytes(array) } else { <$t>::from_le_bytes(array) })
            }
        }
    )*};
}

point_scalar!(
    i8 => Int8, u8 => Uint8, i16 => Int16, u16 => Uint16,
    i32 => Int32, u32 => Uint32, f32 => Float32, f64 => Float64,
);
