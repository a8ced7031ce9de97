//! What /proc says about each process of a run: its tree (the coordinator and every
//! descendant), and per process its CPU time, its private memory (PSS and USS from
//! `smaps_rollup`), its RSS, open fds, threads, and the /dev/shm files it maps; or only
//! its CPU time and RSS ([`usage`], the cheap reads of a sampler that runs every second).
//!
//! RSS counts a shared-memory pool in every process that maps it, so private memory is
//! what shows a leak: PSS (each shared page divided among the processes sharing it) and USS
//! (pages no other process maps), both from one read of `/proc/PID/smaps_rollup`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One process at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessSample {
    /// Its pid.
    pub pid: u32,
    /// What it is in the run: `coordinator`, a worker's process name (`robot/sensors`, from
    /// its `--process`), or its command's name.
    pub role: String,
    /// Proportional set size, kB.
    pub pss_kb: u64,
    /// Unique set size (private clean + private dirty), kB.
    pub uss_kb: u64,
    /// Resident set size, kB.
    pub rss_kb: u64,
    /// CPU time, user and system, since it started, ms.
    pub cpu_ms: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
    /// The /dev/shm files it maps.
    pub shm_files: BTreeSet<PathBuf>,
}

/// `root` and every process descending from it, parents before children, as pids. Empty
/// when `root` is gone.
pub fn tree(proc: &Path, root: u32) -> Vec<u32> {
    let parents = parents(proc);
    if !proc.join(root.to_string()).is_dir() {
        return Vec::new();
    }
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(&pid) = tree.get(i) {
        let mut children: Vec<u32> = parents
            .iter()
            .filter(|&(_, parent)| *parent == pid)
            .map(|(child, _)| *child)
            .collect();
        children.sort_unstable();
        tree.extend(children);
        i += 1;
    }
    tree
}

/// Every process's parent, from `/proc/PID/stat`.
fn parents(proc: &Path) -> BTreeMap<u32, u32> {
    let Ok(dir) = std::fs::read_dir(proc) else {
        return BTreeMap::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
            Some((pid, parent_in_stat(&stat)?))
        })
        .collect()
}

/// The parent pid in a `stat` line: the second field after the command, which is in
/// parentheses and may itself hold spaces and parentheses.
fn parent_in_stat(stat: &str) -> Option<u32> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The unit of /proc's CPU times (`USER_HZ`): 100 a second in Linux's ABI on every
/// architecture.
const TICKS_PER_S: u64 = 100;

/// The CPU time (user and system) in a `stat` line, ms: its 14th and 15th fields, the
/// 12th and 13th after the command.
fn cpu_ms_in_stat(stat: &str) -> Option<u64> {
    let (_, after) = stat.rsplit_once(')')?;
    let mut fields = after.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) * 1000 / TICKS_PER_S)
}

/// A process's CPU time and RSS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time, user and system, since it started, ms.
    pub cpu_ms: u64,
    /// Resident set size, kB.
    pub rss_kb: u64,
}

/// Process `pid`'s CPU time and RSS now (`stat` and `status`), or `None` when it is gone.
pub fn usage(proc: &Path, pid: u32) -> Option<Usage> {
    let dir = proc.join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    Some(Usage {
        cpu_ms: cpu_ms_in_stat(&stat)?,
        rss_kb: kb(&status, "VmRSS:"),
    })
}

/// Process `pid` now, or `None` when it is gone (it ended between the listing and the
/// reads).
pub fn sample(proc: &Path, pid: u32) -> Option<ProcessSample> {
    let dir = proc.join(pid.to_string());
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    // A file that cannot be read means the process ended between the reads: no sample.
    let rollup = std::fs::read_to_string(dir.join("smaps_rollup")).ok()?;
    let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
    let fds = std::fs::read_dir(dir.join("fd")).map_or(0, |d| d.count() as u64);
    let maps = std::fs::read_to_string(dir.join("maps")).ok()?;
    let cpu_ms = std::fs::read_to_string(dir.join("stat"))
        .ok()
        .and_then(|stat| cpu_ms_in_stat(&stat))?;
    Some(ProcessSample {
        pid,
        role: role(&cmdline, field_kb(&status, "Name:").as_deref()),
        pss_kb: kb(&rollup, "Pss:"),
        uss_kb: kb(&rollup, "Private_Clean:") + kb(&rollup, "Private_Dirty:"),
        rss_kb: kb(&status, "VmRSS:"),
        cpu_ms,
        fds,
        threads: kb(&status, "Threads:"),
        shm_files: shm_files(&maps),
    })
}

/// The number after `key` on its line (`Pss:   229 kB` gives 229), 0 when absent (a
/// kernel thread has no memory lines).
fn kb(text: &str, key: &str) -> u64 {
    field_kb(text, key)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn field_kb(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .map(|v| v.trim().to_owned())
}

/// What a process is in the run, from its command line: a worker's `--process`, the
/// coordinator's `run`, else its name.
fn role(cmdline: &[u8], name: Option<&str>) -> String {
    let args: Vec<&str> = cmdline
        .split(|b| *b == 0)
        .filter_map(|a| std::str::from_utf8(a).ok())
        .collect();
    if let Some(i) = args.iter().position(|a| *a == "--process")
        && let Some(process) = args.get(i + 1)
    {
        return (*process).to_owned();
    }
    if args.get(1) == Some(&"run") {
        return "coordinator".to_owned();
    }
    name.unwrap_or("?").to_owned()
}

/// The /dev/shm files a `maps` text maps, once each.
fn shm_files(maps: &str) -> BTreeSet<PathBuf> {
    maps.lines()
        .filter_map(|line| {
            let path = line.split_whitespace().nth(5)?;
            path.starts_with("/dev/shm/").then(|| PathBuf::from(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_after_a_command_holding_spaces_and_parentheses() {
        assert_eq!(parent_in_stat("42 (a (b) c) S 7 42 42 0"), Some(7));
        assert_eq!(parent_in_stat("garbage"), None);
    }

    #[test]
    fn cpu_time_is_user_plus_system_in_ms() {
        let stat = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3";
        assert_eq!(cpu_ms_in_stat(stat), Some(3000));
        assert_eq!(cpu_ms_in_stat("42 (x) S 1"), None);
    }

    #[test]
    fn roles_come_from_the_command_line() {
        let worker = b"/bin/streamwire\0worker\0--supervised\0--process\0robot/sensors\0demo\0";
        assert_eq!(role(worker, Some("streamwire")), "robot/sensors");
        assert_eq!(role(b"streamwire\0run\0demo-split\0", None), "coordinator");
        assert_eq!(role(b"", Some("sh")), "sh");
    }

    #[test]
    fn shared_memory_files_are_read_from_the_maps() {
        let maps = "7f00-7f10 rw-s 00000000 00:1a 12 /dev/shm/123.zenoh\n\
                    7f10-7f20 rw-s 00001000 00:1a 12 /dev/shm/123.zenoh\n\
                    7f20-7f30 r-xp 00000000 08:01 99 /usr/lib/libc.so.6\n\
                    7f30-7f40 rw-p 00000000 00:00 0 \n";
        let files = shm_files(maps);
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            [PathBuf::from("/dev/shm/123.zenoh")]
        );
    }

    #[test]
    fn this_process_and_a_child_are_sampled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let me = std::process::id();
        let proc = Path::new("/proc");
        let tree = tree(proc, me);
        let found = tree.contains(&child.id());
        let sampled = sample(proc, me).expect("this process");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree.first(), Some(&me));
        assert!(found, "the child is in the tree: {tree:?}");
        assert!(sampled.rss_kb > 0 && sampled.pss_kb > 0 && sampled.uss_kb > 0);
        assert!(sampled.fds >= 3 && sampled.threads >= 1, "{sampled:?}");
        let used = usage(proc, me).expect("this process");
        assert!(used.rss_kb > 0, "{used:?}");
        assert!(tree_of_nothing().is_empty());
    }

    fn tree_of_nothing() -> Vec<u32> {
        tree(Path::new("/proc"), u32::MAX)
    }
}
