//! The iceoryx2 baseline: zero-copy IPC through shared memory between the suite's two
//! processes, written as iceoryx2's authors recommend, with no network stack and no
//! serialization: the physical limit of a hand-off between two processes of one host.
//!
//! Per payload size, a publish-subscribe service of `[u8]` slices whose largest slice is
//! that size in each direction (`ping` and `pong` for the round trips, `burst` and `ack`
//! for the throughput phase). The pinger loans an uninitialized slice, writes the payload
//! before its clock starts, then sends. The echo answers with a loan it wrote before the
//! ping arrived, the ping's sequence number stamped into its first 8 bytes (as iceoryx2's
//! own benchmark answers with a loan taken before it waits): the payload itself is never
//! copied. Two ways to wait ([`Wait`]): the event service's listener and notifier (each
//! send is followed by a notification, the receiver blocks in the listener, then drains
//! its subscriber), which compares with the streamwire rows' blocking receive; and a busy
//! loop on the subscriber (both processes spin on a core each).
//!
//! Every name of a run is its own: services named after the run, files under a prefix and
//! a root folder of the run ([`Scope`]), all removed by the measuring side when the row
//! ends, however it ends.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use iceoryx2::port::listener::Listener;
use iceoryx2::port::notifier::Notifier;
use iceoryx2::port::publisher::Publisher;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::port::{BackpressureAction, BackpressureInfo};
use iceoryx2::prelude::*;
use iceoryx2::sample_mut::SampleMut;

use crate::modules::{WARMUP, payload_bytes, seq_of};
use crate::{BenchError, Phase, PhaseKind, PhaseResult};

/// How the receiving side of each hop learns that a sample is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Blocked in the event service's listener until the sender's notifier wakes it.
    Event,
    /// Polling the subscriber in a loop, a core busy on each side.
    Busy,
}

impl Wait {
    /// Its name as the peer's `--mode`.
    pub(crate) fn mode(self) -> &'static str {
        match self {
            Wait::Event => "iceoryx2",
            Wait::Busy => "iceoryx2-busy",
        }
    }

    /// Its mark in the run's name.
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Wait::Event => "e",
            Wait::Busy => "b",
        }
    }
}

/// A round trip without its answer for this long is lost: counted, and the next sent.
const LOST_AFTER: Duration = Duration::from_secs(1);
/// A throughput phase whose acks stop coming for this long ends with what arrived.
const STALL: Duration = Duration::from_secs(5);
/// How long a side waits for the other to open a size's services, and a send for a full
/// receiver to make room before it gives up (the other process is gone).
const HANDSHAKE: Duration = Duration::from_secs(20);
/// Shared memory of a burst's pool, as the bare zenoh rows' 64 MiB.
const BURST_POOL_BYTES: usize = 64 << 20;
/// How often the echo looks for the pinger's next size while it busy-waits.
const BUSY_CONTROL_EVERY: u32 = 1024;

/// Event ids of the two event services.
const DATA: EventId = EventId::new(0);
/// The pinger made the next size's services.
const OPEN: EventId = EventId::new(1);
/// The echo opened them and made its ports.
const READY: EventId = EventId::new(2);
const EVENT_ID_MAX: usize = 2;

fn engine(what: &str, e: impl std::fmt::Debug) -> BenchError {
    BenchError::Iceoryx2(format!("{what}: {e:?}"))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The names and files of one row's run: a file prefix and a root folder of its own, so
/// that its files are told from any other iceoryx2 user's and removed exactly.
#[derive(Clone, Debug)]
pub(crate) struct Scope {
    /// The run's name: the suite's process id and the row (`sw<pid>e`).
    name: String,
    /// iceoryx2's default root folder (`/tmp/iceoryx2/`), and whether it was there
    /// before the run (else the run removes it again once empty).
    default_root: PathBuf,
    default_root_existed: bool,
}

/// Where a Linux host keeps POSIX shared memory: iceoryx2's data segments, dynamic
/// service configs and connections are `/dev/shm/<prefix><name><suffix>`.
const SHM_DIR: &str = "/dev/shm";

impl Scope {
    pub(crate) fn new(run_id: &str) -> Scope {
        let default_root = PathBuf::from(
            String::from_utf8_lossy(Config::default().global.root_path().as_bytes()).into_owned(),
        );
        Scope {
            name: run_id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect(),
            default_root_existed: default_root.exists(),
            default_root,
        }
    }

    /// Every file name of the run starts with it, in `/dev/shm` and under the root.
    fn prefix(&self) -> String {
        format!("iox2_{}_", self.name)
    }

    /// The run's root folder (services, nodes and event sockets): under iceoryx2's own.
    fn root(&self) -> PathBuf {
        self.default_root.join(&self.name)
    }

    /// iceoryx2's default configuration with the run's prefix and root.
    fn config(&self) -> Result<Config, BenchError> {
        let mut config = Config::default();
        config.global.prefix =
            FileName::new(self.prefix().as_bytes()).map_err(|e| engine("file prefix", e))?;
        let root = format!("{}/", self.root().display());
        let root = Path::new(root.as_bytes()).map_err(|e| engine("root folder", e))?;
        config.global.set_root_path(&root);
        Ok(config)
    }

    fn node(&self) -> Result<Node<ipc::Service>, BenchError> {
        NodeBuilder::new()
            .config(&self.config()?)
            // The suite's process is a CLI: ctrl-c is its own, not iceoryx2's.
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<ipc::Service>()
            .map_err(|e| engine("node", e))
    }

    fn service_name(&self, what: &str) -> Result<ServiceName, BenchError> {
        ServiceName::new(&format!("streamwire-bench/{}/{what}", self.name))
            .map_err(|e| engine("service name", e))
    }

    /// What the run left: `/dev/shm` files under its prefix, and its root folder.
    pub(crate) fn leftovers(&self) -> Vec<PathBuf> {
        let prefix = self.prefix();
        let mut found: Vec<PathBuf> = std::fs::read_dir(SHM_DIR)
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                    .map(|e| e.path())
                    .collect()
            })
            // infallible: without /dev/shm the run made nothing there
            .unwrap_or_default();
        let root = self.root();
        if root.exists() {
            found.push(root);
        }
        found
    }

    /// Removes what the run left (a peer killed before its nodes cleaned up, or a run
    /// that failed), and iceoryx2's root folder if the run made it and left it empty.
    /// Returns what could not be removed.
    pub(crate) fn remove_leftovers(&self) -> Vec<PathBuf> {
        for path in self.leftovers() {
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if let Err(e) = removed {
                tracing::warn!("cannot remove {}: {e}", path.display());
            }
        }
        if !self.default_root_existed {
            // Fails, as it should, while another run's files are in it.
            let _ = std::fs::remove_dir(&self.default_root);
        }
        self.leftovers()
    }
}

/// Removes the run's files when dropped: after the row, however it ended.
pub(crate) struct Cleanup(pub(crate) Scope);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let left = self.0.remove_leftovers();
        if !left.is_empty() {
            tracing::warn!("iceoryx2 files left: {left:?}");
        }
    }
}

/// The two event services of a run, one per direction, each side's end of them.
struct Events {
    notifier: Notifier<ipc::Service>,
    listener: Listener<ipc::Service>,
}

impl Events {
    /// `to` is the direction this side notifies, `from` the one it listens to.
    fn open(
        scope: &Scope,
        node: &Node<ipc::Service>,
        to: &str,
        from: &str,
    ) -> Result<Events, BenchError> {
        let service = |name: &str| {
            node.service_builder(&scope.service_name(name)?)
                .event()
                .event_id_max_value(EVENT_ID_MAX)
                .max_nodes(2)
                .open_or_create()
                .map_err(|e| engine(name, e))
        };
        let notifier = service(to)?
            .notifier_builder()
            .default_event_id(DATA)
            .create()
            .map_err(|e| engine("notifier", e))?;
        let listener = service(from)?
            .listener_builder()
            .create()
            .map_err(|e| engine("listener", e))?;
        Ok(Events { notifier, listener })
    }

    fn notify(&self, id: EventId) -> Result<usize, BenchError> {
        self.notifier
            .notify_with_custom_event_id(id)
            .map_err(|e| engine("notify", e))
    }

    /// Waits up to `timeout` for notifications; whether one of them was `id`.
    fn wait_for(&self, id: EventId, timeout: Duration) -> Result<bool, BenchError> {
        let mut seen = false;
        self.listener
            .timed_wait(|event| seen |= event.id == id, timeout)
            .map_err(|e| engine("wait", e))?;
        Ok(seen)
    }

    /// Whether a notification `id` is pending, without waiting.
    fn pending(&self, id: EventId) -> Result<bool, BenchError> {
        let mut seen = false;
        self.listener
            .try_wait(|event| seen |= event.id == id)
            .map_err(|e| engine("wait", e))?;
        Ok(seen)
    }
}

/// The four services of one size (`index` in the run's list of sizes).
struct SizeNames {
    ping: ServiceName,
    pong: ServiceName,
    burst: ServiceName,
    ack: ServiceName,
}

impl SizeNames {
    fn new(scope: &Scope, index: usize, size: usize) -> Result<SizeNames, BenchError> {
        let name = |what: &str| scope.service_name(&format!("{index}-{size}/{what}"));
        Ok(SizeNames {
            ping: name("ping")?,
            pong: name("pong")?,
            burst: name("burst")?,
            ack: name("ack")?,
        })
    }
}

/// A burst's receive buffer: as many messages of `size` as 64 MiB hold, 4 to 256 (the
/// bare zenoh FIFO's depth).
fn burst_depth(size: usize) -> usize {
    (BURST_POOL_BYTES / size.max(1)).clamp(4, 256)
}

/// A sender to a full receiver retries, and gives up after [`HANDSHAKE`] (the receiver's
/// process is gone): the send fails instead of hanging the suite.
fn give_up_in_time(info: &BackpressureInfo) -> BackpressureAction {
    if info.elapsed_time > HANDSHAKE {
        BackpressureAction::DiscardDataAndFail
    } else {
        BackpressureAction::Retry
    }
}

type SlicePublisher = Publisher<ipc::Service, [u8], ()>;
type SliceSubscriber = Subscriber<ipc::Service, [u8], ()>;

/// A publisher of slices up to `max_len` bytes.
fn publisher(
    service: &iceoryx2::service::port_factory::publish_subscribe::PortFactory<
        ipc::Service,
        [u8],
        (),
    >,
    max_len: usize,
) -> Result<SlicePublisher, BenchError> {
    service
        .publisher_builder()
        .initial_max_slice_len(max_len.max(1))
        .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
        .set_backpressure_handler(give_up_in_time)
        .create()
        .map_err(|e| engine("publisher", e))
}

/// The pinger's ports of one size: it makes the services.
struct PingerPorts {
    ping: SlicePublisher,
    pong: SliceSubscriber,
    burst: SlicePublisher,
    ack: SliceSubscriber,
}

impl PingerPorts {
    /// The services of `size`, their buffers: one ping or pong in flight (a late one
    /// overwritten, as a lost round trip), a burst as deep as [`burst_depth`], acks as
    /// many as the longest burst of the size.
    fn create(
        node: &Node<ipc::Service>,
        names: &SizeNames,
        size: usize,
        longest_burst: usize,
    ) -> Result<PingerPorts, BenchError> {
        let service = |name: &ServiceName, depth: usize, overflow: bool| {
            node.service_builder(name)
                .publish_subscribe::<[u8]>()
                .max_publishers(1)
                .max_subscribers(1)
                .max_nodes(2)
                .history_size(0)
                .subscriber_max_buffer_size(depth)
                .enable_safe_overflow(overflow)
                .create()
                .map_err(|e| engine("publish-subscribe service", e))
        };
        let ping = service(&names.ping, 2, true)?;
        let pong = service(&names.pong, 2, true)?;
        let burst = service(&names.burst, burst_depth(size), false)?;
        let ack = service(&names.ack, longest_burst.max(1), false)?;
        Ok(PingerPorts {
            ping: publisher(&ping, size)?,
            pong: pong
                .subscriber_builder()
                .create()
                .map_err(|e| engine("subscriber", e))?,
            burst: publisher(&burst, size)?,
            ack: ack
                .subscriber_builder()
                .create()
                .map_err(|e| engine("subscriber", e))?,
        })
    }
}

/// Phases grouped by size, in order: a size's latency and throughput phases.
fn groups(phases: &[Phase]) -> Vec<&[Phase]> {
    phases.chunk_by(|a, b| a.size == b.size).collect()
}

/// The sizes of `phases`, one per group, as the echo is told them.
pub(crate) fn sizes_of(phases: &[Phase]) -> Vec<usize> {
    groups(phases).iter().map(|g| g[0].size).collect()
}

/// The measuring side: every phase against an echo [`serve`]ing the same scope.
pub(crate) fn measure(
    scope: &Scope,
    wait: Wait,
    phases: &[Phase],
) -> Result<Vec<PhaseResult>, BenchError> {
    let node = scope.node()?;
    let events = Events::open(scope, &node, "to-echo", "to-pinger")?;
    let mut pinger = Pinger {
        events,
        wait,
        seq: 0,
    };
    let mut results = Vec::new();
    for (index, group) in groups(phases).into_iter().enumerate() {
        let size = group[0].size;
        let longest_burst = group
            .iter()
            .filter(|p| p.kind == PhaseKind::Throughput)
            .map(|p| p.samples)
            .max()
            .unwrap_or(1);
        let names = SizeNames::new(scope, index, size)?;
        let ports = PingerPorts::create(&node, &names, size, longest_burst)?;
        pinger.handshake()?;
        for phase in group {
            results.push(match phase.kind {
                PhaseKind::Latency => pinger.latency(&ports, phase)?,
                PhaseKind::Throughput => pinger.throughput(&ports, phase)?,
            });
        }
    }
    Ok(results)
}

struct Pinger {
    events: Events,
    wait: Wait,
    seq: u64,
}

impl Pinger {
    /// Tells the echo that a size's services are there (once it listens), and waits
    /// until it opened them.
    fn handshake(&self) -> Result<(), BenchError> {
        let deadline = Instant::now() + HANDSHAKE;
        while self.events.notify(OPEN)? == 0 {
            if Instant::now() > deadline {
                return Err(BenchError::Peer(
                    "the iceoryx2 echo did not listen within 20 s".to_owned(),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(BenchError::Peer(
                    "the iceoryx2 echo did not open the services within 20 s".to_owned(),
                ));
            }
            if self.events.wait_for(READY, left)? {
                return Ok(());
            }
        }
    }

    /// Payload `seq` of `len` bytes in a loan of `publisher`, written from `template`
    /// (the payload's bytes; its first 8 become `seq`).
    fn loan(
        publisher: &SlicePublisher,
        template: &mut [u8],
        seq: u64,
    ) -> Result<SampleMut<ipc::Service, [u8], ()>, BenchError> {
        if let Some(head) = template.get_mut(..8) {
            head.copy_from_slice(&seq.to_le_bytes());
        }
        let sample = publisher
            .loan_slice_uninit(template.len())
            .map_err(|e| engine("loan", e))?;
        Ok(sample.write_from_slice(template))
    }

    fn latency(&mut self, ports: &PingerPorts, phase: &Phase) -> Result<PhaseResult, BenchError> {
        let started = Instant::now();
        let mut template = payload_bytes(phase.size, 0);
        let mut samples = Vec::with_capacity(phase.samples + WARMUP);
        let mut lost = 0_u64;
        while samples.len() < phase.samples + WARMUP {
            let seq = self.seq;
            self.seq += 1;
            // Written before the clock starts, as the pinger of the streamwire rows does.
            let sample = Self::loan(&ports.ping, &mut template, seq)?;
            let sent = Instant::now();
            sample.send().map_err(|e| engine("send", e))?;
            if self.wait == Wait::Event {
                self.events.notify(DATA)?;
            }
            match self.pong(ports, seq, sent)? {
                Some(rtt) => samples.push(rtt),
                None => lost += 1,
            }
            if lost > 100 {
                return Err(BenchError::Peer(format!(
                    "{lost} iceoryx2 round trips of {} B lost",
                    phase.size
                )));
            }
        }
        Ok(PhaseResult::latency(
            *phase,
            samples.split_off(WARMUP),
            started.elapsed(),
            lost,
        ))
    }

    /// The round trip of ping `seq`, or `None` when its pong did not come in time.
    fn pong(
        &self,
        ports: &PingerPorts,
        seq: u64,
        sent: Instant,
    ) -> Result<Option<u64>, BenchError> {
        let deadline = sent + LOST_AFTER;
        loop {
            while let Some(sample) = ports.pong.receive().map_err(|e| engine("receive", e))? {
                if seq_of(sample.payload()).is_none_or(|s| s == seq) {
                    return Ok(Some(nanos(sent.elapsed())));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            match self.wait {
                Wait::Event => {
                    self.events.wait_for(DATA, deadline - now)?;
                }
                Wait::Busy => std::hint::spin_loop(),
            }
        }
    }

    /// A burst of `phase.samples` messages, each acknowledged by an empty one; msg/s over
    /// first send to last ack.
    fn throughput(&self, ports: &PingerPorts, phase: &Phase) -> Result<PhaseResult, BenchError> {
        let mut template = payload_bytes(phase.size, 0);
        let wanted = phase.samples as u64;
        let mut acks = Acks::default();
        let started = Instant::now();
        for _ in 0..phase.samples {
            // A loan per message, written as the pinger writes its own (as the bare
            // zenoh loan row does, inside the burst's clock).
            let sample = Self::loan(&ports.burst, &mut template, 0)?;
            sample.send().map_err(|e| engine("send", e))?;
            if self.wait == Wait::Event {
                self.events.notify(DATA)?;
            }
            acks.drain(&ports.ack)?;
        }
        let mut since = Instant::now();
        while acks.count < wanted && since.elapsed() < STALL {
            if acks.drain(&ports.ack)? {
                since = Instant::now();
                continue;
            }
            match self.wait {
                Wait::Event => {
                    self.events.wait_for(DATA, Duration::from_millis(50))?;
                }
                Wait::Busy => std::hint::spin_loop(),
            }
        }
        let elapsed = acks.last.map_or(Duration::ZERO, |last| last - started);
        Ok(PhaseResult::throughput(*phase, acks.count, elapsed))
    }
}

/// Acks of a burst so far, and when the last one was taken.
#[derive(Default)]
struct Acks {
    count: u64,
    last: Option<Instant>,
}

impl Acks {
    /// Takes every ack there is; whether there was one.
    fn drain(&mut self, ack: &SliceSubscriber) -> Result<bool, BenchError> {
        let before = self.count;
        while ack.receive().map_err(|e| engine("receive", e))?.is_some() {
            self.count += 1;
            self.last = Some(Instant::now());
        }
        Ok(self.count > before)
    }
}

/// The echo's ports of one size: it opens the pinger's services.
struct EchoPorts {
    ping: SliceSubscriber,
    pong: SlicePublisher,
    burst: SliceSubscriber,
    ack: SlicePublisher,
    /// The next pong: a loan written before the ping it answers arrived.
    reply: Option<SampleMut<ipc::Service, [u8], ()>>,
    /// What a reply is written from: the size's payload bytes.
    template: Vec<u8>,
}

impl EchoPorts {
    fn open(
        node: &Node<ipc::Service>,
        names: &SizeNames,
        size: usize,
    ) -> Result<EchoPorts, BenchError> {
        let service = |name: &ServiceName| {
            node.service_builder(name)
                .publish_subscribe::<[u8]>()
                .open()
                .map_err(|e| engine("publish-subscribe service", e))
        };
        let subscriber = |name: &ServiceName| {
            service(name)?
                .subscriber_builder()
                .create()
                .map_err(|e| engine("subscriber", e))
        };
        let mut ports = EchoPorts {
            ping: subscriber(&names.ping)?,
            pong: publisher(&service(&names.pong)?, size)?,
            burst: subscriber(&names.burst)?,
            ack: publisher(&service(&names.ack)?, 0)?,
            reply: None,
            template: payload_bytes(size, 0),
        };
        ports.prepare()?;
        Ok(ports)
    }

    /// Loans and writes the next reply, outside any round trip's clock.
    fn prepare(&mut self) -> Result<(), BenchError> {
        if self.reply.is_none() {
            let sample = self
                .pong
                .loan_slice_uninit(self.template.len())
                .map_err(|e| engine("loan", e))?;
            self.reply = Some(sample.write_from_slice(&self.template));
        }
        Ok(())
    }

    /// Answers every ping there is and acknowledges every burst message; whether it did
    /// anything.
    fn serve_pending(&mut self, events: &Events, wait: Wait) -> Result<bool, BenchError> {
        let mut answered = false;
        while let Some(ping) = self.ping.receive().map_err(|e| engine("receive", e))? {
            self.prepare()?;
            let Some(mut reply) = self.reply.take() else {
                continue;
            };
            if let (Some(head), Some(seq)) =
                (reply.payload_mut().get_mut(..8), ping.payload().get(..8))
            {
                head.copy_from_slice(seq);
            }
            drop(ping);
            reply.send().map_err(|e| engine("send", e))?;
            answered = true;
        }
        let mut acked = false;
        while let Some(message) = self.burst.receive().map_err(|e| engine("receive", e))? {
            drop(message);
            let ack = self
                .ack
                .loan_slice_uninit(0)
                .map_err(|e| engine("loan", e))?;
            ack.write_from_slice(&[])
                .send()
                .map_err(|e| engine("send", e))?;
            acked = true;
        }
        if (answered || acked) && wait == Wait::Event {
            events.notify(DATA)?;
        }
        // The next reply written after the notification, not in the pinger's clock.
        self.prepare()?;
        Ok(answered || acked)
    }
}

/// The echo: answers the pinger of [`measure`] over the same scope, size after size
/// (`sizes`, in the pinger's order), until `stop` returns true.
pub(crate) fn serve(
    scope: &Scope,
    wait: Wait,
    sizes: &[usize],
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(), BenchError> {
    let node = scope.node()?;
    let events = Events::open(scope, &node, "to-pinger", "to-echo")?;
    let mut ports: Option<EchoPorts> = None;
    let mut next = 0_usize;
    let mut spins = 0_u32;
    while !stop() {
        let open = match wait {
            Wait::Event => events.wait_for(OPEN, Duration::from_millis(50))?,
            Wait::Busy => {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(BUSY_CONTROL_EVERY) {
                    events.pending(OPEN)?
                } else {
                    std::hint::spin_loop();
                    false
                }
            }
        };
        if open {
            // The previous size's ports go first: its services end with them.
            drop(ports.take());
            let size = *sizes.get(next).ok_or_else(|| {
                BenchError::Arguments(format!(
                    "the pinger opened size number {}, but --sizes has {}",
                    next + 1,
                    sizes.len()
                ))
            })?;
            ports = Some(EchoPorts::open(
                &node,
                &SizeNames::new(scope, next, size)?,
                size,
            )?);
            next += 1;
            events.notify(READY)?;
        }
        if let Some(ports) = ports.as_mut() {
            ports.serve_pending(&events, wait)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_removes_its_own_files_and_no_other() {
        let pid = std::process::id();
        let ours = Scope::new(&format!("unit{pid}"));
        // A run whose name starts with ours: its files must stay.
        let theirs = Scope::new(&format!("unit{pid}x"));
        let shm =
            |scope: &Scope| PathBuf::from(SHM_DIR).join(format!("{}0a1b.data", scope.prefix()));
        let services = ours.root().join("services");
        std::fs::create_dir_all(&services).unwrap_or_else(|e| panic!("{e}"));
        for file in [shm(&ours), shm(&theirs), services.join("iox2_x.service")] {
            std::fs::write(&file, b"").unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        assert_eq!(ours.leftovers().len(), 2, "{:?}", ours.leftovers());
        let left = ours.remove_leftovers();
        let kept = shm(&theirs).exists();
        let _ = std::fs::remove_file(shm(&theirs));
        assert_eq!(left, Vec::<PathBuf>::new());
        assert!(!shm(&ours).exists() && !ours.root().exists());
        assert!(kept, "another run's file was removed");
    }

    #[test]
    fn the_run_configures_iceoryx2_with_its_prefix_and_root() {
        let scope = Scope::new("sw42-b");
        let config = scope.config().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.global.prefix.as_bytes(), b"iox2_sw42b_");
        assert_eq!(
            config.global.root_path().as_bytes(),
            b"/tmp/iceoryx2/sw42b/"
        );
    }
}
