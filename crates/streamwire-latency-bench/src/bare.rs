//! The baselines: bare zenoh put/subscribe between two processes (a FIFO handler read by
//! its own thread, and callback only), and a bare bounded channel between two threads.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use zenoh::Wait;
use zenoh::bytes::ZBytes;
use zenoh::qos::CongestionControl;

use crate::modules::{WARMUP, fill_payload, payload_bytes, seq_of};
use crate::{BenchError, Phase, PhaseKind, PhaseResult};

/// How the bare zenoh peer and the measuring side take their samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Receive {
    /// zenoh's FIFO channel handler, `recv()` on a thread of its own (as many thread
    /// hand-offs as a streamwire module's input queue).
    Fifo,
    /// The sample handled inside zenoh's callback (no hand-off at all).
    Callback,
}

/// How the measuring side of bare zenoh makes each payload, before its clock starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Payloads {
    /// A heap `Vec` put as it is: with shared memory on, zenoh copies it into its pool
    /// (3 KiB and up) inside the clock.
    Heap,
    /// Written into a loan of the session's shared-memory provider, as zenoh recommends
    /// and as the suite's pinger does: the put sends a reference. Under 3 KiB (zenoh's
    /// threshold, where the runtime's loans are heap buffers too) a heap `Vec`.
    Loan,
}

type PosixProvider = zenoh::shm::ShmProvider<zenoh::shm::PosixShmProviderBackend>;

/// The session's shared-memory provider, which zenoh makes on a thread of its own after
/// the session opened: waited for up to 10 s.
fn provider(session: &zenoh::Session) -> Result<Arc<PosixProvider>, BenchError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(provider) = session.get_shm_provider().into_option() {
            return Ok(provider);
        }
        if Instant::now() > deadline {
            return Err(BenchError::Zenoh(
                "the session's shared-memory provider was not made within 10 s".to_owned(),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Payload `seq` of `len` bytes as `payloads` says, ready to put.
fn payload(provider: Option<&PosixProvider>, len: usize, seq: u64) -> Result<ZBytes, BenchError> {
    match provider {
        Some(provider) if len >= crate::SHM_FROM => {
            let mut buf = provider
                .alloc(len)
                .with_policy::<zenoh::shm::BlockOn<zenoh::shm::GarbageCollect>>()
                .wait()
                .map_err(|e| BenchError::Zenoh(format!("a loan of {len} B: {e:?}")))?;
            fill_payload(&mut buf, seq);
            Ok(ZBytes::from(buf))
        }
        _ => Ok(ZBytes::from(payload_bytes(len, seq))),
    }
}

/// Keys of the bare baseline, under the run's prefix.
pub(crate) struct Keys {
    pub(crate) ping: String,
    pub(crate) pong: String,
    pub(crate) burst: String,
    pub(crate) ack: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Keys {
        Keys {
            ping: format!("{prefix}/bare/ping"),
            pong: format!("{prefix}/bare/pong"),
            burst: format!("{prefix}/bare/burst"),
            ack: format!("{prefix}/bare/ack"),
        }
    }
}

fn engine(e: impl std::fmt::Display) -> BenchError {
    BenchError::Zenoh(e.to_string())
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The far side: echoes `ping` on `pong`, acknowledges `burst` on `ack` with an empty
/// payload, until `stop` returns true.
pub(crate) fn serve(
    session: &zenoh::Session,
    keys: &Keys,
    receive: Receive,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(), BenchError> {
    let pong = session
        .declare_publisher(keys.pong.clone())
        .congestion_control(CongestionControl::Block)
        .wait()
        .map_err(engine)?;
    let ack = session
        .declare_publisher(keys.ack.clone())
        .congestion_control(CongestionControl::Block)
        .wait()
        .map_err(engine)?;
    match receive {
        Receive::Callback => {
            let _ping = session
                .declare_subscriber(keys.ping.clone())
                .callback(move |sample| {
                    let _ = pong.put(sample.payload().clone()).wait();
                })
                .wait()
                .map_err(engine)?;
            let _burst = session
                .declare_subscriber(keys.burst.clone())
                .callback(move |_sample| {
                    let _ = ack.put(ZBytes::new()).wait();
                })
                .wait()
                .map_err(engine)?;
            while !stop() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Receive::Fifo => {
            let ping = session
                .declare_subscriber(keys.ping.clone())
                .wait()
                .map_err(engine)?;
            let burst = session
                .declare_subscriber(keys.burst.clone())
                .wait()
                .map_err(engine)?;
            std::thread::scope(|scope| {
                let acks = std::thread::Builder::new()
                    .name("bare-acks".to_owned())
                    .spawn_scoped(scope, || {
                        while !stop() {
                            if let Ok(Some(_)) = burst.recv_timeout(Duration::from_millis(50)) {
                                let _ = ack.put(ZBytes::new()).wait();
                            }
                        }
                    });
                while !stop() {
                    if let Ok(Some(sample)) = ping.recv_timeout(Duration::from_millis(50)) {
                        let _ = pong.put(sample.payload().clone()).wait();
                    }
                }
                if let Ok(handle) = acks {
                    let _ = handle.join();
                }
            });
        }
    }
    Ok(())
}

/// The measuring side of the bare baseline: every phase against a far side [`serve`]ing
/// `keys`.
pub(crate) fn measure(
    session: &zenoh::Session,
    keys: &Keys,
    receive: Receive,
    payloads: Payloads,
    phases: &[Phase],
) -> Result<Vec<PhaseResult>, BenchError> {
    let provider = match payloads {
        Payloads::Loan => Some(provider(session)?),
        Payloads::Heap => None,
    };
    let provider = provider.as_deref();
    let ping = session
        .declare_publisher(keys.ping.clone())
        .congestion_control(CongestionControl::Block)
        .wait()
        .map_err(engine)?;
    let burst = session
        .declare_publisher(keys.burst.clone())
        .congestion_control(CongestionControl::Block)
        .wait()
        .map_err(engine)?;
    // Acks counted in the callback in both modes: throughput is the engine's, the
    // hand-off of each ack to a thread would only slow the count.
    let acks = Arc::new((Mutex::new((0_u64, None::<Instant>)), Condvar::new()));
    let counted = acks.clone();
    let _ack = session
        .declare_subscriber(keys.ack.clone())
        .callback(move |_| {
            let (lock, wake) = &*counted;
            let mut acks = lock.lock();
            acks.0 += 1;
            acks.1 = Some(Instant::now());
            wake.notify_all();
        })
        .wait()
        .map_err(engine)?;
    // The pong subscriber of this mode, declared before the first ping.
    let fifo_pong = match receive {
        Receive::Fifo => Some(
            session
                .declare_subscriber(keys.pong.clone())
                .wait()
                .map_err(engine)?,
        ),
        Receive::Callback => None,
    };
    let arrived = Arc::new((Mutex::new(None::<Instant>), Condvar::new()));
    let slot = arrived.clone();
    let _callback_pong = match receive {
        Receive::Callback => Some(
            session
                .declare_subscriber(keys.pong.clone())
                .callback(move |_| {
                    let (lock, wake) = &*slot;
                    *lock.lock() = Some(Instant::now());
                    wake.notify_all();
                })
                .wait()
                .map_err(engine)?,
        ),
        Receive::Fifo => None,
    };
    wait_matched(&ping)?;
    wait_matched(&burst)?;
    // The far side's publishers learn of our subscribers asynchronously too.
    std::thread::sleep(Duration::from_millis(200));
    let mut results = Vec::new();
    let mut seq = 0_u64;
    for phase in phases {
        match phase.kind {
            PhaseKind::Latency => {
                let started = Instant::now();
                let (samples, lost) = match &fifo_pong {
                    Some(pong) => round_trips(phase, &mut seq, provider, &mut |data, seq| {
                        let sent = Instant::now();
                        ping.put(data).wait().map_err(engine)?;
                        loop {
                            match pong.recv_timeout(Duration::from_secs(1)) {
                                Ok(Some(sample)) => {
                                    let back = sample.payload().to_bytes();
                                    if seq_of(&back).is_none_or(|s| s == seq) {
                                        return Ok(Some(nanos(sent.elapsed())));
                                    }
                                }
                                Ok(None) => return Ok(None),
                                Err(e) => return Err(engine(e)),
                            }
                        }
                    })?,
                    None => round_trips(phase, &mut seq, provider, &mut |data, _seq| {
                        let (lock, wake) = &*arrived;
                        *lock.lock() = None;
                        let sent = Instant::now();
                        ping.put(data).wait().map_err(engine)?;
                        let mut guard = lock.lock();
                        wake.wait_while_for(&mut guard, |a| a.is_none(), Duration::from_secs(1));
                        Ok(guard.map(|at| nanos(at - sent)))
                    })?,
                };
                results.push(PhaseResult::latency(
                    *phase,
                    samples,
                    started.elapsed(),
                    lost,
                ));
            }
            PhaseKind::Throughput => {
                {
                    let (lock, _) = &*acks;
                    *lock.lock() = (0, None);
                }
                let template = payload_bytes(phase.size, 0);
                let started = Instant::now();
                for _ in 0..phase.samples {
                    // A loan per message, written as the pinger writes its own; a heap
                    // payload is the template's bytes, shared (zenoh copies them into
                    // its pool, or onto the link).
                    let data = match provider {
                        Some(_) => payload(provider, phase.size, 0)?,
                        None => ZBytes::from(template.clone()),
                    };
                    burst.put(data).wait().map_err(engine)?;
                }
                let (lock, wake) = &*acks;
                let mut guard = lock.lock();
                let wanted = phase.samples as u64;
                loop {
                    if guard.0 >= wanted {
                        break;
                    }
                    let before = guard.0;
                    let timeout = wake.wait_for(&mut guard, Duration::from_secs(5));
                    if timeout.timed_out() && guard.0 == before {
                        break;
                    }
                }
                let elapsed = guard.1.map_or(Duration::ZERO, |last| last - started);
                results.push(PhaseResult::throughput(*phase, guard.0, elapsed));
            }
        }
    }
    Ok(results)
}

/// Waits until `publisher` has a subscriber (the far side joined), at most 20 s.
fn wait_matched(publisher: &zenoh::pubsub::Publisher<'_>) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if publisher
            .matching_status()
            .wait()
            .map(|s| s.matching())
            .unwrap_or(false)
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(BenchError::Peer(format!(
        "nobody subscribed to {} within 20 s",
        publisher.key_expr()
    )))
}

/// `phase.samples` round trips (after the warm-up) through `trip`, which sends a payload
/// numbered `seq` and returns its round trip in nanoseconds, or `None` when it was lost.
fn round_trips(
    phase: &Phase,
    seq: &mut u64,
    provider: Option<&PosixProvider>,
    trip: &mut dyn FnMut(ZBytes, u64) -> Result<Option<u64>, BenchError>,
) -> Result<(Vec<u64>, u64), BenchError> {
    let mut samples = Vec::with_capacity(phase.samples + WARMUP);
    let mut lost = 0_u64;
    while samples.len() < phase.samples + WARMUP {
        let data = payload(provider, phase.size, *seq)?;
        match trip(data, *seq)? {
            Some(rtt) => samples.push(rtt),
            None => lost += 1,
        }
        *seq += 1;
        if lost > 100 {
            return Err(BenchError::Peer(format!(
                "{lost} round trips of {} B lost",
                phase.size
            )));
        }
    }
    Ok((samples.split_off(WARMUP), lost))
}

/// A bare bounded channel between two threads: the same round trip (one message in
/// flight, a `Bytes` there and the same `Bytes` back), nothing else.
pub(crate) fn channel(phases: &[Phase]) -> Result<Vec<PhaseResult>, BenchError> {
    let (to_echo, echo_in) = mpsc::sync_channel::<Bytes>(16);
    let (to_main, main_in) = mpsc::sync_channel::<Bytes>(16);
    let echo = std::thread::Builder::new()
        .name("bare-channel-echo".to_owned())
        .spawn(move || {
            while let Ok(message) = echo_in.recv() {
                if to_main.send(message).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| BenchError::Peer(format!("echo thread: {e}")))?;
    let mut results = Vec::new();
    let mut seq = 0;
    for phase in phases.iter().filter(|p| p.kind == PhaseKind::Latency) {
        let started = Instant::now();
        let (samples, lost) = round_trips(phase, &mut seq, None, &mut |data, _| {
            let data = Bytes::from(data.to_bytes().into_owned());
            let sent = Instant::now();
            to_echo
                .send(data)
                .map_err(|_| BenchError::Peer("the echo thread ended".to_owned()))?;
            main_in
                .recv_timeout(Duration::from_secs(1))
                .map(|_| Some(nanos(sent.elapsed())))
                .or(Ok(None))
        })?;
        results.push(PhaseResult::latency(
            *phase,
            samples,
            started.elapsed(),
            lost,
        ));
    }
    drop(to_echo);
    let _ = echo.join();
    Ok(results)
}
