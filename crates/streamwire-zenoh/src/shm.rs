//! Zenoh's shared memory between the processes of one host, as a session sees it: the
//! options ([`SharedMemory`]), what arrived through it ([`SharedMemoryStats`], counted by
//! `ShmCounters`), the peers it cannot be used with ([`SharedMemoryGap`]) and the sweep
//! of orphaned segments. Apart because a session works without it; the probe of
//! /dev/shm and the segments' addresses are in `probe.rs` and `segments.rs`.

use std::sync::atomic::{AtomicU64, Ordering};

use streamwire_transport::FrameBytes;
use zenoh::Wait;

use crate::{ZenohTransport, segments};

/// Payloads from this size up go through shared memory (zenoh's default threshold).
pub const SHARED_MEMORY_THRESHOLD: usize = 3 * 1024;

/// Zenoh's shared memory between the processes of one host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedMemory {
    /// Offer shared memory to peers (they must offer it too) and put large payloads into
    /// the pool (on in `SharedMemory::default()`; [`ZenohOptions`](crate::ZenohOptions) starts from
    /// [`SharedMemory::off`]).
    pub enabled: bool,
    /// The pool's size in bytes (default 16 MiB, zenoh's). A payload that finds the pool
    /// full travels as bytes instead: a small pool costs speed, never frames.
    pub pool_bytes: usize,
}

impl SharedMemory {
    /// Zenoh's default pool: 16 MiB.
    pub const DEFAULT_POOL_BYTES: usize = 16 << 20;

    /// Shared memory off: every payload travels through the link.
    pub fn off() -> SharedMemory {
        SharedMemory {
            enabled: false,
            ..SharedMemory::default()
        }
    }
}

impl Default for SharedMemory {
    fn default() -> Self {
        SharedMemory {
            enabled: true,
            pool_bytes: SharedMemory::DEFAULT_POOL_BYTES,
        }
    }
}

/// What arrived through shared memory, over every subscription of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedMemoryStats {
    /// Frames with a part (a blob, or a whole frame of one part) that arrived in shared
    /// memory, not copied through the link.
    pub received_shared: u64,
    /// Other frames of [`SHARED_MEMORY_THRESHOLD`] or more, that arrived as bytes: from
    /// another host, from a peer without shared memory, or when the sender's pool was
    /// full.
    pub received_large_copied: u64,
}

/// A peer on this host that this session exchanges payloads with as bytes, not through
/// shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedMemoryGap {
    /// The peer's zenoh id.
    pub zid: String,
    /// The link to it, `tcp/127.0.0.1:A -> tcp/127.0.0.1:B`.
    pub link: String,
    /// Whether this session has shared memory on (if it does, the peer has it off).
    pub ours: bool,
}

impl std::fmt::Display for SharedMemoryGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "peer {} on this host ({}) does not use shared memory ({} has it off): large \
             payloads between them are copied through the link; enable shared memory on \
             both ends",
            self.zid,
            self.link,
            if self.ours {
                "the peer"
            } else {
                "this session"
            }
        )
    }
}

#[derive(Default)]
pub(crate) struct ShmCounters {
    pub(crate) shared: AtomicU64,
    large_copied: AtomicU64,
    pub(crate) segments: segments::Segments,
}

impl ShmCounters {
    /// Counts a received frame as shared (a large part lies in a segment) or copied;
    /// true when shared.
    pub(crate) fn count(&self, frame: &FrameBytes, shared_memory: bool) -> bool {
        let shared = shared_memory
            && frame
                .parts()
                .iter()
                .any(|part| part.len() >= SHARED_MEMORY_THRESHOLD && self.segments.contain(part));
        if shared {
            self.shared.fetch_add(1, Ordering::Relaxed);
        } else if frame.len() >= SHARED_MEMORY_THRESHOLD {
            self.large_copied.fetch_add(1, Ordering::Relaxed);
        }
        shared
    }
}

impl ZenohTransport {
    /// Whether this session offers shared memory to its peers.
    pub fn shared_memory(&self) -> bool {
        self.inner.shared_memory
    }

    /// What arrived through shared memory so far, over every subscription.
    pub fn shared_memory_stats(&self) -> SharedMemoryStats {
        SharedMemoryStats {
            received_shared: self.inner.shm.shared.load(Ordering::Relaxed),
            received_large_copied: self.inner.shm.large_copied.load(Ordering::Relaxed),
        }
    }

    /// The peers on this host (a link whose two ends share an IP address, or loopback)
    /// that this session cannot use shared memory with, because either end has it off.
    /// Shared memory is negotiated per peer when the two sessions connect, and a peer
    /// without it gets every payload as bytes, silently: this is how to notice.
    pub fn shared_memory_gaps(&self) -> Vec<SharedMemoryGap> {
        let info = self.inner.session.info();
        let without: Vec<String> = info
            .transports()
            .wait()
            .filter(|t| !t.is_shm())
            .map(|t| t.zid().to_string())
            .collect();
        let mut gaps = Vec::new();
        for link in info.links().wait() {
            let zid = link.zid().to_string();
            if without.contains(&zid)
                && same_host(&link.src().to_string(), &link.dst().to_string())
                && !gaps.iter().any(|g: &SharedMemoryGap| g.zid == zid)
            {
                gaps.push(SharedMemoryGap {
                    zid,
                    link: format!("{} -> {}", link.src(), link.dst()),
                    ours: self.inner.shared_memory,
                });
            }
        }
        gaps
    }
}

/// Removes the shared-memory segments (`/dev/shm/<id>.zenoh`) whose processes are gone: a
/// process killed by a signal leaves its segments behind (POSIX keeps a named segment
/// until it is unlinked). A coordinator calls it once its workers have ended. Cheap when
/// there is nothing to remove; does nothing outside Linux.
pub fn remove_orphaned_shared_memory() {
    zenoh::shm::cleanup_orphaned_shm_segments();
}

/// Whether a link's two locators (`tcp/127.0.0.1:7447`) are on one host: loopback, or the
/// same address at both ends.
fn same_host(src: &str, dst: &str) -> bool {
    fn ip(locator: &str) -> Option<std::net::IpAddr> {
        let address = locator.split_once('/').map_or(locator, |(_, a)| a);
        let address = address.split('#').next().unwrap_or(address);
        address.parse::<std::net::SocketAddr>().ok().map(|a| a.ip())
    }
    match (ip(src), ip(dst)) {
        (Some(a), Some(b)) => a == b || (a.is_loopback() && b.is_loopback()),
        _ => false,
    }
}
