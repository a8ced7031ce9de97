//! Which received bytes lie in zenoh's shared memory.
//!
//! Zenoh tells whether a payload is shared memory only for a payload of one slice
//! (`ZBytes::as_shm`); a version 2 frame is several (its head, then each blob), and only
//! its blobs go through shared memory. So the question is asked of the bytes themselves:
//! whether they lie in one of zenoh's segments (`/dev/shm/<id>.zenoh`) as this process
//! maps them, from `/proc/self/maps`.

use std::ops::Range;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

/// How often the mappings are read again when bytes lie in no known segment: a segment
/// is mapped once (when its first buffer arrives) and stays, so a miss is nearly always
/// bytes that are not shared, and reading the mappings for each would cost more than the
/// frame.
const REREAD_EVERY: Duration = Duration::from_millis(50);

/// The address ranges of zenoh's segments mapped in this process, as last read.
#[derive(Default)]
pub(crate) struct Segments {
    ranges: RwLock<Vec<Range<usize>>>,
    last_read: Mutex<Option<Instant>>,
}

impl Segments {
    /// Whether `bytes` lie in a segment: from the ranges known, read again (at most every
    /// [`REREAD_EVERY`]) when they lie in none of them. Bytes of a segment mapped since the
    /// last reading, received within that interval, are judged not shared.
    pub(crate) fn contain(&self, bytes: &[u8]) -> bool {
        let range = address_range(bytes);
        if self.known(&range) {
            return true;
        }
        {
            let mut last = self.last_read.lock();
            if last.is_some_and(|at| at.elapsed() < REREAD_EVERY) {
                return false;
            }
            *last = Some(Instant::now());
        }
        *self.ranges.write() = mapped_segments();
        self.known(&range)
    }

    fn known(&self, range: &Range<usize>) -> bool {
        self.ranges
            .read()
            .iter()
            .any(|segment| segment.start <= range.start && range.end <= segment.end)
    }
}

/// Whether `bytes` lie inside one of zenoh's shared-memory segments mapped in this
/// process now (`/proc/self/maps` read for this call): the proof that a received message's
/// pixels were read where zenoh put them, not copied.
pub fn in_shared_memory(bytes: &[u8]) -> bool {
    let range = address_range(bytes);
    mapped_segments()
        .iter()
        .any(|segment| segment.start <= range.start && range.end <= segment.end)
}

fn address_range(bytes: &[u8]) -> Range<usize> {
    let start = bytes.as_ptr() as usize;
    start..start + bytes.len()
}

/// The address ranges of `/dev/shm/*.zenoh` in `/proc/self/maps` (none where there is no
/// such file: another OS, or a sandbox without /proc).
fn mapped_segments() -> Vec<Range<usize>> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    maps.lines().filter_map(segment_range).collect()
}

/// `7f00-7f80 rw-s 00000000 00:1a 42 /dev/shm/123.zenoh` → `0x7f00..0x7f80`.
fn segment_range(line: &str) -> Option<Range<usize>> {
    let mut fields = line.split_whitespace();
    let addresses = fields.next()?;
    let path = fields.nth(4)?;
    if !(path.starts_with("/dev/shm/") && path.ends_with(".zenoh")) {
        return None;
    }
    let (start, end) = addresses.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_of_a_zenoh_segment_gives_its_range_and_others_none() {
        assert_eq!(
            segment_range("7f00-7f80 rw-s 00000000 00:1a 42 /dev/shm/123.zenoh"),
            Some(0x7f00..0x7f80)
        );
        assert_eq!(
            segment_range("7f00-7f80 rw-s 00000000 00:1a 42 /dev/shm/123.zenoh (deleted)"),
            Some(0x7f00..0x7f80)
        );
        assert_eq!(
            segment_range("7f00-7f80 rw-p 00000000 00:00 0 [heap]"),
            None
        );
        assert_eq!(segment_range("7f00-7f80 rw-p 00000000 00:00 0"), None);
        assert_eq!(
            segment_range("7f00-7f80 rw-s 00000000 00:1a 42 /dev/shm/other"),
            None
        );
    }

    #[test]
    fn heap_bytes_are_not_in_shared_memory() {
        let bytes = vec![1u8; 4096];
        assert!(!in_shared_memory(&bytes));
        assert!(!Segments::default().contain(&bytes));
    }
}
