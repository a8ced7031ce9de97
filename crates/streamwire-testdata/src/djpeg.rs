//! libjpeg-turbo's `djpeg` (Debian's libjpeg-turbo-progs) as an independent decoder of the
//! JPEG files our encoders write.

use std::process::Command;

/// Decodes `file` with `djpeg -pnm` into its samples (the PNM body), or `None` when djpeg
/// cannot run: the test skips, saying why ([`crate::skip`]; a failure under
/// `STREAMWIRE_REQUIRE=all`).
///
/// # Panics
///
/// When djpeg refuses the file, or the temporary file cannot be written: the test fails.
pub fn decode(file: &[u8], label: &str) -> Option<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!("streamwire-djpeg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{}.jpg", label.replace([' ', ':', '/'], "-")));
    std::fs::write(&path, file).expect("write temp file");
    let output = Command::new("djpeg").arg("-pnm").arg(&path).output();
    std::fs::remove_file(&path).expect("remove temp file");
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            crate::skip(format!(
                "djpeg not runnable ({error}); install libjpeg-turbo-progs"
            ));
            return None;
        }
    };
    assert!(
        output.status.success(),
        "djpeg failed on {label}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    match pnm_samples(&output.stdout) {
        Some(samples) => Some(samples.to_vec()),
        None => panic!("djpeg wrote a PNM without samples for {label}"),
    }
}

/// The samples of a binary PNM (`P5|P6\n<w> <h>\n255\n` then the samples).
fn pnm_samples(pnm: &[u8]) -> Option<&[u8]> {
    let mut pos = 0;
    for _ in 0..4 {
        while pnm.get(pos).is_some_and(u8::is_ascii_whitespace) {
            pos += 1;
        }
        while pnm.get(pos).is_some_and(|b| !b.is_ascii_whitespace()) {
            pos += 1;
        }
    }
    pnm.get(pos + 1..)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_samples_follow_the_header() {
        assert_eq!(
            super::pnm_samples(b"P6\n2 1\n255\n\x01\x02\x03\x04\x05\x06"),
            Some(&b"\x01\x02\x03\x04\x05\x06"[..])
        );
        assert_eq!(super::pnm_samples(b"P5"), None);
    }
}
