//! The check every encoder fuzz input gets, shared by the fuzz target `encode` and the corpus
//! replay test (`tests/encode_fuzz_corpus.rs`). The first 8 bytes pick the image and the
//! options (width 1..=512, height 1..=256, pixel format, subsampling, chroma downsampling,
//! quality as any byte, threads, `max_width`, `drop_alpha`, backend, row padding); the rest
//! are the pixels, repeated to fill the image. The encoder must return (never panic, never
//! report a caught panic); it may refuse only what the options make invalid (quality outside
//! 1..=100, `max_width` 0, alpha not allowed, top-left chroma on a backend that always
//! averages, a backend missing from the build); what it writes must fit
//! [`max_encoded_len`] and decode with zune-jpeg to the size it reports.

use std::num::NonZeroUsize;

use streamwire_codec::jpeg::{
    Backend, ChromaDownsampling, EncodeOptions, JpegDecoder, JpegError, PixelFormat, PixelsRef,
    Subsampling, Threads, encode, max_encoded_len,
};

/// The image and options an input describes: (pixels' width, height, step, format, data) and
/// the options.
pub(crate) struct Case {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) step: usize,
    pub(crate) format: PixelFormat,
    pub(crate) data: Vec<u8>,
    pub(crate) options: EncodeOptions,
}

/// The case `input` describes, `None` when it is shorter than its 8-byte head.
pub(crate) fn case(input: &[u8]) -> Option<Case> {
    let (head, pixels) = input.split_first_chunk::<8>()?;
    let [w, h, fmt, sub, quality, flags, backend, pad] = *head;
    let width = 1 + (u32::from(w) | (u32::from(flags & 0x01) << 8));
    let height = 1 + u32::from(h);
    let format = PixelFormat::ALL[usize::from(fmt) % PixelFormat::ALL.len()];
    let subsampling =
        [Subsampling::S420, Subsampling::S422, Subsampling::S444][usize::from(sub % 3)];
    let chroma_downsampling = if sub & 0x80 == 0 {
        ChromaDownsampling::Average
    } else {
        ChromaDownsampling::TopLeft
    };
    let threads = match (flags >> 1) % 5 {
        0 => Threads::Unsplit,
        1 => Threads::Auto,
        n => Threads::Fixed(NonZeroUsize::new(usize::from(n - 1)).unwrap_or(NonZeroUsize::MIN)),
    };
    let max_width = (flags & 0x40 != 0).then(|| u32::from(pad >> 3) * 9);
    let backend = Backend::ALL[usize::from(backend) % Backend::ALL.len()];
    let step = width as usize * format.bytes_per_pixel() + usize::from(pad & 7);
    let len = step * height as usize;
    let data = if pixels.is_empty() {
        vec![128; len]
    } else {
        pixels.iter().copied().cycle().take(len).collect()
    };
    let options = EncodeOptions {
        quality,
        subsampling,
        chroma_downsampling,
        max_width,
        drop_alpha: flags & 0x80 != 0,
        threads,
        backend,
    };
    Some(Case {
        width,
        height,
        step,
        format,
        data,
        options,
    })
}

/// Encodes the case `input` describes and checks the outcome; panics (a fuzz finding) on a
/// caught panic, a refusal of valid options, a file over the bound or one zune-jpeg rejects.
pub(crate) fn check(input: &[u8]) {
    let Some(case) = case(input) else {
        return;
    };
    let pixels = PixelsRef::new(case.width, case.height, case.step, case.format, &case.data)
        .expect("the case's layout is valid by construction");
    let options = case.options;
    match encode(&pixels, &options) {
        Ok(jpeg) => {
            let bound = max_encoded_len(case.width, case.height, case.format, &options);
            assert!(
                jpeg.data.len() <= bound,
                "{} bytes over the bound of {bound}",
                jpeg.data.len()
            );
            let decoded = JpegDecoder::default()
                .with_threads(Threads::Unsplit)
                .decode(&jpeg.data, PixelFormat::Rgb8)
                .expect("zune-jpeg decodes what the encoder wrote");
            assert_eq!((decoded.width, decoded.height), (jpeg.width, jpeg.height));
        }
        Err(JpegError::InvalidQuality { quality }) => {
            assert!(!(1..=100).contains(&quality), "quality {quality} refused");
        }
        Err(JpegError::InvalidMaxWidth) => assert_eq!(options.max_width, Some(0)),
        Err(JpegError::AlphaNotAllowed { format }) => {
            assert!(format.has_alpha() && !options.drop_alpha);
        }
        Err(JpegError::BackendUnsupported { backend, .. }) => {
            assert!(
                !backend.can_keep_top_left_chroma()
                    && options.chroma_downsampling == ChromaDownsampling::TopLeft
            );
        }
        Err(JpegError::BackendUnavailable { backend }) => assert!(!backend.is_available()),
        Err(error) => panic!("{} refused valid options: {error}", options.backend),
    }
}
