//! Colour conversion on our side: packed rgb8/bgr8 rows (with any step) to I420 padded
//! to even sides, and I420 back to rgb8/bgr8 cropped to the image's size. BT.601 with
//! limited range (16..235), what a decoder assumes for an SPS without colour
//! information; integer arithmetic, chroma from the mean of each 2x2 block.

use crate::jpeg::{PixelFormat, PixelsRef};

/// One picture in I420: a luma plane and two quarter-size chroma planes, packed rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct I420 {
    /// Width of the luma plane: even.
    pub width: u32,
    /// Height of the luma plane: even.
    pub height: u32,
    /// `width * height` luma samples.
    pub y: Vec<u8>,
    /// `width/2 * height/2` blue-difference samples.
    pub u: Vec<u8>,
    /// `width/2 * height/2` red-difference samples.
    pub v: Vec<u8>,
}

impl I420 {
    /// The planes for `width`x`height` padded to even sides of at least 16 (OpenH264's
    /// smallest picture), to be filled.
    #[must_use]
    pub fn for_size(width: u32, height: u32) -> I420 {
        let (width, height) = padded(width, height);
        let luma = width as usize * height as usize;
        I420 {
            width,
            height,
            y: vec![0; luma],
            u: vec![0; luma / 4],
            v: vec![0; luma / 4],
        }
    }
}

/// `width`x`height` rounded up to even sides of at least 16 pixels.
#[must_use]
pub fn padded(width: u32, height: u32) -> (u32, u32) {
    let side = |v: u32| (v + v % 2).max(16);
    (side(width), side(height))
}

/// Red, green and blue positions of a 3-byte pixel format.
fn channels(format: PixelFormat) -> Option<(usize, usize, usize)> {
    match format {
        PixelFormat::Rgb8 => Some((0, 1, 2)),
        PixelFormat::Bgr8 => Some((2, 1, 0)),
        _ => None,
    }
}

fn luma(r: i32, g: i32, b: i32) -> u8 {
    // 16 + 219/255 of the BT.601 luma, in 8.8 fixed point; the result is within 16..=235.
    (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16) as u8
}

/// Fills `out` (sized by [`I420::for_size`] for this image) from rgb8 or bgr8 pixels;
/// the last column and row are repeated into the padding. Other formats: `false`.
pub fn from_rgb(pixels: &PixelsRef<'_>, out: &mut I420) -> bool {
    let Some((ri, gi, bi)) = channels(pixels.format()) else {
        return false;
    };
    let (w, h) = (pixels.width() as usize, pixels.height() as usize);
    let (pw, ph) = (out.width as usize, out.height as usize);
    if pw < w || ph < h || w == 0 || h == 0 {
        return false;
    }
    // infallible: `y` is clamped to the image's rows, each of which a `PixelsRef` holds
    let row = |y: usize| pixels.row(y.min(h - 1) as u32).unwrap_or_default();
    let pixel = |line: &[u8], x: usize| {
        let at = x.min(w - 1) * 3;
        match (line.get(at + ri), line.get(at + gi), line.get(at + bi)) {
            (Some(&r), Some(&g), Some(&b)) => (i32::from(r), i32::from(g), i32::from(b)),
            _ => (0, 0, 0),
        }
    };
    for cy in 0..ph / 2 {
        let lines = [row(2 * cy), row(2 * cy + 1)];
        for (k, line) in lines.iter().enumerate() {
            let y_row = &mut out.y[(2 * cy + k) * pw..][..pw];
            for (x, sample) in y_row.iter_mut().enumerate() {
                let (r, g, b) = pixel(line, x);
                *sample = luma(r, g, b);
            }
        }
        let chroma = cy * (pw / 2);
        for cx in 0..pw / 2 {
            let (mut r, mut g, mut b) = (0, 0, 0);
            for line in &lines {
                for x in [2 * cx, 2 * cx + 1] {
                    let (pr, pg, pb) = pixel(line, x);
                    (r, g, b) = (r + pr, g + pg, b + pb);
                }
            }
            let (r, g, b) = ((r + 2) / 4, (g + 2) / 4, (b + 2) / 4);
            out.u[chroma + cx] = (((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128) as u8;
            out.v[chroma + cx] = (((112 * r - 94 * g - 18 * b + 128) >> 8) + 128) as u8;
        }
    }
    true
}

/// Planes as a decoder lends them: rows `stride` apart.
#[derive(Debug, Clone, Copy)]
pub struct PlanesRef<'a> {
    /// Luma rows.
    pub y: &'a [u8],
    /// Blue-difference rows.
    pub u: &'a [u8],
    /// Red-difference rows.
    pub v: &'a [u8],
    /// Bytes between luma rows.
    pub y_stride: usize,
    /// Bytes between chroma rows.
    pub uv_stride: usize,
}

fn clamp(value: i32) -> u8 {
    value.clamp(0, 255) as u8
}

/// Writes the top-left `width`x`height` of `planes` as packed rgb8 or bgr8 into `out`
/// (resized to fit). `false` for another format or planes too small.
pub fn to_rgb(
    planes: &PlanesRef<'_>,
    width: u32,
    height: u32,
    format: PixelFormat,
    out: &mut Vec<u8>,
) -> bool {
    let Some((ri, gi, bi)) = channels(format) else {
        return false;
    };
    let (w, h) = (width as usize, height as usize);
    let fits = |plane: &[u8], stride: usize, rows: usize, cols: usize| {
        rows == 0 || (stride >= cols && plane.len() >= (rows - 1) * stride + cols)
    };
    if !fits(planes.y, planes.y_stride, h, w)
        || !fits(planes.u, planes.uv_stride, h.div_ceil(2), w.div_ceil(2))
        || !fits(planes.v, planes.uv_stride, h.div_ceil(2), w.div_ceil(2))
    {
        return false;
    }
    out.clear();
    out.resize(w * h * 3, 0);
    for (y, line) in out.chunks_exact_mut(w * 3).enumerate() {
        let y_row = &planes.y[y * planes.y_stride..][..w];
        let u_row = &planes.u[(y / 2) * planes.uv_stride..];
        let v_row = &planes.v[(y / 2) * planes.uv_stride..];
        for (x, px) in line.chunks_exact_mut(3).enumerate() {
            let c = 298 * (i32::from(y_row[x]) - 16);
            let d = i32::from(u_row[x / 2]) - 128;
            let e = i32::from(v_row[x / 2]) - 128;
            px[ri] = clamp((c + 409 * e + 128) >> 8);
            px[gi] = clamp((c - 100 * d - 208 * e + 128) >> 8);
            px[bi] = clamp((c + 516 * d + 128) >> 8);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_sizes_pad_by_repeating_and_round_trip_closely() {
        let (w, h) = (5u32, 3u32);
        let data: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 256) as u8).collect();
        let Ok(pixels) = PixelsRef::new(w, h, w as usize * 3, PixelFormat::Rgb8, &data) else {
            panic!("a valid layout");
        };
        let mut planes = I420::for_size(w, h);
        assert_eq!((planes.width, planes.height), (16, 16));
        assert!(from_rgb(&pixels, &mut planes));
        // The padding column and row repeat the last ones.
        assert_eq!(planes.y[15], planes.y[4]);
        assert_eq!(planes.y[15 * 16..], planes.y[2 * 16..3 * 16]);
        // Luma alone (grey) survives the round trip within rounding.
        let grey: Vec<u8> = (0..w * h).flat_map(|i| [(i * 9) as u8; 3]).collect();
        let Ok(pixels) = PixelsRef::new(w, h, w as usize * 3, PixelFormat::Bgr8, &grey) else {
            panic!("a valid layout");
        };
        assert!(from_rgb(&pixels, &mut planes));
        let view = PlanesRef {
            y: &planes.y,
            u: &planes.u,
            v: &planes.v,
            y_stride: 16,
            uv_stride: 8,
        };
        let mut back = Vec::new();
        assert!(to_rgb(&view, w, h, PixelFormat::Bgr8, &mut back));
        for (a, b) in back.iter().zip(&grey) {
            assert!(a.abs_diff(*b) <= 2, "{a} vs {b}");
        }
    }
}
