//! Reading PCL's PCD files (v0.7) into a [`PointCloud`].
//!
//! All three data layouts are read: `ascii`, `binary` (points one after the other) and
//! `binary_compressed` (LZF-compressed, one column per field, turned back into points).
//! Organized clouds keep their `WIDTH x HEIGHT`, so point `(u, v)` is pixel `(u, v)`.
//! Fields named `_` (PCL's padding) keep their bytes but are left out of the field list.
//!
//! The reader treats its input as untrusted: every size in the header is checked against
//! the bytes actually present before anything is allocated, so a hostile header (say
//! `WIDTH 4000000000`) is an error, never a large allocation or a panic.
//!
//! ```
//! use streamwire::msgs::PointCloud;
//!
//! let pcd = b"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n\
//!             WIDTH 2\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 2\nDATA ascii\n\
//!             1 2 3\n4 5 nan\n";
//! let cloud = PointCloud::from_pcd(pcd)?;
//! assert_eq!(cloud.width(), 2);
//! let z: Vec<f32> = cloud.values("z")?.collect();
//! assert_eq!(z[0], 3.0);
//! assert!(z[1].is_nan());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::cloud::{PointCloud, PointCloudError, PointDatatype, PointField};
use crate::layout::clip;

/// Why a PCD file could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PcdError {
    /// The file ends before the `DATA` line.
    #[error("the PCD header has no `DATA` line")]
    NoData,
    /// A header line is not text.
    #[error("PCD header line {line} is not UTF-8 text")]
    NotText {
        /// 1-based line number.
        line: usize,
    },
    /// A required header entry is missing.
    #[error("the PCD header has no `{key}` line")]
    Missing {
        /// The entry, e.g. `FIELDS`.
        key: &'static str,
    },
    /// A header entry's value cannot be used.
    #[error("PCD header `{key}`: `{value}` {reason}")]
    BadValue {
        /// The entry.
        key: &'static str,
        /// The value as written (clipped).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `SIZE`, `TYPE` or `COUNT` does not have one entry per field.
    #[error("PCD header `{key}` has {found} entries for {expected} fields")]
    FieldCount {
        /// The entry.
        key: &'static str,
        /// The number of fields.
        expected: usize,
        /// The number of entries.
        found: usize,
    },
    /// A field's type and size have no point cloud datatype (e.g. 64-bit integers).
    #[error("PCD field `{field}` of TYPE {kind} SIZE {size} is not supported")]
    UnsupportedType {
        /// The field.
        field: String,
        /// `I`, `U` or `F`.
        kind: String,
        /// Bytes per value.
        size: String,
    },
    /// `POINTS` is not `WIDTH * HEIGHT`.
    #[error("PCD header says POINTS {points} but WIDTH {width} x HEIGHT {height}")]
    PointCount {
        /// `POINTS`.
        points: u64,
        /// `WIDTH`.
        width: u32,
        /// `HEIGHT`.
        height: u32,
    },
    /// The data layout is not `ascii`, `binary` or `binary_compressed`.
    #[error("PCD DATA `{0}` is not one of ascii, binary, binary_compressed")]
    UnknownData(String),
    /// A size computed from the header overflows.
    #[error("the PCD header describes a cloud too large: {what} overflows")]
    TooLarge {
        /// Which product overflowed.
        what: &'static str,
    },
    /// The data is shorter than the header says.
    #[error("the PCD data is truncated: {needed} bytes needed, {available} present")]
    Truncated {
        /// Bytes the header implies.
        needed: u64,
        /// Bytes present.
        available: usize,
    },
    /// The `binary_compressed` sizes disagree with the header or with each other.
    #[error("PCD compressed data: {reason} (expected {expected} bytes, header says {found})")]
    CompressedSize {
        /// What disagrees.
        reason: &'static str,
        /// The size implied by the fields and point count.
        expected: u64,
        /// The size written in the file.
        found: u64,
    },
    /// The LZF stream is corrupt.
    #[error("PCD compressed data is corrupt: {0}")]
    Lzf(String),
    /// An `ascii` value cannot be parsed as its field's type.
    #[error("PCD ascii point {point}, field `{field}`: `{value}` is not a valid {datatype}")]
    AsciiValue {
        /// 0-based point index.
        point: usize,
        /// The field.
        field: String,
        /// The text (clipped).
        value: String,
        /// The field's type.
        datatype: PointDatatype,
    },
    /// The `ascii` data has fewer values than the header implies.
    #[error("PCD ascii data ends after {found} of {expected} values")]
    AsciiTooShort {
        /// Values the header implies.
        expected: u64,
        /// Values present.
        found: u64,
    },
    /// The cloud read does not make a valid [`PointCloud`].
    #[error(transparent)]
    Cloud(#[from] PointCloudError),
}

/// LZF's best case: a 3-byte back-reference yields at most 264 bytes, so no valid stream
/// decompresses to more than 88 times its size. A header claiming more is rejected
/// before the output is allocated.
const LZF_MAX_RATIO: u64 = 88;

/// One PCD field as declared in the header, with its place in a point.
#[derive(Debug)]
struct PcdField {
    name: String,
    datatype: PointDatatype,
    count: u32,
    /// Byte offset within a point.
    offset: usize,
    /// `size * count`.
    len: usize,
}

#[derive(Debug)]
struct Header {
    fields: Vec<PcdField>,
    width: u32,
    height: u32,
    points: usize,
    point_step: usize,
    data: DataKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataKind {
    Ascii,
    Binary,
    BinaryCompressed,
}

impl PointCloud {
    /// Reads a PCD v0.7 file (`ascii`, `binary` or `binary_compressed`). See the
    /// [`pcd`](crate::pcd) module.
    pub fn from_pcd(bytes: &[u8]) -> Result<PointCloud, PcdError> {
        let (header, body) = parse_header(bytes)?;
        let data = match header.data {
            DataKind::Ascii => read_ascii(&header, body)?,
            DataKind::Binary => read_binary(&header, body)?,
            DataKind::BinaryCompressed => read_compressed(&header, body)?,
        };
        let too_large = |what| PcdError::TooLarge { what };
        let point_step = u32::try_from(header.point_step).map_err(|_| too_large("point size"))?;
        let row_step = point_step
            .checked_mul(header.width)
            .ok_or(too_large("WIDTH x point size"))?;
        let fields: Vec<PointField> = header
            .fields
            .iter()
            .filter(|f| f.name != "_")
            .map(|f| {
                let offset = u32::try_from(f.offset).map_err(|_| too_large("field offset"))?;
                Ok(PointField::new(f.name.clone(), offset, f.datatype, f.count))
            })
            .collect::<Result<_, PcdError>>()?;
        let cloud = PointCloud::new(
            fields,
            header.width,
            header.height,
            point_step,
            row_step,
            data,
        )?;
        let is_dense = is_dense(&cloud);
        Ok(cloud.with_dense(is_dense))
    }
}

/// A cloud is dense when every `x`, `y`, `z` (those that are `FLOAT32`) is finite.
fn is_dense(cloud: &PointCloud) -> bool {
    ["x", "y", "z"]
        .iter()
        .all(|name| match cloud.values::<f32>(name) {
            Ok(mut values) => values.all(f32::is_finite),
            // Not a float field, or absent: nothing to be invalid.
            Err(_) => true,
        })
}

/// Splits the header off and parses it; returns the header and the bytes after the
/// `DATA` line.
fn parse_header(bytes: &[u8]) -> Result<(Header, &[u8]), PcdError> {
    let mut rest = bytes;
    let mut line_no = 0usize;
    let mut names: Option<Vec<String>> = None;
    let mut sizes: Option<Vec<String>> = None;
    let mut types: Option<Vec<String>> = None;
    let mut counts: Option<Vec<String>> = None;
    let mut width: Option<u32> = None;
    let mut height: Option<u32> = None;
    let mut points: Option<u64> = None;
    loop {
        let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
            return Err(PcdError::NoData);
        };
        let (line, after) = rest.split_at(newline);
        // infallible: `after` starts with the newline found above
        rest = after.get(1..).unwrap_or_default();
        line_no = line_no.saturating_add(1);
        let line = std::str::from_utf8(line).map_err(|_| PcdError::NotText { line: line_no })?;
        // Comments start with '#', also at the end of a line.
        // infallible: `split` yields at least one piece
        let line = line.split('#').next().unwrap_or_default().trim();
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        let values: Vec<&str> = words.collect();
        match key.to_ascii_uppercase().as_str() {
            "VERSION" | "VIEWPOINT" => {}
            "FIELDS" | "COLUMNS" => names = Some(to_owned(&values)),
            "SIZE" => sizes = Some(to_owned(&values)),
            "TYPE" => types = Some(to_owned(&values)),
            "COUNT" => counts = Some(to_owned(&values)),
            "WIDTH" => width = Some(single("WIDTH", &values)?),
            "HEIGHT" => height = Some(single("HEIGHT", &values)?),
            "POINTS" => points = Some(single("POINTS", &values)?),
            "DATA" => {
                let kind = match values.first().map(|v| v.to_ascii_lowercase()).as_deref() {
                    Some("ascii") => DataKind::Ascii,
                    Some("binary") => DataKind::Binary,
                    Some("binary_compressed") => DataKind::BinaryCompressed,
                    _ => return Err(PcdError::UnknownData(clip(&values.join(" ")))),
                };
                let header =
                    build_header(names, sizes, types, counts, width, height, points, kind)?;
                return Ok((header, rest));
            }
            // Unknown entries are skipped, as PCL does.
            _ => {}
        }
    }
}

fn to_owned(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

fn single<T: std::str::FromStr>(key: &'static str, values: &[&str]) -> Result<T, PcdError> {
    match values {
        [value] => value.parse().map_err(|_| PcdError::BadValue {
            key,
            value: clip(value),
            reason: "is not a whole number in range",
        }),
        _ => Err(PcdError::BadValue {
            key,
            value: clip(&values.join(" ")),
            reason: "should be one number",
        }),
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "the header entries, gathered in any order, checked together"
)]
fn build_header(
    names: Option<Vec<String>>,
    sizes: Option<Vec<String>>,
    types: Option<Vec<String>>,
    counts: Option<Vec<String>>,
    width: Option<u32>,
    height: Option<u32>,
    points: Option<u64>,
    data: DataKind,
) -> Result<Header, PcdError> {
    let names = names.ok_or(PcdError::Missing { key: "FIELDS" })?;
    if names.is_empty() {
        // A point without bytes would make the point count unbounded by the data.
        return Err(PcdError::BadValue {
            key: "FIELDS",
            value: String::new(),
            reason: "names no field",
        });
    }
    let sizes = sizes.ok_or(PcdError::Missing { key: "SIZE" })?;
    let types = types.ok_or(PcdError::Missing { key: "TYPE" })?;
    let width = width.ok_or(PcdError::Missing { key: "WIDTH" })?;
    // Old files (v0.5) may lack HEIGHT: an unordered cloud.
    let height = height.unwrap_or(1);
    let expected = names.len();
    for (key, list) in [("SIZE", &sizes), ("TYPE", &types)] {
        if list.len() != expected {
            return Err(PcdError::FieldCount {
                key,
                expected,
                found: list.len(),
            });
        }
    }
    let counts: Vec<u32> = match counts {
        None => vec![1; expected],
        Some(counts) if counts.len() != expected => {
            return Err(PcdError::FieldCount {
                key: "COUNT",
                expected,
                found: counts.len(),
            });
        }
        Some(counts) => counts
            .iter()
            .map(|c| match c.parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(PcdError::BadValue {
                    key: "COUNT",
                    value: clip(c),
                    reason: "is not a whole number from 1",
                }),
            })
            .collect::<Result<_, _>>()?,
    };
    let too_large = |what| PcdError::TooLarge { what };
    let mut fields = Vec::with_capacity(expected);
    let mut offset = 0usize;
    for (((name, size), kind), count) in names.into_iter().zip(&sizes).zip(&types).zip(counts) {
        let datatype = match (kind.as_str(), size.as_str()) {
            ("I", "1") => PointDatatype::Int8,
            ("U", "1") => PointDatatype::Uint8,
            ("I", "2") => PointDatatype::Int16,
            ("U", "2") => PointDatatype::Uint16,
            ("I", "4") => PointDatatype::Int32,
            ("U", "4") => PointDatatype::Uint32,
            ("F", "4") => PointDatatype::Float32,
            ("F", "8") => PointDatatype::Float64,
            _ => {
                return Err(PcdError::UnsupportedType {
                    field: clip(&name),
                    kind: clip(kind),
                    size: clip(size),
                });
            }
        };
        let len = usize::try_from(u64::from(datatype.size()) * u64::from(count))
            .map_err(|_| too_large("field size"))?;
        fields.push(PcdField {
            name,
            datatype,
            count,
            offset,
            len,
        });
        offset = offset.checked_add(len).ok_or(too_large("point size"))?;
    }
    let total = u64::from(width) * u64::from(height);
    if let Some(points) = points
        && points != total
    {
        return Err(PcdError::PointCount {
            points,
            width,
            height,
        });
    }
    Ok(Header {
        fields,
        width,
        height,
        points: usize::try_from(total).map_err(|_| too_large("WIDTH x HEIGHT"))?,
        point_step: offset,
        data,
    })
}

/// `points * point_step` as a byte count, checked.
fn data_len(header: &Header) -> Result<usize, PcdError> {
    header
        .points
        .checked_mul(header.point_step)
        .ok_or(PcdError::TooLarge {
            what: "POINTS x point size",
        })
}

fn read_binary(header: &Header, body: &[u8]) -> Result<Vec<u8>, PcdError> {
    let len = data_len(header)?;
    // Bytes after the points (a trailing newline, say) are ignored, as PCL does.
    body.get(..len)
        .map(<[u8]>::to_vec)
        .ok_or(PcdError::Truncated {
            needed: len as u64,
            available: body.len(),
        })
}

fn read_compressed(header: &Header, body: &[u8]) -> Result<Vec<u8>, PcdError> {
    let len = data_len(header)?;
    let word = |i: usize| -> Result<u32, PcdError> {
        body.get(i..i + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or(PcdError::Truncated {
                needed: 8,
                available: body.len(),
            })
    };
    let compressed_len = word(0)?;
    let uncompressed_len = word(4)?;
    if u64::from(uncompressed_len) != len as u64 {
        return Err(PcdError::CompressedSize {
            reason: "the uncompressed size does not match the fields and points",
            expected: len as u64,
            found: uncompressed_len.into(),
        });
    }
    if len == 0 {
        return Ok(Vec::new());
    }
    if u64::from(uncompressed_len) > u64::from(compressed_len) * LZF_MAX_RATIO {
        return Err(PcdError::CompressedSize {
            reason: "LZF cannot expand the compressed bytes that much",
            expected: len as u64,
            found: compressed_len.into(),
        });
    }
    let compressed_len_usize = usize::try_from(compressed_len).map_err(|_| PcdError::TooLarge {
        what: "compressed size",
    })?;
    let compressed = body
        .get(8..)
        .and_then(|b| b.get(..compressed_len_usize))
        .ok_or(PcdError::Truncated {
            needed: u64::from(compressed_len) + 8,
            available: body.len(),
        })?;
    let columns = lzf::decompress(compressed, len).map_err(|e| PcdError::Lzf(e.to_string()))?;
    if columns.len() != len {
        return Err(PcdError::CompressedSize {
            reason: "the LZF stream decompresses to another size",
            expected: len as u64,
            found: columns.len() as u64,
        });
    }
    // Columns (all x, then all y, ...) back to points (x y z, x y z, ...).
    let mut points = vec![0u8; len];
    let mut column_start = 0usize;
    for field in &header.fields {
        if field.len == 0 {
            continue;
        }
        let column_len = header
            .points
            .checked_mul(field.len)
            .ok_or(PcdError::TooLarge {
                what: "column size",
            })?;
        let column_end = column_start
            .checked_add(column_len)
            .ok_or(PcdError::TooLarge { what: "column end" })?;
        let column = columns
            .get(column_start..column_end)
            .ok_or(PcdError::TooLarge { what: "column end" })?;
        let field_end = field.offset.saturating_add(field.len);
        for (point, value) in points
            .chunks_exact_mut(header.point_step)
            .zip(column.chunks_exact(field.len))
        {
            if let Some(slot) = point.get_mut(field.offset..field_end) {
                slot.copy_from_slice(value);
            }
        }
        column_start = column_end;
    }
    Ok(points)
}

fn read_ascii(header: &Header, body: &[u8]) -> Result<Vec<u8>, PcdError> {
    let len = data_len(header)?;
    let values_per_point: u64 = header.fields.iter().map(|f| u64::from(f.count)).sum();
    let expected_values = values_per_point.saturating_mul(header.points as u64);
    // Every value takes at least one character and a separator: refuse before allocating
    // when the text cannot possibly hold them.
    let max_values = (body.len() as u64).div_ceil(2);
    if expected_values > max_values {
        return Err(PcdError::AsciiTooShort {
            expected: expected_values,
            found: count_tokens(body),
        });
    }
    let text = std::str::from_utf8(body).map_err(|_| PcdError::NotText { line: 0 })?;
    let mut tokens = text.split_ascii_whitespace();
    let mut out = Vec::with_capacity(len);
    let mut found = 0u64;
    for point in 0..header.points {
        for field in &header.fields {
            for _ in 0..field.count {
                let Some(token) = tokens.next() else {
                    return Err(PcdError::AsciiTooShort {
                        expected: expected_values,
                        found,
                    });
                };
                found = found.saturating_add(1);
                push_value(&mut out, token, field.datatype).ok_or_else(|| {
                    PcdError::AsciiValue {
                        point,
                        field: clip(&field.name),
                        value: clip(token),
                        datatype: field.datatype,
                    }
                })?;
            }
        }
    }
    Ok(out)
}

fn count_tokens(body: &[u8]) -> u64 {
    body.split(u8::is_ascii_whitespace)
        .filter(|t| !t.is_empty())
        .count() as u64
}

/// Parses `token` as `datatype` and appends its little-endian bytes.
fn push_value(out: &mut Vec<u8>, token: &str, datatype: PointDatatype) -> Option<()> {
    match datatype {
        PointDatatype::Int8 => out.extend(token.parse::<i8>().ok()?.to_le_bytes()),
        PointDatatype::Uint8 => out.extend(token.parse::<u8>().ok()?.to_le_bytes()),
        PointDatatype::Int16 => out.extend(token.parse::<i16>().ok()?.to_le_bytes()),
        PointDatatype::Uint16 => out.extend(token.parse::<u16>().ok()?.to_le_bytes()),
        PointDatatype::Int32 => out.extend(token.parse::<i32>().ok()?.to_le_bytes()),
        PointDatatype::Uint32 => out.extend(token.parse::<u32>().ok()?.to_le_bytes()),
        PointDatatype::Float32 => out.extend(token.parse::<f32>().ok()?.to_le_bytes()),
        PointDatatype::Float64 => out.extend(token.parse::<f64>().ok()?.to_le_bytes()),
    }
    Some(())
}
