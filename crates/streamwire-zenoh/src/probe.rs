//! Whether shared memory can be used on this host, asked before a session opens with it:
//! zenoh makes its shared-memory internals in a lazy static and unwraps the result, so a
//! full or missing `/dev/shm` would panic inside zenoh; asked first, it turns shared memory
//! off with one message instead. Also the sweep of the segments left by processes that
//! are gone (a worker or a coordinator killed by a signal).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Where POSIX shared memory lives on Linux: zenoh's segments are `<id>.zenoh` there.
pub const SHM_DIR: &str = "/dev/shm";

/// Room asked for besides the pool: zenoh's metadata segment, and its first segment
/// headers.
pub const SHM_HEADROOM: u64 = 4 << 20;

/// The size of the test segment written (its pages are really taken: a full tmpfs
/// refuses them).
const TEST_SEGMENT_BYTES: usize = 1 << 20;

/// Why shared memory cannot be used on this host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShmProbeError {
    /// The folder's free space cannot be read (no such folder, not a file system).
    #[error("the free space of {} cannot be read", .dir.display())]
    Unreadable {
        /// The folder.
        dir: PathBuf,
        /// What the OS said.
        #[source]
        error: std::io::Error,
    },
    /// Less free space than the pool and zenoh's own segments need.
    #[error(
        "{} has {} free, below the {} its pool and zenoh's own segments need",
        .dir.display(), mib(*.free), mib(*.needed)
    )]
    TooSmall {
        /// The folder.
        dir: PathBuf,
        /// Bytes free for this user.
        free: u64,
        /// Bytes asked for.
        needed: u64,
    },
    /// A test segment could not be made, written or removed.
    #[error("a test segment in {} cannot be written", .dir.display())]
    TestSegment {
        /// The folder.
        dir: PathBuf,
        /// What the OS said.
        #[source]
        error: std::io::Error,
    },
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Checks that shared memory in `dir` (`/dev/shm` on Linux: [`SHM_DIR`]) can hold a pool
/// of `pool_bytes`: its free space (`statvfs`) covers the pool and [`SHM_HEADROOM`], and a
/// test segment of 1 MiB can be made and written there (then removed).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use streamwire_zenoh::{ShmProbeError, probe_shared_memory};
/// assert!(matches!(
///     probe_shared_memory(dir.path(), usize::MAX),
///     Err(ShmProbeError::TooSmall { .. })
/// ));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn probe_shared_memory(dir: &Path, pool_bytes: usize) -> Result<(), ShmProbeError> {
    let stat = rustix::fs::statvfs(dir).map_err(|error| ShmProbeError::Unreadable {
        dir: dir.to_owned(),
        error: error.into(),
    })?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    let needed = u64::try_from(pool_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(SHM_HEADROOM);
    if free < needed {
        return Err(ShmProbeError::TooSmall {
            dir: dir.to_owned(),
            free,
            needed,
        });
    }
    let path = dir.join(format!("streamwire-probe-{}", std::process::id()));
    let written = write_test_segment(&path);
    // Removed whatever happened (a partly written file included).
    let removed = match std::fs::remove_file(&path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    };
    written
        .and(removed)
        .map_err(|error| ShmProbeError::TestSegment {
            dir: dir.to_owned(),
            error,
        })
}

fn write_test_segment(path: &Path) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(&vec![0x5a; TEST_SEGMENT_BYTES])?;
    file.sync_all()
}

/// zenoh's segments in `dir` (`<id>.zenoh`), by path.
pub fn zenoh_segments(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "zenoh"))
        .collect()
}

/// Removes the shared-memory segments of [`SHM_DIR`] whose processes are gone (zenoh's
/// `cleanup_orphaned_shm_segments`: a segment nobody holds locked) and names them: those
/// there before the sweep and gone after it. A segment its owner removed at the same
/// moment would be named too; on one host's runs that is rare, and the name is only
/// said.
pub fn sweep_orphaned_shared_memory() -> Vec<PathBuf> {
    let dir = Path::new(SHM_DIR);
    let before = zenoh_segments(dir);
    if before.is_empty() {
        return Vec::new();
    }
    crate::remove_orphaned_shared_memory();
    let after = zenoh_segments(dir);
    before.difference(&after).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_not_there_is_named() {
        let error = probe_shared_memory(Path::new("/nonexistent/streamwire-shm"), 1 << 20)
            .expect_err("no such folder");
        assert!(matches!(error, ShmProbeError::Unreadable { .. }), "{error}");
        assert!(error.to_string().contains("/nonexistent/streamwire-shm"));
    }

    #[test]
    fn a_pool_larger_than_the_free_space_is_refused_with_both_sizes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let error = probe_shared_memory(dir.path(), usize::MAX).expect_err("too large");
        let text = error.to_string();
        assert!(matches!(error, ShmProbeError::TooSmall { .. }), "{text}");
        assert!(text.contains("MiB free, below the"), "{text}");
    }

    #[test]
    fn a_folder_with_room_passes_and_keeps_no_test_segment() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        probe_shared_memory(dir.path(), 1 << 20).unwrap_or_else(|e| panic!("{e}"));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
