//! The host sampler: once a second, the CPU and RSS of a run's process trees (the
//! benchmarks' shared reads of /proc, `streamwire_benchkit::procfs`), the host's CPU
//! (sysinfo), the loopback byte counter and, across a link, the link's device's
//! (`/proc/self/net/dev`, which is the calling process's network namespace, so a cell's
//! sampler sees only its own interfaces; sysinfo reads /sys/class/net, which shows the
//! namespace that mounted /sys, not the cell's).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use streamwire_benchkit::procfs;
use sysinfo::{CpuRefreshKind, System};

/// One sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the run was started.
    pub t_s: f64,
    /// CPU of the whole process tree since the previous sample, percent of one core
    /// (200 = two cores busy).
    pub tree_cpu_pct: f64,
    /// Sum of the tree's resident set sizes, MB (pages shared between processes, such
    /// as a shared-memory pool, count once per process that maps them).
    pub tree_rss_mb: f64,
    /// Processes in the tree.
    pub processes: usize,
    /// The whole machine's CPU use, percent of all its cores.
    pub host_cpu_pct: f64,
    /// Loopback bytes received since the sampler started (`lo`'s rx counter).
    pub lo_bytes: u64,
    /// Across a link: bytes the robot's end sent (to the laptop) since the sampler
    /// started.
    #[serde(default)]
    pub link_tx_bytes: u64,
    /// ... and received (from the laptop).
    #[serde(default)]
    pub link_rx_bytes: u64,
}

/// Samples process trees, the loopback interface and a link's device.
pub struct Sampler {
    system: System,
    lo_start: u64,
    /// The link's device in this namespace, and its (tx, rx) bytes at the start.
    link: Option<(String, (u64, u64))>,
    started: Instant,
    /// Accumulated CPU milliseconds last seen per process of the tree.
    cpu_ms: HashMap<u32, u64>,
    last: Instant,
}

/// Why the sampler could not start.
#[derive(Debug, thiserror::Error)]
#[error("the host sampler cannot read this system: {0}")]
pub struct SamplerError(String);

impl Sampler {
    /// A sampler whose clock and counters start now; `link_device` is a link's device
    /// in this namespace to count too.
    pub fn new(link_device: Option<String>) -> Result<Sampler, SamplerError> {
        let mut system = System::new().map_err(|e| SamplerError(e.to_string()))?;
        system.refresh_cpu_specifics(CpuRefreshKind::nothing().with_usage());
        let mut sampler = Sampler {
            system,
            lo_start: 0,
            link: link_device.map(|d| (d, (0, 0))),
            started: Instant::now(),
            cpu_ms: HashMap::new(),
            last: Instant::now(),
        };
        sampler.restart();
        Ok(sampler)
    }

    fn lo_total(&mut self) -> u64 {
        std::fs::read_to_string("/proc/self/net/dev")
            .ok()
            .and_then(|text| device_bytes(&text, "lo"))
            .map_or(0, |(_, rx)| rx)
    }

    /// The link's device's (tx, rx) bytes now ((0, 0) without one).
    fn link_total(&self) -> (u64, u64) {
        self.link
            .as_ref()
            .and_then(|(device, _)| {
                let text = std::fs::read_to_string("/proc/self/net/dev").ok()?;
                device_bytes(&text, device)
            })
            .unwrap_or((0, 0))
    }

    /// Restarts the clock and the counters (after the idle baseline).
    pub fn restart(&mut self) {
        self.started = Instant::now();
        self.lo_start = self.lo_total();
        let link_start = self.link_total();
        if let Some((_, start)) = &mut self.link {
            *start = link_start;
        }
        self.cpu_ms.clear();
        self.last = Instant::now();
    }

    /// A sample of the trees rooted at `roots` (none: only the host figures).
    pub fn sample(&mut self, roots: &[u32]) -> Sample {
        self.system
            .refresh_cpu_specifics(CpuRefreshKind::nothing().with_usage());
        let now = Instant::now();
        let interval_ms = now.duration_since(self.last).as_secs_f64() * 1e3;
        self.last = now;
        let proc = Path::new("/proc");
        let tree: BTreeSet<u32> = roots.iter().flat_map(|r| procfs::tree(proc, *r)).collect();
        let mut cpu_delta_ms = 0u64;
        let mut rss = 0u64;
        let mut seen = HashMap::new();
        for pid in &tree {
            if let Some(usage) = procfs::usage(proc, *pid) {
                // A process first seen now counts from its start (it is younger than a
                // second, or the tree's root at the first sample).
                cpu_delta_ms += usage
                    .cpu_ms
                    .saturating_sub(self.cpu_ms.get(pid).copied().unwrap_or(0));
                seen.insert(*pid, usage.cpu_ms);
                rss += usage.rss_kb * 1024;
            }
        }
        self.cpu_ms = seen;
        let lo = self.lo_total().saturating_sub(self.lo_start);
        let (tx, rx) = self.link_total();
        let (tx_start, rx_start) = self.link.as_ref().map_or((0, 0), |(_, start)| *start);
        Sample {
            t_s: now.duration_since(self.started).as_secs_f64(),
            tree_cpu_pct: if interval_ms > 0.0 {
                cpu_delta_ms as f64 / interval_ms * 100.0
            } else {
                0.0
            },
            tree_rss_mb: rss as f64 / 1e6,
            processes: tree.len(),
            host_cpu_pct: f64::from(self.system.global_cpu_usage()),
            lo_bytes: lo,
            link_tx_bytes: tx.saturating_sub(tx_start),
            link_rx_bytes: rx.saturating_sub(rx_start),
        }
    }
}

/// A device's (transmitted, received) bytes in the text of `/proc/net/dev` (received
/// is the first counter, transmitted the ninth).
fn device_bytes(dev: &str, device: &str) -> Option<(u64, u64)> {
    dev.lines().find_map(|line| {
        let (name, counters) = line.split_once(':')?;
        if name.trim() != device {
            return None;
        }
        let counters: Vec<&str> = counters.split_whitespace().collect();
        Some((
            counters.get(8)?.parse().ok()?,
            counters.first()?.parse().ok()?,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_counter_is_read_from_proc_net_dev() {
        let dev = "Inter-|   Receive                            |  Transmit\n \
                   face |bytes    packets errs drop fifo frame compressed multicast|bytes\n    \
                   lo: 5132907   4521    0    0    0     0          0         0  5132907\n  \
                   eth0: 99 1 0 0 0 0 0 0 7\n";
        assert_eq!(device_bytes(dev, "lo"), Some((5_132_907, 5_132_907)));
        assert_eq!(device_bytes(dev, "eth0"), Some((7, 99)));
        assert_eq!(device_bytes("nothing", "lo"), None);
    }

    #[test]
    fn a_busy_child_shows_in_its_tree_and_an_idle_one_barely() {
        let mut sampler = Sampler::new(None).expect("sampler");
        // A shell spinning in a child of a child: the tree must reach the grandchild.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done' & wait",
            ])
            .spawn()
            .expect("sh");
        let first = sampler.sample(&[child.id()]);
        std::thread::sleep(std::time::Duration::from_millis(700));
        let busy = sampler.sample(&[child.id()]);
        let _ = child.kill();
        let _ = child.wait();
        assert!(first.processes >= 1, "{first:?}");
        assert!(
            busy.processes >= 2,
            "the grandchild is in the tree: {busy:?}"
        );
        assert!(
            busy.tree_cpu_pct > 5.0,
            "a spinning shell is busy: {busy:?}"
        );
        assert!(busy.tree_rss_mb > 0.0, "{busy:?}");
        let gone = sampler.sample(&[child.id()]);
        assert_eq!(gone.processes, 0, "{gone:?}");
    }
}
