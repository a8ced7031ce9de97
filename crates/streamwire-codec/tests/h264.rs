//! The H.264 engine (feature `h264`): round trips, keyframes, sizes (odd, 1080, changing),
//! and bad input (hostile SPS sizes, truncated and corrupt access units, a stream joined
//! mid-GOP, a lost frame), each refused with an error and decoding resuming at the next IDR.
#![cfg(feature = "h264")]

use streamwire_codec::h264::nal::{self, nal_type};
use streamwire_codec::h264::{
    DecodeLimits, EncodeSettings, EncodedFrame, H264Decoder, H264Encoder, H264Error, sps, yuv,
};
use streamwire_codec::jpeg::{PixelFormat, PixelsRef, psnr};

const FRAME_NS: u64 = 50_000_000;

/// A smooth moving pattern, `step`-padded rows of rgb8.
fn frame(width: u32, height: u32, index: u32) -> Vec<u8> {
    let mut data = Vec::with_capacity((width * height * 3) as usize);
    for y in 0..height {
        for x in 0..width {
            let (xs, ys) = (x + 2 * index, y + index);
            data.extend_from_slice(&[
                (xs * 255 / (width + 64)) as u8,
                (ys * 255 / (height + 64)) as u8,
                (((xs + ys) / 4) % 64 * 3) as u8,
            ]);
        }
    }
    data
}

fn encode_sequence(
    settings: EncodeSettings,
    width: u32,
    height: u32,
    count: u32,
) -> Result<(Vec<EncodedFrame>, Vec<Vec<u8>>), H264Error> {
    let mut encoder = H264Encoder::new(settings)?;
    let mut frames = Vec::new();
    let mut originals = Vec::new();
    for index in 0..count {
        let data = frame(width, height, index);
        let pixels = PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, &data)
            .map_err(|e| H264Error::Corrupt(e.to_string()))?;
        frames.push(encoder.encode(&pixels, u64::from(index) * FRAME_NS)?);
        originals.push(data);
    }
    Ok((frames, originals))
}

fn types(frame: &EncodedFrame) -> Vec<u8> {
    nal::units(&frame.data)
        .map(|units| units.iter().map(|u| nal::unit_type(u)).collect())
        .unwrap_or_default()
}

#[test]
fn round_trip_keyframes_carry_sps_and_pps() -> Result<(), H264Error> {
    let settings = EncodeSettings {
        gop_seconds: 0.5,
        ..EncodeSettings::default()
    };
    let (frames, originals) = encode_sequence(settings, 96, 64, 25)?;
    let mut decoder = H264Decoder::default();
    let mut out = Vec::new();
    let mut keyframes = Vec::new();
    for (index, (encoded, original)) in frames.iter().zip(&originals).enumerate() {
        let kinds = types(encoded);
        assert!(encoded.data.starts_with(&[0, 0, 0, 1]), "Annex B");
        if encoded.keyframe {
            keyframes.push(index);
            for needed in [nal_type::SPS, nal_type::PPS, nal_type::IDR] {
                assert!(kinds.contains(&needed), "keyframe {index}: {kinds:?}");
            }
        } else {
            assert_eq!(kinds, vec![nal_type::SLICE], "frame {index}");
        }
        let size = decoder.decode_rgb(&encoded.data, PixelFormat::Rgb8, None, &mut out)?;
        assert_eq!(
            (size.width, size.height, size.keyframe),
            (96, 64, encoded.keyframe)
        );
        let db = psnr(&out, original).unwrap_or_default();
        assert!(db > 30.0, "frame {index}: {db:.1} dB");
    }
    // Every 0.5 s of stamps at 20 fps: frames 0, 10, 20.
    assert_eq!(keyframes, vec![0, 10, 20]);
    let units = nal::units(&frames[0].data)?;
    let sps = sps::parse(units[0])?;
    assert_eq!((sps.profile_idc, sps.width, sps.height), (66, 96, 64));
    Ok(())
}

#[test]
fn odd_sizes_and_1080_are_padded_and_cropped() -> Result<(), H264Error> {
    for (width, height) in [
        (33, 17),
        (1, 1),
        (2, 3),
        (16, 16),
        (17, 15),
        (97, 1080),
        (1920, 1080),
    ] {
        let (frames, originals) = encode_sequence(EncodeSettings::default(), width, height, 3)?;
        let units = nal::units(&frames[0].data)?;
        let info = sps::parse(units[0])?;
        // The SPS crops to the padded size; the rest is the caller's to drop.
        assert_eq!((info.width, info.height), yuv::padded(width, height));
        assert_eq!(info.coded_height % 16, 0);
        let mut decoder = H264Decoder::default();
        let mut out = Vec::new();
        for (encoded, original) in frames.iter().zip(&originals) {
            assert_eq!((encoded.width, encoded.height), (width, height));
            let size = decoder.decode_rgb(
                &encoded.data,
                PixelFormat::Rgb8,
                Some((width, height)),
                &mut out,
            )?;
            assert_eq!((size.width, size.height), (width, height));
            let db = psnr(&out, original).unwrap_or_default();
            assert!(db > 28.0, "{width}x{height}: {db:.1} dB");
        }
    }
    Ok(())
}

#[test]
fn a_size_change_starts_a_new_sps_and_idr() -> Result<(), H264Error> {
    let mut encoder = H264Encoder::new(EncodeSettings::default())?;
    let mut decoder = H264Decoder::default();
    let mut out = Vec::new();
    for (index, (width, height)) in [(64, 48), (64, 48), (96, 64), (96, 64), (64, 48)]
        .into_iter()
        .enumerate()
    {
        let data = frame(width, height, index as u32);
        let pixels = PixelsRef::new(width, height, width as usize * 3, PixelFormat::Bgr8, &data)
            .map_err(|e| H264Error::Corrupt(e.to_string()))?;
        let encoded = encoder.encode(&pixels, index as u64 * FRAME_NS)?;
        assert_eq!(encoded.keyframe, index != 1 && index != 3, "frame {index}");
        if encoded.keyframe {
            let info = sps::parse(nal::units(&encoded.data)?[0])?;
            assert_eq!((info.width, info.height), (width, height));
        }
        let size = decoder.decode_rgb(&encoded.data, PixelFormat::Bgr8, None, &mut out)?;
        assert_eq!((size.width, size.height), (width, height));
    }
    Ok(())
}

#[test]
fn max_width_downscales_to_even_sides_and_requests_force_keyframes() -> Result<(), H264Error> {
    let settings = EncodeSettings {
        max_width: Some(51),
        gop_seconds: 60.0,
        ..EncodeSettings::default()
    };
    let mut encoder = H264Encoder::new(settings)?;
    let data = frame(101, 77, 0);
    let pixels = PixelsRef::new(101, 77, 303, PixelFormat::Rgb8, &data)
        .map_err(|e| H264Error::Corrupt(e.to_string()))?;
    let first = encoder.encode(&pixels, 0)?;
    assert_eq!((first.width, first.height, first.keyframe), (50, 38, true));
    assert!(!encoder.encode(&pixels, FRAME_NS)?.keyframe);
    encoder.request_keyframe();
    assert!(encoder.encode(&pixels, 2 * FRAME_NS)?.keyframe);
    assert!(!encoder.encode(&pixels, 3 * FRAME_NS)?.keyframe);
    Ok(())
}

#[test]
fn settings_outside_their_ranges_are_refused() {
    let bad = [
        EncodeSettings {
            bitrate: 1_000,
            ..EncodeSettings::default()
        },
        EncodeSettings {
            gop_seconds: 0.0,
            ..EncodeSettings::default()
        },
        EncodeSettings {
            gop_seconds: f32::NAN,
            ..EncodeSettings::default()
        },
        EncodeSettings {
            max_width: Some(8),
            ..EncodeSettings::default()
        },
        EncodeSettings {
            frame_rate: 1000.0,
            ..EncodeSettings::default()
        },
    ];
    for settings in bad {
        assert!(
            matches!(H264Encoder::new(settings), Err(H264Error::Setting { .. })),
            "{settings:?}"
        );
    }
    let mut encoder = H264Encoder::new(EncodeSettings::default()).expect("defaults are valid");
    let pixels = PixelsRef::new(4, 4, 16, PixelFormat::Rgba8, &[0; 64]).expect("a valid layout");
    assert!(matches!(
        encoder.encode(&pixels, 0),
        Err(H264Error::Unsupported(_))
    ));
    let huge = vec![0u8; 4000 * 2 * 3];
    let pixels = PixelsRef::new(4000, 2, 12_000, PixelFormat::Rgb8, &huge).expect("a valid layout");
    assert!(matches!(
        encoder.encode(&pixels, 0),
        Err(H264Error::TooLarge { .. })
    ));
}

/// Writes bits and exp-Golomb codes: a made-up SPS.
#[derive(Default)]
struct BitWriter {
    bits: Vec<bool>,
}

impl BitWriter {
    fn bits(&mut self, value: u64, count: u32) -> &mut Self {
        for i in (0..count).rev() {
            self.bits.push((value >> i) & 1 == 1);
        }
        self
    }
    fn ue(&mut self, value: u64) -> &mut Self {
        let code = value + 1;
        let len = 64 - code.leading_zeros();
        self.bits(0, len - 1).bits(code, len)
    }
    /// As an Annex B NAL unit with its start code (no emulation prevention needed here).
    fn sps_nal(&self) -> Vec<u8> {
        let mut out = vec![0, 0, 0, 1, 0x67];
        for chunk in self.bits.chunks(8) {
            out.push(
                chunk
                    .iter()
                    .enumerate()
                    .fold(0u8, |b, (i, &bit)| b | (u8::from(bit) << (7 - i))),
            );
        }
        out
    }
}

/// A baseline SPS announcing `mbs_w`x`mbs_h` macroblocks, frame_num in 4 bits.
fn hostile_sps(mbs_w: u64, mbs_h: u64) -> Vec<u8> {
    let mut w = BitWriter::default();
    w.bits(66, 8).bits(0xC0, 8).bits(31, 8).ue(0).ue(0).ue(2);
    w.ue(1)
        .bits(0, 1)
        .ue(mbs_w - 1)
        .ue(mbs_h - 1)
        .bits(1, 1)
        .bits(1, 1)
        .bits(0, 1);
    w.bits(0, 1).bits(1, 1);
    w.sps_nal()
}

/// `frame`'s SPS replaced by `sps` (its PPS and slices kept).
fn with_sps(frame: &EncodedFrame, sps: &[u8]) -> Vec<u8> {
    let units = nal::units(&frame.data).unwrap_or_default();
    let mut out = sps.to_vec();
    for unit in units.iter().filter(|u| nal::unit_type(u) != nal_type::SPS) {
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(unit);
    }
    out
}

#[test]
fn hostile_sizes_are_refused_before_the_decoder_allocates() -> Result<(), H264Error> {
    let (frames, _) = encode_sequence(EncodeSettings::default(), 96, 64, 3)?;
    let mut decoder = H264Decoder::default();
    let mut out = Vec::new();
    let hostile = with_sps(&frames[0], &hostile_sps(3750, 3750));
    assert!(matches!(
        decoder.decode_rgb(&hostile, PixelFormat::Rgb8, None, &mut out),
        Err(H264Error::TooLarge {
            width: 60000,
            height: 60000,
            ..
        })
    ));
    // Just over OpenH264's own limit, which would still allocate for it.
    let hostile = with_sps(&frames[0], &hostile_sps(256, 144));
    assert!(matches!(
        decoder.decode_rgb(&hostile, PixelFormat::Rgb8, None, &mut out),
        Err(H264Error::TooLarge {
            width: 4096,
            height: 2304,
            ..
        })
    ));
    // A stream's declared maximum: 96x64 is over 80 wide.
    let mut small = H264Decoder::new(DecodeLimits {
        max_width: 80,
        max_height: 80,
    });
    assert!(matches!(
        small.decode_rgb(&frames[0].data, PixelFormat::Rgb8, None, &mut out),
        Err(H264Error::TooLarge { width: 96, .. })
    ));
    // The refused SPS left the decoder waiting; the real keyframe and what follows decode.
    assert!(matches!(
        decoder.decode_rgb(&frames[1].data, PixelFormat::Rgb8, None, &mut out),
        Err(H264Error::AwaitingKeyframe)
    ));
    decoder.decode_rgb(&frames[0].data, PixelFormat::Rgb8, None, &mut out)?;
    decoder.decode_rgb(&frames[1].data, PixelFormat::Rgb8, None, &mut out)?;
    Ok(())
}

/// Decodes `units`, returning per access unit `Ok` or the error's name.
fn outcomes(decoder: &mut H264Decoder, units: &[Vec<u8>]) -> Vec<String> {
    let mut out = Vec::new();
    units
        .iter()
        .map(
            |au| match decoder.decode_rgb(au, PixelFormat::Rgb8, None, &mut out) {
                Ok(size) if size.keyframe => "key".to_owned(),
                Ok(_) => "ok".to_owned(),
                Err(H264Error::AwaitingKeyframe) => "await".to_owned(),
                Err(H264Error::MissingFrame { .. }) => "missing".to_owned(),
                Err(H264Error::Corrupt(_)) => "corrupt".to_owned(),
                Err(other) => format!("{other}"),
            },
        )
        .collect()
}

#[test]
fn mid_gop_start_lost_frame_and_truncation_resume_at_the_next_idr() -> Result<(), H264Error> {
    let settings = EncodeSettings {
        gop_seconds: 0.2,
        ..EncodeSettings::default()
    };
    let (frames, _) = encode_sequence(settings, 96, 64, 12)?;
    let units: Vec<Vec<u8>> = frames.iter().map(|f| f.data.clone()).collect();
    let key = |i: usize| frames[i].keyframe;
    assert!(key(0) && key(4) && key(8) && !key(1) && !key(5));

    // Joined mid-GOP: nothing until the IDR at frame 4.
    let mut decoder = H264Decoder::default();
    assert_eq!(
        outcomes(&mut decoder, &units[2..7]),
        ["await", "await", "key", "ok", "ok"]
    );

    // Frame 2 lost: 3 is a gap, then nothing until 4.
    let mut decoder = H264Decoder::default();
    let mut lost = units[..6].to_vec();
    lost.remove(2);
    assert_eq!(
        outcomes(&mut decoder, &lost),
        ["key", "ok", "missing", "key", "ok"]
    );

    // Frame 1 cut short, frame 5 with its middle zeroed, an empty message, junk.
    let mut decoder = H264Decoder::default();
    let mut damaged = units[..10].to_vec();
    let half = damaged[1].len() / 2;
    damaged[1].truncate(half);
    let middle = damaged[5].len() / 2;
    damaged[5][middle..].iter_mut().for_each(|b| *b = 0);
    damaged[6] = Vec::new();
    damaged[7] = vec![0xFF; 32];
    let got = outcomes(&mut decoder, &damaged);
    assert_eq!(got[0], "key");
    assert_ne!(got[1], "ok", "a truncated frame is an error: {got:?}");
    assert_eq!(got[2..4], ["await", "await"]);
    assert_eq!(got[4], "key");
    assert_ne!(got[5], "ok", "a corrupt frame is an error: {got:?}");
    assert_eq!(got[6..8], ["corrupt", "corrupt"]);
    assert_eq!(got[8..], ["key", "ok"]);
    Ok(())
}

/// A small deterministic generator (xorshift) for the mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Fuzz-style: 3000 mutated access units (flipped bits, cut, spliced, duplicated NAL
/// units) through one long-lived decoder; every one decodes or is an error, never a
/// panic (a panic caught inside is reported as `Engine("panicked")`, which also fails), and
/// the stream still decodes at the next clean IDR.
#[test]
fn mutated_access_units_are_errors_never_panics() -> Result<(), H264Error> {
    let settings = EncodeSettings {
        gop_seconds: 0.2,
        ..EncodeSettings::default()
    };
    let (frames, _) = encode_sequence(settings, 48, 32, 12)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut decoder = H264Decoder::new(DecodeLimits {
        max_width: 256,
        max_height: 256,
    });
    let mut out = Vec::new();
    let (mut decoded, mut refused) = (0, 0);
    for round in 0..3000 {
        let source = &frames[rng.below(frames.len())].data;
        let mut au = source.clone();
        match rng.below(4) {
            0 => {
                for _ in 0..=rng.below(8) {
                    let at = rng.below(au.len());
                    au[at] ^= 1 << rng.below(8);
                }
            }
            1 => au.truncate(rng.below(au.len())),
            2 => {
                let other = &frames[rng.below(frames.len())].data;
                let cut = rng.below(other.len());
                au.extend_from_slice(&other[cut..]);
            }
            _ => {
                let at = rng.below(au.len());
                let byte = rng.next() as u8;
                au.insert(at, byte);
            }
        }
        match decoder.decode_rgb(&au, PixelFormat::Rgb8, None, &mut out) {
            Ok(_) => decoded += 1,
            Err(H264Error::Engine(reason)) => panic!("round {round}: engine failure {reason}"),
            Err(_) => refused += 1,
        }
    }
    println!("mutated access units: {decoded} decoded, {refused} refused");
    assert!(
        refused > 1000 && decoded > 100,
        "{decoded} decoded, {refused} refused"
    );
    decoder.decode_rgb(&frames[8].data, PixelFormat::Rgb8, None, &mut out)?;
    decoder.decode_rgb(&frames[9].data, PixelFormat::Rgb8, None, &mut out)?;
    Ok(())
}
