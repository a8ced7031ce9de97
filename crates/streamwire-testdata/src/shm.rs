//! Zenoh's shared-memory segments in `/dev/shm`: tests that start processes with shared
//! memory compare the files before and after, so that none is left behind.

use std::collections::BTreeSet;

/// The names of zenoh's shared-memory files in /dev/shm (`<id>.zenoh`); none where there
/// is no /dev/shm.
pub fn zenoh_files() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".zenoh"))
                .collect()
        })
        // infallible: without /dev/shm there is no segment a test could leave there
        .unwrap_or_default()
}
