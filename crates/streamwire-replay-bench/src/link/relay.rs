//! The relay: a user-space Ethernet bridge between the two veths of the `air` namespace
//! that holds every frame for the link's delay ± jitter, in order.
//!
//! Two AF_PACKET sockets (through `pnet_datalink`: the workspace forbids unsafe code), one
//! bound to `air-r` and one to `air-l`; a socket does not see the frames it sends itself,
//! and the `air` namespace has no IP stack on them (IPv6 off, no address), so what a socket
//! reads is exactly what its far end sent. Per direction a reader thread stamps each frame
//! with its release time, `max(previous release, arrival + delay + jitter sample)` (uniform
//! jitter, never reordering: a wifi link delivers in order), and a writer thread sends it
//! out the other side at that time.
//!
//! Two things the kernel leaves to the hardware must be done here, since the frame leaves
//! through a socket, not a device: the veths offload the TCP/UDP checksum (a frame read on
//! `air-r` may carry only the pseudo-header's sum; the relay computes the full one), and
//! segmentation (the veths' `gso_max_segs` is 1, so no frame is larger than the MTU; one
//! that is fails to send and is counted in `unsent_frames`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use pnet_datalink::{Channel, DataLinkReceiver, DataLinkSender};
use serde::{Deserialize, Serialize};

use super::checksum::fix_checksum;
use crate::BenchError;

/// How often a blocked relay thread looks at the stop flag.
const TICK: Duration = Duration::from_millis(50);
/// Bytes the relay may hold per direction before it refuses frames (counted in
/// `queue_full_frames`): far more than the shaped rate times the largest delay it may
/// hold in practice (50 Mbit/s x 2 s is 12.5 MB).
const MAX_QUEUED_BYTES: u64 = 64 << 20;
/// The sockets' receive buffer: a burst the reader thread has not caught up with waits
/// here; past it the kernel drops frames (seen in [`crate::link::LinkCounters`]'s
/// `*_missed`). 8 MiB is some 3,000 full frames, 80 ms at 300 Mbit/s.
const RECEIVE_BUFFER: usize = 8 << 20;

/// What crossed the relay one way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionStats {
    /// Frames read from the socket (forwarded, unsent, refused or still held).
    pub received_frames: u64,
    /// Frames forwarded.
    pub frames: u64,
    /// Their bytes (Ethernet frames, without preamble or FCS).
    pub bytes: u64,
    /// The most bytes held at once, waiting for their release time.
    pub peak_queued_bytes: u64,
    /// Frames whose send failed (counted, not retried).
    pub unsent_frames: u64,
    /// Frames refused because the relay already held its limit (64 MiB).
    pub queue_full_frames: u64,
}

/// What crossed the relay each way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayStats {
    /// `air-r` to `air-l`.
    pub robot_to_laptop: DirectionStats,
    /// `air-l` to `air-r`.
    pub laptop_to_robot: DirectionStats,
}

#[derive(Default)]
struct Counters {
    received_frames: AtomicU64,
    frames: AtomicU64,
    bytes: AtomicU64,
    peak_queued_bytes: AtomicU64,
    unsent_frames: AtomicU64,
    queue_full_frames: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> DirectionStats {
        DirectionStats {
            received_frames: self.received_frames.load(Ordering::Relaxed),
            frames: self.frames.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            peak_queued_bytes: self.peak_queued_bytes.load(Ordering::Relaxed),
            unsent_frames: self.unsent_frames.load(Ordering::Relaxed),
            queue_full_frames: self.queue_full_frames.load(Ordering::Relaxed),
        }
    }
}

#[derive(Default)]
struct Held {
    frames: VecDeque<(Instant, Vec<u8>)>,
    bytes: u64,
    last_release: Option<Instant>,
}

/// One direction: the frames held and their counters.
#[derive(Default)]
struct Direction {
    held: Mutex<Held>,
    wake: Condvar,
    counters: Counters,
}

/// The running relay; dropping it stops its threads (within [`TICK`] or so).
pub(crate) struct Relay {
    stop: Arc<AtomicBool>,
    directions: [Arc<Direction>; 2],
    threads: Vec<JoinHandle<()>>,
}

/// The delay of one frame: uniform in `delay ± jitter`.
struct Delay {
    delay: Duration,
    jitter: Duration,
    state: u64,
}

impl Delay {
    fn sample(&mut self) -> Duration {
        if self.jitter.is_zero() {
            return self.delay;
        }
        // xorshift64*: enough for jitter, no dependency.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let unit =
            (self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        let offset = self.jitter.as_secs_f64() * (2.0 * unit - 1.0);
        Duration::from_secs_f64((self.delay.as_secs_f64() + offset).max(0.0))
    }
}

impl Relay {
    /// Opens the two sockets in namespace `air` and starts the four threads.
    pub(crate) fn start(air: &str, delay: Duration, jitter: Duration) -> Result<Relay, BenchError> {
        let [(r_tx, r_rx), (l_tx, l_rx)] =
            super::in_namespace(air, || -> Result<_, BenchError> {
                Ok([open("air-r")?, open("air-l")?])
            })??;
        let stop = Arc::new(AtomicBool::new(false));
        let directions = [
            Arc::new(Direction::default()),
            Arc::new(Direction::default()),
        ];
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9, |d| d.as_nanos() as u64)
            | 1;
        let mut threads = Vec::new();
        // robot to laptop: read air-r, write air-l; laptop to robot: read air-l, write air-r.
        for (i, (rx, tx)) in [(r_rx, l_tx), (l_rx, r_tx)].into_iter().enumerate() {
            let direction = &directions[i];
            let mut delays = Delay {
                delay,
                jitter,
                state: seed.wrapping_add(i as u64 * 0x9E37_79B9_7F4A_7C15) | 1,
            };
            let (d, s) = (Arc::clone(direction), Arc::clone(&stop));
            threads.push(spawn(format!("link-read-{i}"), move || {
                read(rx, &d, &s, &mut delays);
            })?);
            let (d, s) = (Arc::clone(direction), Arc::clone(&stop));
            threads.push(spawn(format!("link-write-{i}"), move || write(tx, &d, &s))?);
        }
        Ok(Relay {
            stop,
            directions,
            threads,
        })
    }

    pub(crate) fn stats(&self) -> RelayStats {
        RelayStats {
            robot_to_laptop: self.directions[0].counters.snapshot(),
            laptop_to_robot: self.directions[1].counters.snapshot(),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for d in &self.directions {
            d.wake.notify_all();
        }
        for thread in self.threads.drain(..) {
            // A relay thread that panicked has nothing left to stop.
            let _ = thread.join();
        }
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, BenchError> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| BenchError::Cell(format!("link: cannot start a relay thread: {e}")))
}

type Pair = (Box<dyn DataLinkSender>, Box<dyn DataLinkReceiver>);

/// A raw socket bound to `device` (of the calling thread's namespace), with a receive
/// buffer of [`RECEIVE_BUFFER`] bytes.
fn open(device: &str) -> Result<Pair, BenchError> {
    let interface = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == device)
        .ok_or_else(|| {
            BenchError::Cell(format!("link: no device {device} in the air namespace"))
        })?;
    let cannot = |e: std::io::Error| {
        BenchError::Cell(format!("link: cannot open a raw socket on {device}: {e}"))
    };
    let socket = rustix::net::socket_with(
        rustix::net::AddressFamily::PACKET,
        rustix::net::SocketType::RAW,
        rustix::net::SocketFlags::CLOEXEC,
        Some(rustix::net::eth::ALL),
    )
    .map_err(|e| cannot(e.into()))?;
    // Root may pass `net.core.rmem_max`; else the most it allows.
    if rustix::net::sockopt::set_socket_recv_buffer_size_force(&socket, RECEIVE_BUFFER).is_err() {
        rustix::net::sockopt::set_socket_recv_buffer_size(&socket, RECEIVE_BUFFER)
            .map_err(|e| cannot(e.into()))?;
    }
    // A second descriptor of the same socket, to clear the error binding it to a device
    // that is still down leaves (ENETDOWN): else the first frame sent fails with it.
    let probe = socket.try_clone().map_err(cannot)?;
    let config = pnet_datalink::Config {
        // pnet binds it to the device and owns it from here.
        socket_fd: Some(std::os::fd::IntoRawFd::into_raw_fd(socket)),
        read_buffer_size: 65_536 + 64,
        write_buffer_size: 65_536 + 64,
        read_timeout: Some(TICK),
        write_timeout: Some(TICK),
        ..pnet_datalink::Config::default()
    };
    match pnet_datalink::channel(&interface, config) {
        Ok(Channel::Ethernet(tx, rx)) => {
            // Reading SO_ERROR clears it; what it was is the expected ENETDOWN.
            let _ = rustix::net::sockopt::socket_error(&probe);
            Ok((tx, rx))
        }
        Ok(_) => Err(BenchError::Cell(format!(
            "link: no Ethernet channel on {device}"
        ))),
        Err(e) => Err(cannot(e)),
    }
}

fn read(mut rx: Box<dyn DataLinkReceiver>, d: &Direction, stop: &AtomicBool, delays: &mut Delay) {
    while !stop.load(Ordering::Relaxed) {
        let frame = match rx.next() {
            Ok(frame) => frame,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => {
                // The device went away (the link is being deleted): wait for the stop.
                std::thread::sleep(TICK);
                continue;
            }
        };
        let now = Instant::now();
        d.counters.received_frames.fetch_add(1, Ordering::Relaxed);
        let mut frame = frame.to_vec();
        fix_checksum(&mut frame);
        let len = frame.len() as u64;
        let mut held = d.held.lock();
        if held.bytes + len > MAX_QUEUED_BYTES {
            d.counters.queue_full_frames.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let due = now + delays.sample();
        let release = held.last_release.map_or(due, |last| last.max(due));
        held.last_release = Some(release);
        held.frames.push_back((release, frame));
        held.bytes += len;
        d.counters
            .peak_queued_bytes
            .fetch_max(held.bytes, Ordering::Relaxed);
        drop(held);
        d.wake.notify_one();
    }
}

fn write(mut tx: Box<dyn DataLinkSender>, d: &Direction, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let mut held = d.held.lock();
        let Some(release) = held.frames.front().map(|(release, _)| *release) else {
            d.wake.wait_for(&mut held, TICK);
            continue;
        };
        let now = Instant::now();
        if release > now {
            d.wake.wait_until(&mut held, release.min(now + TICK));
            continue;
        }
        let Some((_, frame)) = held.frames.pop_front() else {
            continue;
        };
        held.bytes -= frame.len() as u64;
        drop(held);
        match tx.send_to(&frame, None) {
            Some(Ok(())) => {
                d.counters.frames.fetch_add(1, Ordering::Relaxed);
                d.counters
                    .bytes
                    .fetch_add(frame.len() as u64, Ordering::Relaxed);
            }
            _ => {
                d.counters.unsent_frames.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_uniform_within_the_delay_plus_or_minus_jitter() {
        let mut delays = Delay {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(10),
            state: 12345,
        };
        let samples: Vec<f64> = (0..10_000)
            .map(|_| delays.sample().as_secs_f64() * 1e3)
            .collect();
        assert!(samples.iter().all(|&s| (10.0..=30.0).contains(&s)));
        let below = samples.iter().filter(|&&s| s < 15.0).count();
        let above = samples.iter().filter(|&&s| s > 25.0).count();
        assert!((2_000..3_000).contains(&below), "{below}");
        assert!((2_000..3_000).contains(&above), "{above}");
    }
}
