//! Helpers shared by the test binaries (and, through `#[path]`, the bench): synthetic
//! images, a tiny RNG and hand-built JPEG pieces. The real data is `streamwire-testdata`'s.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses a different subset of these helpers"
)]

/// A tiny deterministic generator (xorshift64*), so tests need no RNG crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// A triangle wave over 20..=235: a ramp that turns around instead of wrapping.
fn ramp(v: f64) -> u8 {
    let phase = v.rem_euclid(430.0);
    let folded = if phase > 215.0 { 430.0 - phase } else { phase };
    (20.0 + folded) as u8
}

/// A smooth `width`x`height` image in `bpp` bytes per pixel (alpha 255), rows `step` apart
/// with padding bytes set to 0xAB so a test notices if padding leaks into the output.
/// "Smooth" has a fixed slope (at most 3 levels per pixel in any channel) whatever the size,
/// so the expected JPEG error does not depend on the image size.
pub fn smooth_image(width: u32, height: u32, bpp: usize, step: usize) -> Vec<u8> {
    let mut data = vec![0xAB; height as usize * step];
    for y in 0..height as usize {
        for x in 0..width as usize {
            let (fx, fy) = (x as f64, y as f64);
            let pixel = [
                ramp(40.0 + 3.0 * fx),
                ramp(60.0 + 2.0 * fy),
                ramp(100.0 + 1.5 * (fx + fy)),
                255,
            ];
            let start = y * step + x * bpp;
            if bpp == 1 {
                data[start] = ramp(30.0 + 2.0 * fx + 1.0 * fy);
            } else {
                data[start..start + bpp].copy_from_slice(&pixel[..bpp]);
            }
        }
    }
    data
}

/// A 1280x720 RGB gradient with noise: a stand-in for a camera frame when the data is absent.
pub fn synthetic_frame() -> Vec<u8> {
    let mut rng = Rng::new(7);
    let mut data = Vec::with_capacity(1280 * 720 * 3);
    for y in 0..720u32 {
        for x in 0..1280u32 {
            let noise = (rng.next_u64() % 24) as u32;
            data.push(((x * 200 / 1280) + noise) as u8);
            data.push(((y * 200 / 720) + noise) as u8);
            data.push((((x + y) * 100 / 2000) + 60 + noise) as u8);
        }
    }
    data
}

/// Packed rows of `data` (dropping padding): `height` rows of `row_len` bytes, `step` apart.
pub fn pack(data: &[u8], height: usize, step: usize, row_len: usize) -> Vec<u8> {
    data.chunks(step)
        .take(height)
        .flat_map(|row| &row[..row_len])
        .copied()
        .collect()
}

/// Hand-built JPEG pieces for hostile inputs.
pub mod craft {
    /// DQT: one table of all-ones.
    pub fn dqt() -> Vec<u8> {
        let mut out = vec![0xFF, 0xDB, 0x00, 0x43, 0x00];
        out.extend_from_slice(&[1; 64]);
        out
    }

    /// SOF (`marker` 0xC0 baseline or 0xC2 progressive) for a greyscale `width`x`height` frame.
    pub fn sof_grey(marker: u8, width: u16, height: u16) -> Vec<u8> {
        let mut out = vec![0xFF, marker, 0x00, 0x0B, 8];
        out.extend_from_slice(&height.to_be_bytes());
        out.extend_from_slice(&width.to_be_bytes());
        out.extend_from_slice(&[1, 1, 0x11, 0]);
        out
    }

    /// DHT with one code of length 1 for symbol 0 (`class_id` 0x00 DC, 0x10 AC).
    pub fn dht_one_code(class_id: u8) -> Vec<u8> {
        let mut out = vec![0xFF, 0xC4, 0x00, 0x14, class_id, 1];
        out.extend_from_slice(&[0; 15]);
        out.push(0);
        out
    }

    /// SOS for the single grey component with spectral selection `ss..=se` and `ah_al`.
    pub fn sos_grey(ss: u8, se: u8, ah_al: u8) -> Vec<u8> {
        vec![0xFF, 0xDA, 0x00, 0x08, 1, 1, 0x00, ss, se, ah_al]
    }

    /// A baseline greyscale JPEG declaring `width`x`height` with `data_len` bytes of entropy
    /// data: the shape of the "258 bytes, 2.4 GB of heap" attack. With `data_len` 118 the file
    /// is exactly 258 bytes.
    pub fn huge_header(width: u16, height: u16, data_len: usize) -> Vec<u8> {
        let mut out = vec![0xFF, 0xD8];
        out.extend(dqt());
        out.extend(sof_grey(0xC0, width, height));
        out.extend(dht_one_code(0x00));
        out.extend(dht_one_code(0x10));
        out.extend(sos_grey(0, 63, 0));
        out.extend(std::iter::repeat_n(0x2A, data_len));
        out.extend_from_slice(&[0xFF, 0xD9]);
        out
    }

    /// A progressive 64x64 greyscale JPEG with `scans` scans (one DC scan, then AC scans of
    /// 22 data bytes each): the shape of the "38 KB, 1000+ scans, a minute to decode" attack.
    pub fn many_scans(scans: usize) -> Vec<u8> {
        let mut out = vec![0xFF, 0xD8];
        out.extend(dqt());
        out.extend(sof_grey(0xC2, 64, 64));
        out.extend(dht_one_code(0x00));
        out.extend(dht_one_code(0x10));
        out.extend(sos_grey(0, 0, 0));
        out.extend_from_slice(&[0x00; 16]);
        for _ in 1..scans {
            out.extend(sos_grey(1, 63, 0));
            out.extend_from_slice(&[0x00; 22]);
        }
        out.extend_from_slice(&[0xFF, 0xD9]);
        out
    }
}
