//! Bounded file input: a file a user names (a blueprint file, a replay frame) is read only
//! when it is a regular file under a size limit, checked before it is opened, and read
//! through `take(limit + 1)` so that a file that grows while it is read is still bounded.
//!
//! A character device (`/dev/zero`), a FIFO, a socket or a folder is refused without being
//! opened: opening a FIFO for reading would wait for a writer, reading `/dev/zero` would
//! never end.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Not a regular file: refused before it was opened.
    #[error("{path} is {kind}, not a regular file: refused without reading it")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is (`a character device`, `a FIFO`, `a folder`).
        kind: &'static str,
    },
    /// Larger than the limit: refused before it was opened.
    #[error(
        "{path} holds {len} bytes, over the limit of {limit} bytes (`{setting}`): refused \
         without reading it"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// The limit.
        limit: u64,
        /// The setting that sets the limit.
        setting: &'static str,
    },
    /// It grew past the limit while it was read: reading stopped at the limit.
    #[error("{path} grew past the limit of {limit} bytes (`{setting}`) while it was read")]
    Grew {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
        /// The setting that sets the limit.
        setting: &'static str,
    },
    /// It could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What kind of file `file_type` is, for people, when it is not a regular file.
fn kind(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a file")
}

/// The bytes of `path` (symbolic links followed), when it is a regular file of at most
/// `limit` bytes; `setting` names the setting of the limit in errors.
pub fn read_bounded(path: &Path, limit: u64, setting: &'static str) -> Result<Vec<u8>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_owned(),
        source,
    };
    // Checked on the path first: opening a FIFO would already wait for a writer.
    let metadata = std::fs::metadata(path).map_err(io)?;
    check(path, &metadata, limit, setting)?;
    let file = std::fs::File::open(path).map_err(io)?;
    // And on what was opened, in case the path was replaced in between.
    let metadata = file.metadata().map_err(io)?;
    check(path, &metadata, limit, setting)?;
    let capacity = usize::try_from(metadata.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::Grew {
            path: path.to_owned(),
            limit,
            setting,
        });
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_bounded_text(
    path: &Path,
    limit: u64,
    setting: &'static str,
) -> Result<String, InputError> {
    let bytes = read_bounded(path, limit, setting)?;
    String::from_utf8(bytes).map_err(|e| InputError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

fn check(
    path: &Path,
    metadata: &std::fs::Metadata,
    limit: u64,
    setting: &'static str,
) -> Result<(), InputError> {
    if let Some(kind) = kind(metadata.file_type()) {
        return Err(InputError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    if metadata.len() > limit {
        return Err(InputError::TooLarge {
            path: path.to_owned(),
            len: metadata.len(),
            limit,
            setting,
        });
    }
    Ok(())
}

/// Bytes this thread has read through `read` calls so far (Linux's
/// `/proc/thread-self/io`, `rchar`), for tests that prove a file was not read; `None`
/// where there is no such file.
#[doc(hidden)]
pub fn thread_bytes_read() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("rchar:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_under_the_limit_is_read_and_one_over_it_is_refused() {
        let dir = std::env::temp_dir().join(format!("streamwire-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ten");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_bounded(&path, 10, "limit").unwrap(), b"0123456789");
        let refused = read_bounded(&path, 9, "limit").unwrap_err();
        assert!(
            matches!(
                refused,
                InputError::TooLarge {
                    len: 10,
                    limit: 9,
                    ..
                }
            ),
            "{refused}"
        );
        let folder = read_bounded(&dir, 1 << 20, "limit").unwrap_err();
        assert_eq!(
            folder.to_string(),
            format!(
                "{} is a folder, not a regular file: refused without reading it",
                dir.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_zero_is_refused_without_reading_a_byte_of_it() {
        let before = thread_bytes_read().unwrap();
        let refused = read_bounded(Path::new("/dev/zero"), 4 << 20, "limit").unwrap_err();
        let after = thread_bytes_read().unwrap();
        assert!(
            matches!(
                refused,
                InputError::NotRegular {
                    kind: "a character device",
                    ..
                }
            ),
            "{refused}"
        );
        // Nothing of /dev/zero: what this thread read in between is at most the metadata
        // calls' (none are reads) and the /proc file itself, far below the 4 MiB limit.
        assert!(after - before < 4096, "{} bytes read", after - before);
    }
}
