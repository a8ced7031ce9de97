//! Delivery benchmarks of the in-process runtime, printed as a table.
//!
//! 1. One publish to one consumer, one message in flight at a time: latency p50/p99 over
//!    10,000 messages through the runtime, against a bare bounded channel doing the same
//!    hand-off between two threads. Interleaved (runtime, channel, runtime, ...), 3
//!    rounds; medians of the rounds and the ratio of those medians.
//! 2. Time from `stop()` to every thread joined, with a source at full rate feeding a
//!    consumer 10x too slow for it: 3 runs.
//!
//! `cargo bench -p streamwire-runtime --bench delivery`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use streamwire_core::{Context, In, Node, NodeResult, Out, Timestamp, Trigger};
use streamwire_graph::Blueprint;
use streamwire_macros::{Message, Module};
use streamwire_runtime::{RunOptions, Runtime};

const MESSAGES: u64 = 10_000;
const ROUNDS: usize = 3;

/// A tiny message: the cost measured is the hand-off, not the payload.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "bench/Ping", crate = streamwire_core)]
struct Ping(u64);

/// Publishes one ping, then waits until the consumer has taken it.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Pinger {
    ping: Out<Ping>,
    #[state]
    taken: Arc<AtomicU64>,
    #[state]
    sent: u64,
}

impl Node for Pinger {
    fn trigger(&self) -> Trigger {
        Trigger::FreeRunning
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent == MESSAGES {
            cx.finish();
            return Ok(());
        }
        self.ping.publish(Ping(self.sent))?;
        self.sent += 1;
        while self.taken.load(Ordering::Acquire) < self.sent && !cx.is_stopping() {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

/// Takes pings; the runtime's histogram records arrival minus publish time.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Ponger {
    #[port(keep_all)]
    ping: In<Ping>,
    #[state]
    taken: Arc<AtomicU64>,
}

impl Node for Ponger {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.ping.recv()?.is_some() {
            self.taken.fetch_add(1, Ordering::Release);
        }
        Ok(())
    }
}

/// (p50, p99) of one runtime round, from the input's histogram.
fn runtime_round() -> (Duration, Duration) {
    let taken = Arc::new(AtomicU64::new(0));
    let mut bp = Blueprint::new();
    bp.add(
        "pinger",
        Pinger {
            ping: Out::new(),
            taken: taken.clone(),
            sent: 0,
        },
    );
    bp.add(
        "ponger",
        Ponger {
            ping: In::new(),
            taken,
        },
    );
    bp.autoconnect();
    let runnable = bp.into_runnable().expect("the bench blueprint builds");
    let handle = Runtime::start(runnable, RunOptions::default()).expect("the bench starts");
    let report = handle.wait_timeout(Duration::from_secs(120));
    let latency = report.stats.inputs[0].latency;
    assert_eq!(latency.count, MESSAGES, "{report}");
    (latency.p50, latency.p99)
}

/// (p50, p99) of the same hand-off over a bare bounded channel.
fn channel_round() -> (Duration, Duration) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, Timestamp)>(10);
    let taken = Arc::new(AtomicU64::new(0));
    let consumer = {
        let taken = taken.clone();
        std::thread::Builder::new()
            .name("bench channel consumer".into())
            .spawn(move || {
                let mut latencies = Vec::with_capacity(MESSAGES as usize);
                while let Ok((_, sent)) = rx.recv() {
                    latencies.push(Timestamp::now().saturating_since(sent));
                    taken.fetch_add(1, Ordering::Release);
                }
                latencies
            })
            .expect("a thread")
    };
    for n in 0..MESSAGES {
        tx.send((n, Timestamp::now())).expect("the consumer runs");
        while taken.load(Ordering::Acquire) <= n {
            std::hint::spin_loop();
        }
    }
    drop(tx);
    let mut latencies = consumer.join().expect("the consumer returns");
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}

/// A source at full rate.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Flood {
    ping: Out<Ping>,
}

impl Node for Flood {
    fn trigger(&self) -> Trigger {
        Trigger::FreeRunning
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.ping.publish(Ping(0))?;
        Ok(())
    }
}

/// A consumer that takes 1 ms per message.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Slow {
    ping: In<Ping>,
}

impl Node for Slow {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if self.ping.recv()?.is_some() {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
}

fn stop_under_overload() -> (Duration, u64) {
    let mut bp = Blueprint::new();
    bp.add("flood", Flood { ping: Out::new() });
    bp.add("slow", Slow { ping: In::new() });
    bp.autoconnect();
    let runnable = bp.into_runnable().expect("the bench blueprint builds");
    let handle = Runtime::start(runnable, RunOptions::default()).expect("the bench starts");
    std::thread::sleep(Duration::from_millis(500));
    let began = Instant::now();
    handle.stop();
    let report = handle.wait();
    let took = began.elapsed();
    assert!(report.stragglers.is_empty(), "{report}");
    (took, report.stats.inputs[0].dropped.queue_full)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported here.
    let (mut rt50, mut rt99, mut ch50, mut ch99) = (vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        let (a50, a99) = runtime_round();
        let (b50, b99) = channel_round();
        println!(
            "round {}: runtime p50 {} p99 {} | channel p50 {} p99 {}",
            round + 1,
            us(a50),
            us(a99),
            us(b50),
            us(b99)
        );
        rt50.push(a50);
        rt99.push(a99);
        ch50.push(b50);
        ch99.push(b99);
    }
    let (rt50, rt99, ch50, ch99) = (median(rt50), median(rt99), median(ch50), median(ch99));
    println!(
        "one publish to one consumer, {MESSAGES} messages, median of {ROUNDS} interleaved rounds:"
    );
    println!(
        "  runtime p50 {} p99 {}; bare bounded channel p50 {} p99 {}; ratio p50 {:.2}x, p99 {:.2}x",
        us(rt50),
        us(rt99),
        us(ch50),
        us(ch99),
        rt50.as_secs_f64() / ch50.as_secs_f64().max(1e-12),
        rt99.as_secs_f64() / ch99.as_secs_f64().max(1e-12),
    );
    for run in 1..=3 {
        let (took, dropped) = stop_under_overload();
        println!(
            "stop under overload, run {run}: all threads joined {:.1} ms after stop ({dropped} messages dropped and counted by the slow consumer)",
            took.as_secs_f64() * 1e3
        );
    }
}
