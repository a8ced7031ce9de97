//! cloudini: each float field quantized at its resolution, integers delta-coded, every value
//! a zigzag varint, chunks of 32,768 points compressed with zstd (level 1): the format of
//! the `cloudini` crate and of the C++ library its author's ROS plugin uses.
//!
//! Encoding is the crate's (`PointcloudEncoder`, pure Rust); decoding is this module's, with
//! the checks in [the module's docs](super) (the crate's decoder trusts its header).
//!
//! # The error bound
//!
//! A float field with resolution `r` decodes to `round(v / r) * r` computed in the field's
//! precision: within `r / 2 + 2^-21 * |v|` of `v` (the second term is float32 rounding:
//! 0.05 mm at 100 m). NaN stays NaN (a sentinel byte), integer fields and fields without a
//! resolution are exact. A finite value with `|v| / r >= 2^30` (1,073 km at 1 mm), or an
//! infinity, cannot be quantized: [`encode`] refuses it rather than wrap.
//!
//! # Compatibility with the C++ library (checked against the sources the crate vendors,
//! `cloudini-cpp/cloudini_lib/src/cloudini.cpp`, `field_encoder.cpp`, `encoding_utils.hpp`,
//! and `cloudini_ros/src/cloudini_*_plugin.cpp`)
//!
//! - The header is `CLOUDINI_V03\n`, the YAML the C++ `EncodingInfoToYAML` writes (same keys,
//!   order, `resolution: null` for none) and a NUL; the C++ `DecodeHeader` reads it.
//! - The first 3 or 4 FLOAT32 fields with a resolution form one `FloatN` group with i32
//!   accumulators, the rest one coder each: the same rule as `PointcloudEncoder`'s
//!   constructor; varints are zigzag plus one (0 is NaN) as `encodeVarint64`.
//! - Chunks of `POINTS_PER_CHUNK = 32 * 1024` points, each `[u32 LE size][ZSTD_compress(.., 1)]`.
//! - The ROS subscriber plugin requires the message's width, height, point step and fields
//!   (name, offset, datatype) to equal the header's, and decodes `point_step * width * height`
//!   bytes: [`encode`] writes the message's fields as they are, over packed rows. Unlike the C++
//!   publisher, which gives every FLOAT32 field the one resolution (a packed `rgb` float
//!   included), fields here have their own, and none means exact; the C++ decoder reads each
//!   field's resolution from the header, so it decodes both.

use cloudini::{
    CompressionOption, EncodingInfo, EncodingOptions, FieldType, PointField, PointcloudEncoder,
};
use zstd::zstd_safe;

use super::{CloudError, CloudField, CloudLayout, CloudLimits};

/// Points per chunk, as the C++ library (`PointcloudEncoder::POINTS_PER_CHUNK`).
pub const POINTS_PER_CHUNK: u64 = cloudini::POINTS_PER_CHUNK as u64;

/// The largest `|value| / resolution` [`encode`] quantizes.
const MAX_STEPS: f64 = (1u64 << 30) as f64;

/// How far a decoded value may be from `value` at `resolution` (see the module's docs).
pub fn error_bound(resolution: f32, value: f64) -> f64 {
    f64::from(resolution) / 2.0 + value.abs() / f64::from(1u32 << 21)
}

/// Encodes packed points (`layout.points() * point_step` bytes) with each field's resolution.
pub fn encode(layout: &CloudLayout, points: &[u8]) -> Result<Vec<u8>, CloudError> {
    let unbounded = CloudLimits {
        max_points: u64::MAX,
        max_bytes: usize::MAX,
    };
    let expected = layout.check(&unbounded)?;
    if points.len() != expected {
        return Err(CloudError::WrongLength {
            expected,
            actual: points.len(),
        });
    }
    check_range(layout, points)?;
    let info = EncodingInfo {
        fields: layout.fields.iter().map(crate_field).collect(),
        width: layout.width,
        height: layout.height,
        point_step: layout.point_step,
        encoding_opt: EncodingOptions::Lossy,
        compression_opt: CompressionOption::Zstd,
        ..EncodingInfo::default()
    };
    PointcloudEncoder::new(info)
        .encode(points)
        .map_err(CloudError::Encoder)
}

fn crate_field(field: &CloudField) -> PointField {
    let field_type = match field.datatype {
        1 => FieldType::Int8,
        2 => FieldType::Uint8,
        3 => FieldType::Int16,
        4 => FieldType::Uint16,
        5 => FieldType::Int32,
        6 => FieldType::Uint32,
        7 => FieldType::Float32,
        8 => FieldType::Float64,
        _ => FieldType::Unknown,
    };
    PointField {
        name: field.name.clone(),
        offset: field.offset,
        field_type,
        resolution: field.resolution,
    }
}

/// Refuses values that the quantizer would wrap or saturate.
fn check_range(layout: &CloudLayout, points: &[u8]) -> Result<(), CloudError> {
    let step = layout.point_step as usize;
    for field in &layout.fields {
        let Some(resolution) = field.resolution else {
            continue;
        };
        let offset = field.offset as usize;
        let size = field.size() as usize;
        for point in points.chunks_exact(step) {
            let bytes = &point[offset..offset + size];
            let value = match *bytes {
                [a, b, c, d] => f64::from(f32::from_le_bytes([a, b, c, d])),
                [a, b, c, d, e, f, g, h] => f64::from_le_bytes([a, b, c, d, e, f, g, h]),
                _ => continue,
            };
            // An infinity divides to infinity, over the bound too.
            if !value.is_nan() && value.abs() / f64::from(resolution) >= MAX_STEPS {
                return Err(CloudError::OutOfRange {
                    field: field.name.clone(),
                    value,
                    resolution,
                });
            }
        }
    }
    Ok(())
}

/// Reads and checks a stream's header: the layout it declares and where the chunks start.
/// Nothing sized by the header is allocated.
pub fn read_header(data: &[u8], limits: &CloudLimits) -> Result<(CloudLayout, usize), CloudError> {
    header(data, limits).map(|(layout, len, _)| (layout, len))
}

/// [`read_header`], with the stream's options.
fn header(
    data: &[u8],
    limits: &CloudLimits,
) -> Result<(CloudLayout, usize, EncodingInfo), CloudError> {
    const MAGIC: &[u8] = b"CLOUDINI_V";
    if data.len() < MAGIC.len() + 3 || !data.starts_with(MAGIC) {
        return Err(CloudError::NotCloudini(
            "it does not start with `CLOUDINI_V`".to_owned(),
        ));
    }
    let version = &data[MAGIC.len()..MAGIC.len() + 3];
    if version != b"03\n" {
        return Err(CloudError::NotCloudini(format!(
            "version `{}`: this decoder reads version 03's text header",
            String::from_utf8_lossy(&version[..2])
        )));
    }
    let (info, header_len) = cloudini::decode_header(data).map_err(|e| match e {
        cloudini::Error::Truncated(what) => CloudError::Truncated(what),
        other => CloudError::Header(other.to_string()),
    })?;
    if info.compression_opt == CompressionOption::Lz4 {
        return Err(CloudError::NotCloudini(
            "LZ4 chunks: this decoder reads zstd (what the ROS plugin writes) and plain chunks"
                .to_owned(),
        ));
    }
    let layout = CloudLayout {
        width: info.width,
        height: info.height,
        point_step: info.point_step,
        fields: info
            .fields
            .iter()
            .map(|f| CloudField {
                name: f.name.clone(),
                offset: f.offset,
                // 9 and 10 (64-bit integers) have no PointField datatype: refused by `check`.
                datatype: f.field_type as u8,
                resolution: f.resolution,
            })
            .collect(),
    };
    layout.check(limits)?;
    Ok((layout, header_len, info))
}

/// Decodes a stream into its layout and packed points, under `limits`.
pub fn decode(data: &[u8], limits: &CloudLimits) -> Result<(CloudLayout, Vec<u8>), CloudError> {
    let (layout, header_len, info) = header(data, limits)?;
    let plain = info.compression_opt == CompressionOption::None;
    let mut decoders = build_decoders(&layout, info.encoding_opt);
    let chunks = frame_chunks(&data[header_len..], &layout, &decoders, plain)?;
    let step = layout.point_step as usize;
    // Every size above is checked: this is the first allocation the header sizes.
    let mut points = vec![0u8; layout.check(limits)?];
    let mut scratch = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        let encoded = if plain {
            chunk.bytes
        } else {
            scratch.clear();
            scratch.reserve_exact(chunk.content_len);
            zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress_to_buffer(chunk.bytes, &mut scratch))
                .map_err(CloudError::Zstd)?;
            &scratch[..]
        };
        let first = index * POINTS_PER_CHUNK as usize;
        let out = &mut points[first * step..(first + chunk.points) * step];
        decode_chunk(encoded, out, step, &mut decoders)?;
    }
    Ok((layout, points))
}

/// One chunk's bytes, its points, and (zstd) the content size its frame records.
struct Chunk<'a> {
    bytes: &'a [u8],
    points: usize,
    content_len: usize,
}

/// Splits the chunk stream and checks that it accounts for every point, exactly.
fn frame_chunks<'a>(
    mut rest: &'a [u8],
    layout: &CloudLayout,
    decoders: &[FieldDecoder],
    plain: bool,
) -> Result<Vec<Chunk<'a>>, CloudError> {
    let (min_per_point, max_per_point) = decoders.iter().fold((0u64, 0u64), |(lo, hi), d| {
        let (a, b) = d.input_range();
        (lo + a, hi + b)
    });
    let total = layout.points();
    let mut chunks = Vec::new();
    let mut done = 0u64;
    while done < total {
        let points = (total - done).min(POINTS_PER_CHUNK);
        if rest.is_empty() {
            return Err(CloudError::PointsExceedData {
                declared: total,
                bytes: done.saturating_mul(max_per_point),
            });
        }
        let (size, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| CloudError::Truncated("a chunk's size is cut".to_owned()))?;
        let size = u32::from_le_bytes(*size) as usize;
        let bytes = tail.get(..size).ok_or_else(|| {
            CloudError::Truncated(format!(
                "a chunk of {size} bytes, {} left in the stream",
                tail.len()
            ))
        })?;
        let content = if plain {
            size as u64
        } else {
            match zstd_safe::get_frame_content_size(bytes) {
                Ok(Some(n)) => n,
                _ => {
                    return Err(CloudError::Header(
                        "a zstd chunk does not record its content size".to_owned(),
                    ));
                }
            }
        };
        if content < points * min_per_point {
            return Err(CloudError::PointsExceedData {
                declared: points,
                bytes: content,
            });
        }
        if content > points * max_per_point {
            return Err(CloudError::Header(format!(
                "a chunk of {points} points holds {content} bytes, more than they can take"
            )));
        }
        chunks.push(Chunk {
            bytes,
            points: points as usize,
            content_len: content as usize,
        });
        done += points;
        rest = &tail[size..];
    }
    if !rest.is_empty() {
        return Err(CloudError::Header(format!(
            "{} bytes follow the last chunk",
            rest.len()
        )));
    }
    Ok(chunks)
}

/// Decodes one chunk's points into `out`; every byte of `encoded` must be used.
fn decode_chunk(
    encoded: &[u8],
    out: &mut [u8],
    step: usize,
    decoders: &mut [FieldDecoder],
) -> Result<(), CloudError> {
    for decoder in decoders.iter_mut() {
        decoder.reset();
    }
    let mut pos = 0;
    for point in out.chunks_exact_mut(step) {
        for decoder in decoders.iter_mut() {
            pos += decoder.decode(&encoded[pos..], point)?;
        }
    }
    if pos != encoded.len() {
        return Err(CloudError::Header(format!(
            "a chunk holds {} bytes past its last point",
            encoded.len() - pos
        )));
    }
    Ok(())
}

/// The inverse of the crate's (and the C++ library's) field encoders, with bounded reads and
/// wrapping sums.
enum FieldDecoder {
    Copy {
        offset: usize,
        size: usize,
    },
    Int {
        offset: usize,
        size: usize,
        prev: i64,
    },
    Float32 {
        offset: usize,
        resolution: f32,
        prev: i64,
    },
    Float64 {
        offset: usize,
        resolution: f64,
        prev: i64,
    },
    Xor64 {
        offset: usize,
        prev: u64,
    },
    FloatN {
        offsets: [usize; 4],
        resolutions: [f32; 4],
        prev: [i32; 4],
        count: usize,
    },
}

/// The decoders in the order the encoder wrote: the crate's `build_decoders` rule.
fn build_decoders(layout: &CloudLayout, mode: EncodingOptions) -> Vec<FieldDecoder> {
    let mut decoders = Vec::with_capacity(layout.fields.len());
    let copy = |f: &CloudField| FieldDecoder::Copy {
        offset: f.offset as usize,
        size: f.size() as usize,
    };
    if mode == EncodingOptions::None {
        return layout.fields.iter().map(copy).collect();
    }
    let leading = layout
        .fields
        .iter()
        .take_while(|f| mode == EncodingOptions::Lossy && f.datatype == 7 && f.resolution.is_some())
        .count();
    let grouped = if leading == 3 || leading == 4 {
        leading
    } else {
        0
    };
    if grouped > 0 {
        let mut offsets = [0; 4];
        let mut resolutions = [0.0; 4];
        for (i, f) in layout.fields[..grouped].iter().enumerate() {
            offsets[i] = f.offset as usize;
            resolutions[i] = f.resolution.unwrap_or(1.0);
        }
        decoders.push(FieldDecoder::FloatN {
            offsets,
            resolutions,
            prev: [0; 4],
            count: grouped,
        });
    }
    // A float with a resolution is dequantized whatever the mode, as the C++ decoder's
    // `create_decoder` does (its encoder quantizes only in LOSSY mode, and writes no
    // resolution otherwise).
    for f in &layout.fields[grouped..] {
        let offset = f.offset as usize;
        decoders.push(match (f.datatype, f.resolution) {
            (7, Some(r)) => FieldDecoder::Float32 {
                offset,
                resolution: r,
                prev: 0,
            },
            (8, Some(r)) => FieldDecoder::Float64 {
                offset,
                resolution: f64::from(r),
                prev: 0,
            },
            (8, None) => FieldDecoder::Xor64 { offset, prev: 0 },
            (1 | 2 | 7, _) => copy(f),
            _ => FieldDecoder::Int {
                offset,
                size: f.size() as usize,
                prev: 0,
            },
        });
    }
    decoders
}

impl FieldDecoder {
    fn reset(&mut self) {
        match self {
            FieldDecoder::Copy { .. } => {}
            FieldDecoder::Int { prev, .. }
            | FieldDecoder::Float32 { prev, .. }
            | FieldDecoder::Float64 { prev, .. } => *prev = 0,
            FieldDecoder::Xor64 { prev, .. } => *prev = 0,
            FieldDecoder::FloatN { prev, .. } => *prev = [0; 4],
        }
    }

    /// The fewest and most encoded bytes one point takes.
    fn input_range(&self) -> (u64, u64) {
        match self {
            FieldDecoder::Copy { size, .. } => (*size as u64, *size as u64),
            FieldDecoder::Int { .. }
            | FieldDecoder::Float32 { .. }
            | FieldDecoder::Float64 { .. } => (1, 10),
            FieldDecoder::Xor64 { .. } => (8, 8),
            FieldDecoder::FloatN { count, .. } => (*count as u64, 10 * *count as u64),
        }
    }

    /// Decodes one point's value(s) from the start of `input`; returns the bytes used.
    fn decode(&mut self, input: &[u8], point: &mut [u8]) -> Result<usize, CloudError> {
        match self {
            FieldDecoder::Copy { offset, size } => {
                let bytes = input.get(..*size).ok_or_else(truncated)?;
                point[*offset..*offset + *size].copy_from_slice(bytes);
                Ok(*size)
            }
            FieldDecoder::Int { offset, size, prev } => {
                let (diff, used) = varint(input)?.ok_or_else(nan_in_integer)?;
                *prev = prev.wrapping_add(diff);
                point[*offset..*offset + *size].copy_from_slice(&prev.to_le_bytes()[..*size]);
                Ok(used)
            }
            FieldDecoder::Float32 {
                offset,
                resolution,
                prev,
            } => {
                let (value, used) = lossy(input, prev)?;
                let value = value.map_or(f32::NAN, |q| q as f32 * *resolution);
                point[*offset..*offset + 4].copy_from_slice(&value.to_le_bytes());
                Ok(used)
            }
            FieldDecoder::Float64 {
                offset,
                resolution,
                prev,
            } => {
                let (value, used) = lossy(input, prev)?;
                let value = value.map_or(f64::NAN, |q| q as f64 * *resolution);
                point[*offset..*offset + 8].copy_from_slice(&value.to_le_bytes());
                Ok(used)
            }
            FieldDecoder::Xor64 { offset, prev } => {
                let bytes = input.first_chunk::<8>().ok_or_else(truncated)?;
                *prev ^= u64::from_le_bytes(*bytes);
                point[*offset..*offset + 8].copy_from_slice(&prev.to_le_bytes());
                Ok(8)
            }
            FieldDecoder::FloatN {
                offsets,
                resolutions,
                prev,
                count,
            } => {
                let mut used = 0;
                for i in 0..*count {
                    let value = match varint(&input[used..])? {
                        None => {
                            prev[i] = 0;
                            used += 1;
                            f32::NAN
                        }
                        Some((diff, n)) => {
                            // i32 accumulators, as the C++ reference's Vector4i.
                            prev[i] = prev[i].wrapping_add(diff as i32);
                            used += n;
                            prev[i] as f32 * resolutions[i]
                        }
                    };
                    point[offsets[i]..offsets[i] + 4].copy_from_slice(&value.to_le_bytes());
                }
                Ok(used)
            }
        }
    }
}

/// A lossy float's quantized value (`None` for the NaN sentinel), its accumulator updated.
fn lossy(input: &[u8], prev: &mut i64) -> Result<(Option<i64>, usize), CloudError> {
    match varint(input)? {
        None => {
            *prev = 0;
            Ok((None, 1))
        }
        Some((diff, used)) => {
            *prev = prev.wrapping_add(diff);
            Ok((Some(*prev), used))
        }
    }
}

/// A zigzag varint plus one (`encodeVarint64`); `None` for the NaN sentinel byte 0.
fn varint(input: &[u8]) -> Result<Option<(i64, usize)>, CloudError> {
    let mut value: u64 = 0;
    for (i, &byte) in input.iter().take(10).enumerate() {
        let payload = u64::from(byte & 0x7f);
        if i == 9 && payload > 1 {
            return Err(CloudError::Header("a varint overflows 64 bits".to_owned()));
        }
        value |= payload << (7 * i);
        if byte & 0x80 == 0 {
            if i == 0 && byte == 0 {
                return Ok(None);
            }
            let Some(value) = value.checked_sub(1) else {
                return Err(CloudError::Header(
                    "a varint encodes the NaN marker".to_owned(),
                ));
            };
            let signed = ((value >> 1) as i64) ^ -((value & 1) as i64);
            return Ok(Some((signed, i + 1)));
        }
    }
    if input.len() >= 10 {
        return Err(CloudError::Header("a varint runs past 10 bytes".to_owned()));
    }
    Err(truncated())
}

fn truncated() -> CloudError {
    CloudError::Truncated("a chunk ends inside a point".to_owned())
}

fn nan_in_integer() -> CloudError {
    CloudError::Header("an integer field holds the NaN marker".to_owned())
}
