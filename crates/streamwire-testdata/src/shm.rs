//! Zenoh's shared-memory segments in `/dev/shm`: tests that start processes with shared
//! memory compare the files before and after, so that none is left behind.
//!
//! The machine is shared: another test binary (or another checkout's test run) may make
//! segments of its own while a test runs. [`left_since`] therefore counts only the new
//! files that no process outside this test's own process tree holds mapped, and only those
//! still there a moment later (another run's segment whose process just ended is removed
//! by that run; a file this test left stays).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a file must stay left over to count: another run's cleanup happens within it.
const SETTLE: Duration = Duration::from_secs(2);

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

/// The zenoh files made since `before` that this test left: not mapped by a process
/// outside this process and its descendants, now and again after `SETTLE` (2 s).
pub fn left_since(before: &BTreeSet<String>) -> Vec<String> {
    let first = left_once(before);
    if first.is_empty() {
        return first;
    }
    std::thread::sleep(SETTLE);
    let second: BTreeSet<String> = left_once(before).into_iter().collect();
    first.into_iter().filter(|f| second.contains(f)).collect()
}

fn left_once(before: &BTreeSet<String>) -> Vec<String> {
    let others = mapped_by_other_processes();
    zenoh_files()
        .difference(before)
        .filter(|name| !others.contains(*name))
        .cloned()
        .collect()
}

/// The zenoh files mapped by live processes that are neither this one nor its descendants.
fn mapped_by_other_processes() -> BTreeSet<String> {
    let parents = parents();
    let ours = |mut pid: u32| loop {
        if pid == std::process::id() {
            return true;
        }
        match parents.get(&pid) {
            Some(&parent) if parent > 1 && parent != pid => pid = parent,
            _ => return false,
        }
    };
    parents
        .keys()
        .filter(|pid| !ours(**pid))
        .flat_map(|pid| mapped_zenoh_files(*pid))
        .collect()
}

/// Every readable process's parent, from `/proc/<pid>/stat`.
fn parents() -> BTreeMap<u32, u32> {
    let Ok(proc) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    proc.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
            let after = stat.rsplit_once(')')?.1;
            let parent = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, parent))
        })
        .collect()
}

/// The names of the zenoh files `/proc/<pid>/maps` shows (none when unreadable).
fn mapped_zenoh_files(pid: u32) -> Vec<String> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5)?.strip_prefix("/dev/shm/"))
        .filter(|name| name.ends_with(".zenoh"))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_nobody_maps_is_left_and_a_file_from_before_is_not() {
        if !std::path::Path::new("/dev/shm").is_dir() {
            return;
        }
        assert!(parents().contains_key(&std::process::id()));
        let before = zenoh_files();
        let name = format!("streamwire-testdata-{}.zenoh", std::process::id());
        let path = std::path::Path::new("/dev/shm").join(&name);
        std::fs::write(&path, b"").unwrap();
        let left = left_since(&before);
        let from_before = left_since(&zenoh_files());
        std::fs::remove_file(&path).unwrap();
        assert!(left.contains(&name), "{left:?}");
        assert!(!from_before.contains(&name), "{from_before:?}");
    }
}
