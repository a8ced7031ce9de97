//! Hostile inputs are refused before the decoder allocates anything proportional to the size
//! they declare, proven with the workspace's counting allocator (`streamwire_testdata::alloc`,
//! per-thread counts). This is its own test binary because the allocator is process-wide.

mod common;

use common::craft;
use streamwire_codec::jpeg::{
    DecodeLimits, EncodeOptions, JpegDecoder, JpegError, PixelFormat, PixelsRef, encode,
};
use streamwire_codec::lossless::{LosslessError, compress_rows, decompress_exact};

use streamwire_testdata::alloc::{CountingAlloc, peak_during};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

const MIB: usize = 1 << 20;

/// Asserts that `decode`, `decode_into` and `read_header` all refuse `data` with an error
/// matching `expected`, each allocating less than `max_bytes`.
fn assert_refused_cheaply(
    decoder: &JpegDecoder,
    data: &[u8],
    format: PixelFormat,
    max_bytes: usize,
    expected: impl Fn(&JpegError) -> bool,
) {
    let (result, peak) = peak_during(|| decoder.decode(data, format));
    let error = result.expect_err("decode must refuse");
    assert!(expected(&error), "decode: unexpected error {error}");
    assert!(
        peak < max_bytes,
        "decode allocated {peak} bytes before refusing ({error})"
    );

    let mut buffer = Vec::new();
    let (result, peak) = peak_during(|| decoder.decode_into(data, format, &mut buffer));
    let error = result.expect_err("decode_into must refuse");
    assert!(expected(&error), "decode_into: unexpected error {error}");
    assert!(
        peak < max_bytes,
        "decode_into allocated {peak} bytes ({error})"
    );
    assert_eq!(
        buffer.capacity(),
        0,
        "decode_into grew the buffer before refusing"
    );

    let (result, peak) = peak_during(|| decoder.read_header(data));
    let error = result.expect_err("read_header must refuse");
    assert!(
        peak < max_bytes,
        "read_header allocated {peak} bytes ({error})"
    );
}

/// (a) A header declaring 60000x60000 (10.8 GB as RGB) is refused allocating under 1 MiB:
/// over the dimension limit by default, and over the decoded-bytes limit when the dimension
/// limit is raised to JPEG's maximum.
#[test]
fn header_declaring_60000_squared_is_refused_without_allocating() {
    let jpeg = craft::huge_header(60000, 60000, 118);
    assert_refused_cheaply(
        &JpegDecoder::default(),
        &jpeg,
        PixelFormat::Rgb8,
        MIB,
        |e| {
            matches!(
                e,
                JpegError::TooLarge {
                    width: 60000,
                    height: 60000,
                    ..
                }
            )
        },
    );
    let permissive = JpegDecoder::new(DecodeLimits {
        max_width: 65535,
        max_height: 65535,
        ..DecodeLimits::default()
    });
    assert_refused_cheaply(&permissive, &jpeg, PixelFormat::Rgb8, MIB, |e| {
        matches!(e, JpegError::DecodedBytesOverLimit { .. })
    });
}

/// (b) A 258-byte file declaring 16000x16000 (within the dimension limits) is refused with a
/// small allocation: as RGB it is over the decoded-bytes limit (768 MB), as Mono8 (256 MB,
/// under the limit) it is refused as truncated, since 4 million blocks need at least 500 KB of
/// entropy-coded data.
#[test]
fn tiny_file_declaring_16000_squared_is_refused_without_allocating() {
    let jpeg = craft::huge_header(16000, 16000, 118);
    assert_eq!(jpeg.len(), 258);
    let decoder = JpegDecoder::default();
    assert_refused_cheaply(&decoder, &jpeg, PixelFormat::Rgb8, MIB, |e| {
        matches!(e, JpegError::DecodedBytesOverLimit { .. })
    });
    assert_refused_cheaply(&decoder, &jpeg, PixelFormat::Mono8, MIB, |e| {
        matches!(
            e,
            JpegError::Truncated {
                needed: 500_000,
                available: 118,
                ..
            }
        )
    });
}

/// (c) A 38 KB progressive file with 1200 scans is refused by the scan limit before decoding.
#[test]
fn file_with_1200_scans_is_refused_before_decoding() {
    let jpeg = craft::many_scans(1200);
    assert!(
        (36_000..40_000).contains(&jpeg.len()),
        "{} bytes",
        jpeg.len()
    );
    assert_refused_cheaply(
        &JpegDecoder::default(),
        &jpeg,
        PixelFormat::Rgb8,
        MIB,
        |e| {
            matches!(
                e,
                JpegError::TooManyScans {
                    scans: 101,
                    max: 100
                }
            )
        },
    );
    // The same structure with few scans passes the pre-scan: the limit is what refused it.
    let header = JpegDecoder::default()
        .read_header(&craft::many_scans(100))
        .unwrap();
    assert_eq!((header.scans, header.progressive), (100, true));
}

/// Control: the allocator does see a real decode's output buffer, and `decode_into` with a
/// buffer of the right capacity allocates only the decoder's small working buffers.
#[test]
fn counting_sees_a_real_decode() {
    let data = common::synthetic_frame();
    let pixels = PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, &data).unwrap();
    let jpeg = encode(&pixels, &EncodeOptions::default()).unwrap();
    let decoder = JpegDecoder::default();
    let (decoded, peak_fresh) = peak_during(|| decoder.decode(&jpeg.data, PixelFormat::Rgb8));
    assert_eq!(decoded.unwrap().data.len(), 1280 * 720 * 3);
    assert!(peak_fresh >= 1280 * 720 * 3, "peak {peak_fresh}");

    let mut buffer = Vec::with_capacity(1280 * 720 * 3);
    let (result, peak_reused) =
        peak_during(|| decoder.decode_into(&jpeg.data, PixelFormat::Rgb8, &mut buffer));
    result.unwrap();
    println!("720p decode peak: fresh {peak_fresh} bytes, reused buffer {peak_reused} bytes");
    assert!(peak_reused < 1280 * 720 * 3 / 4, "peak {peak_reused}");
}

/// `decompress_exact` allocates exactly the output on the Rust heap, and refuses an
/// implausible declared size before allocating it. (The zstd context is allocated by the C
/// library's malloc, which this allocator does not see; its size is printed for the record.)
#[test]
fn decompress_exact_allocates_the_output_and_a_constant() {
    let rows: Vec<Vec<u8>> = (0..512u32)
        .map(|y| (0..2048u32).map(|x| ((x * y) >> 5) as u8).collect())
        .collect();
    let total = 512 * 2048;
    let frame = compress_rows(rows.iter().map(Vec::as_slice), total, 3).unwrap();
    let (result, peak) = peak_during(|| decompress_exact(&frame, total));
    assert_eq!(result.unwrap().len(), total);
    let mut context = zstd::zstd_safe::DCtx::create();
    let mut scratch = Vec::with_capacity(total);
    context.decompress(&mut scratch, &frame).unwrap();
    println!(
        "decompress_exact of {total} bytes: Rust heap peak {peak} bytes; a zstd context \
         after such a call holds {} bytes of C heap",
        context.sizeof()
    );
    assert!(peak < total + 256 * 1024, "peak {peak}");

    // 13 bytes declaring 1 GiB (see the unit test in lossless.rs for the layout).
    let mut hostile = vec![0x28, 0xB5, 0x2F, 0xFD, 0b1010_0000];
    hostile.extend_from_slice(&(1u32 << 30).to_le_bytes());
    hostile.extend_from_slice(&(1u32 | (1 << 1) | ((128 << 10) << 3)).to_le_bytes()[..3]);
    hostile.push(0);
    let (result, peak) = peak_during(|| decompress_exact(&hostile, 1 << 30));
    assert!(matches!(result, Err(LosslessError::Implausible { .. })));
    assert!(peak < 64 * 1024, "peak {peak}");
}
