//! The suite's modules: a pinger that keeps one message in flight and times its return,
//! an echo, a pass-through for the chain, and the ack counter of the throughput phase.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::{Context, In, Node, NodeResult, Out, Trigger};
use streamwire_graph::{Blueprint, Placement};
use streamwire_macros::{Message, Module};

use crate::{Phase, PhaseKind, PhaseResult};

/// The process of the pinger (and of every even hop of the chain).
pub(crate) const HOME: &str = "bench";
/// The process of the echo (and of every odd hop of the chain).
pub(crate) const PEER: &str = "peer";

/// A round-trip without an answer for this long is lost (a frame put before the far side
/// subscribed): it is counted and sent again.
const LOST_AFTER: Duration = Duration::from_secs(1);
/// A throughput phase whose acks stop coming for this long ends with what arrived.
const THROUGHPUT_STALL: Duration = Duration::from_secs(5);
/// Pings whose round trip is not recorded at the start of each size (caches, first
/// allocations of a size, the matching of a new link).
pub(crate) const WARMUP: usize = 20;

/// The benchmark's message: `len` bytes whose first 8 carry the ping's sequence number
/// (when there are 8), checked on return.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire_latency_bench/Payload", crate = streamwire_core)]
pub(crate) struct Payload {
    /// The pinger's number of this message.
    pub(crate) seq: u64,
    /// Part of a throughput burst: the echo acknowledges it on `ack` instead of echoing.
    pub(crate) burst: bool,
    /// The payload: a blob from 3 KiB up, as a camera frame's pixels are.
    #[serde(with = "streamwire_core::blob")]
    pub(crate) data: Bytes,
}

/// A tick that wakes the pinger (its first send, and a lost round trip).
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "streamwire_latency_bench/Kick", crate = streamwire_core)]
pub(crate) struct Kick(pub(crate) u8);

/// What the pinger is told to do and where it leaves its results; shared with the driver.
#[derive(Default)]
pub(crate) struct Job {
    pub(crate) phases: Vec<Phase>,
    pub(crate) results: Mutex<Vec<PhaseResult>>,
    pub(crate) done: AtomicBool,
    /// Acks of the current burst, and when the last one arrived.
    pub(crate) acks: AtomicU64,
    pub(crate) last_ack: Mutex<Option<Instant>>,
}

/// `len` bytes carrying `seq` in the first 8 (when they fit).
pub(crate) fn payload_bytes(len: usize, seq: u64) -> Vec<u8> {
    let mut data = vec![0; len];
    fill_payload(&mut data, seq);
    data
}

/// Writes payload `seq` into `data`: its sequence number in the first 8 bytes (if it has
/// 8), 0x5a in every other byte.
pub(crate) fn fill_payload(data: &mut [u8], seq: u64) {
    data.fill(0x5a);
    if let Some(head) = data.get_mut(..8) {
        head.copy_from_slice(&seq.to_le_bytes());
    }
}

/// The sequence number in `data`'s first 8 bytes, if it has 8.
pub(crate) fn seq_of(data: &[u8]) -> Option<u64> {
    let head: [u8; 8] = data.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(head))
}

#[derive(Default)]
pub(crate) struct PingState {
    phase: usize,
    seq: u64,
    /// The ping in flight and when it left.
    in_flight: Option<(u64, Instant)>,
    samples: Vec<u64>,
    lost: u64,
    phase_started: Option<Instant>,
    burst_started: Option<Instant>,
    /// This phase's burst got no ack at all once and was sent again.
    burst_repeated: bool,
}

/// Sends one ping at a time and records the round trip of its echo.
#[derive(Module)]
#[module(crate = streamwire_core, internal)]
pub(crate) struct Pinger {
    #[port(keep_all)]
    pub(crate) ping: Out<Payload>,
    #[port(keep_all)]
    pub(crate) pong: In<Payload>,
    pub(crate) kick: In<Kick>,
    #[state]
    pub(crate) job: Arc<Job>,
    #[state]
    pub(crate) state: PingState,
}

impl Pinger {
    fn new(job: Arc<Job>) -> Pinger {
        Pinger {
            ping: Out::new(),
            pong: In::new(),
            kick: In::new(),
            job,
            state: PingState::default(),
        }
    }

    fn send(&mut self, len: usize, burst: bool) -> NodeResult {
        let seq = self.state.seq;
        self.state.seq += 1;
        // Built before the clock starts: the payload's allocation is not the transport's.
        // Written into a buffer lent by the output (shared memory where the ping leaves
        // the process through it, sent by reference), as a camera writes its frames.
        let mut loan = self.ping.loan(len)?;
        fill_payload(&mut loan, seq);
        let data = loan.freeze();
        let message = Payload { seq, burst, data };
        let sent = Instant::now();
        self.ping.publish(message)?;
        if !burst {
            self.state.in_flight = Some((seq, sent));
        }
        Ok(())
    }

    fn finish_phase(&mut self, result: PhaseResult) {
        self.job.results.lock().push(result);
        self.state.phase += 1;
        self.state.samples.clear();
        self.state.lost = 0;
        self.state.in_flight = None;
        self.state.phase_started = None;
        self.state.burst_started = None;
        self.state.burst_repeated = false;
    }

    fn advance(&mut self, cx: &mut Context<'_>) -> NodeResult {
        loop {
            let Some(phase) = self.job.phases.get(self.state.phase).copied() else {
                self.job.done.store(true, Ordering::SeqCst);
                cx.finish();
                return Ok(());
            };
            let started = *self.state.phase_started.get_or_insert_with(Instant::now);
            match phase.kind {
                PhaseKind::Latency => {
                    if let Some((_, sent)) = self.state.in_flight {
                        if sent.elapsed() < LOST_AFTER {
                            return Ok(());
                        }
                        self.state.lost += 1;
                        self.state.in_flight = None;
                    }
                    if self.state.samples.len() >= phase.samples + WARMUP {
                        let samples = self.state.samples.split_off(WARMUP);
                        let elapsed = started.elapsed();
                        self.finish_phase(PhaseResult::latency(
                            phase,
                            samples,
                            elapsed,
                            self.state.lost,
                        ));
                        continue;
                    }
                    return self.send(phase.size, false);
                }
                PhaseKind::Throughput => {
                    let Some(burst_started) = self.state.burst_started else {
                        self.job.acks.store(0, Ordering::SeqCst);
                        *self.job.last_ack.lock() = None;
                        self.state.burst_started = Some(Instant::now());
                        for _ in 0..phase.samples {
                            if cx.is_stopping() {
                                return Ok(());
                            }
                            self.send(phase.size, true)?;
                        }
                        return Ok(());
                    };
                    let acks = self.job.acks.load(Ordering::SeqCst);
                    let last = *self.job.last_ack.lock();
                    let stalled = last.unwrap_or(burst_started).elapsed() > THROUGHPUT_STALL;
                    if acks == 0 && stalled && !self.state.burst_repeated {
                        // Not one ack: the whole burst was lost, as when a TLS link is
                        // set up again under it. Sent once more, and said; a second
                        // loss is the result.
                        tracing::warn!(
                            size = phase.size,
                            "no ack of the throughput burst within {THROUGHPUT_STALL:?}: sent once more"
                        );
                        self.state.burst_repeated = true;
                        self.state.burst_started = None;
                        continue;
                    }
                    if acks >= phase.samples as u64 || stalled {
                        let elapsed = last.map_or(Duration::ZERO, |l| l - burst_started);
                        self.finish_phase(PhaseResult::throughput(phase, acks, elapsed));
                        continue;
                    }
                    return Ok(());
                }
            }
        }
    }
}

impl Node for Pinger {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(pong) = self.pong.recv()? {
            let arrived = Instant::now();
            if let Some((seq, sent)) = self.state.in_flight
                && pong.message.seq == seq
            {
                // The first 8 bytes came back as they left.
                if let Some(carried) = seq_of(&pong.message.data)
                    && carried != seq
                {
                    return Err(format!("ping {seq} came back carrying {carried}").into());
                }
                let nanos = u64::try_from((arrived - sent).as_nanos()).unwrap_or(u64::MAX);
                self.state.samples.push(nanos);
                self.state.in_flight = None;
            }
        }
        while self.kick.recv()?.is_some() {}
        self.advance(cx)
    }
}

/// Echoes each ping on `pong`, or acknowledges a burst's on `ack` (an empty payload).
#[derive(Module)]
#[module(crate = streamwire_core, internal)]
pub(crate) struct Echo {
    #[port(keep_all)]
    pub(crate) ping: In<Payload>,
    #[port(keep_all)]
    pub(crate) pong: Out<Payload>,
    #[port(keep_all)]
    pub(crate) ack: Out<Payload>,
}

impl Node for Echo {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(ping) = self.ping.recv()? {
            if ping.message.burst {
                self.ack.publish(Payload {
                    seq: ping.message.seq,
                    burst: true,
                    data: Bytes::new(),
                })?;
            } else {
                // The same bytes back: a clone of the `Bytes`, no copy.
                self.pong.publish(ping.message)?;
            }
        }
        Ok(())
    }
}

/// Counts a burst's acks for the pinger.
#[derive(Module)]
#[module(crate = streamwire_core, internal)]
pub(crate) struct AckCounter {
    #[port(keep_all)]
    pub(crate) ack: In<Payload>,
    #[state]
    pub(crate) job: Arc<Job>,
}

impl Node for AckCounter {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.ack.recv()?.is_some() {
            self.job.acks.fetch_add(1, Ordering::SeqCst);
            *self.job.last_ack.lock() = Some(Instant::now());
        }
        Ok(())
    }
}

/// Wakes the pinger every 20 ms (its first send; a lost round trip; a burst's end).
#[derive(Module)]
#[module(crate = streamwire_core, internal)]
pub(crate) struct Kicker {
    pub(crate) kick: Out<Kick>,
}

impl Node for Kicker {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(20))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.kick.publish(Kick(0))?;
        Ok(())
    }
}

/// A hop of the chain: each message in, the same message out.
#[derive(Module)]
#[module(crate = streamwire_core, internal)]
pub(crate) struct Pass {
    #[port(keep_all)]
    pub(crate) input: In<Payload>,
    #[port(keep_all)]
    pub(crate) output: Out<Payload>,
}

impl Node for Pass {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(message) = self.input.recv()? {
            self.output.publish(message.message)?;
        }
        Ok(())
    }
}

/// Where the blueprint's instances run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One process.
    Together,
    /// The echo (or the odd hops) in process [`PEER`].
    Apart,
}

/// Pinger and echo (with the throughput phase's ack counter), or pinger and a chain of
/// `hops` pass-throughs back to it.
pub(crate) fn blueprint(job: Arc<Job>, layout: Layout, hops: usize) -> Blueprint {
    let mut bp = Blueprint::new();
    let home = Placement::process(HOME);
    let peer = if layout == Layout::Apart {
        Placement::process(PEER)
    } else {
        home.clone()
    };
    let pinger = bp.add("pinger", Pinger::new(job.clone()));
    bp.place(&pinger, home.clone());
    let kicker = bp.add("kicker", Kicker { kick: Out::new() });
    bp.place(&kicker, home.clone());
    if hops == 0 {
        let echo = bp.add(
            "echo",
            Echo {
                ping: In::new(),
                pong: Out::new(),
                ack: Out::new(),
            },
        );
        bp.place(&echo, peer);
        let counter = bp.add(
            "acks",
            AckCounter {
                ack: In::new(),
                job,
            },
        );
        bp.place(&counter, home);
    } else {
        bp.remap(pinger.ports().ping, "hop0");
        for hop in 1..=hops {
            let pass = bp.add(
                &format!("pass{hop}"),
                Pass {
                    input: In::new(),
                    output: Out::new(),
                },
            );
            let ports = pass.ports();
            bp.remap(ports.input, &format!("hop{}", hop - 1));
            let out = if hop == hops {
                "pong".to_owned()
            } else {
                format!("hop{hop}")
            };
            bp.remap(ports.output, &out);
            bp.place(
                &pass,
                if hop % 2 == 1 {
                    peer.clone()
                } else {
                    home.clone()
                },
            );
        }
    }
    bp.autoconnect();
    bp
}
