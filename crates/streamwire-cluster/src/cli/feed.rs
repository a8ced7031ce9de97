//! `topic --connect`: the topic tools over zenoh, a peer session that joins a distributed run at its
//! coordinator's endpoint, finds the other processes by gossip over that connection, and
//! subscribes to a stream's key like a receiving partition does.

use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use streamwire_core::{Durability, Header, History, Qos, Reliability, Timestamp};
use streamwire_transport::{FrameBytes, Publisher, Subscription, Transport, WireFrame};
use streamwire_zenoh::{ZenohOptions, ZenohTransport};
use zenoh::Wait;

use streamwire_cli::topic::{
    Arrival, Feed, KEEP_ALL_BOUND, Membership, Requested, TopicStats, history_name, qos_text,
};
use streamwire_cli::{Remote, RemoteFeed};

use crate::{Credential, access};

/// The feed of `topic --connect` over zenoh.
pub(super) struct ZenohFeeds;

impl RemoteFeed for ZenohFeeds {
    fn open(
        &self,
        remote: &Remote,
        stream: &str,
        requested: Requested,
        stats: bool,
    ) -> anyhow::Result<(Box<dyn Feed>, Vec<String>)> {
        if let Some(domain) = remote.ros2_domain {
            return super::ros2::open(&remote.connect, domain, stream, requested, stats);
        }
        let (feed, warnings) = ZenohFeed::open(
            &remote.connect,
            remote.run_id.as_deref(),
            &remote.membership,
            stream,
            requested,
            stats,
        )?;
        Ok((Box::new(feed), warnings))
    }

    fn list(&self, remote: &Remote, out: &mut dyn Write) -> anyhow::Result<()> {
        if let Some(domain) = remote.ros2_domain {
            return super::ros2::list(&remote.connect, domain, out);
        }
        list(
            &remote.connect,
            remote.run_id.as_deref(),
            &remote.membership,
            out,
        )
    }
}

/// How long a tool waits for gossip to connect it to the run's processes before it asks
/// who is there.
const SETTLE: Duration = Duration::from_millis(1500);

#[derive(Default)]
struct Inbox {
    frames: VecDeque<(Instant, Timestamp, FrameBytes)>,
    dropped: u64,
}

/// A stream's frames, received over zenoh into a keep-last queue of the requested depth.
struct ZenohFeed {
    transport: ZenohTransport,
    _subscription: Box<dyn Subscription>,
    inbox: Arc<(Mutex<Inbox>, Condvar)>,
    depth: usize,
    stream: String,
    connect: Vec<String>,
    requested: Requested,
    stats: Option<Arc<dyn Publisher>>,
    stats_seq: u64,
    ended: Option<String>,
    /// Decode each message (`echo`); `bench` only reads the frame's head.
    decode: bool,
    refused: u64,
}

fn open(
    connect: &[String],
    run_id: Option<&str>,
    membership: &Membership,
) -> anyhow::Result<ZenohTransport> {
    let credential = tool_credential(run_id, membership)?;
    let options = match &credential {
        // Only the run's members reach a tool (mutual TLS with the run's authority); what
        // the tool may send is judged by their rules (read-only), not its own.
        Some(credential) => ZenohOptions {
            run_id: credential.run_id().to_owned(),
            listen: access::closed_endpoints(&ZenohOptions::default().listen),
            connect: access::closed_endpoints(connect),
            gossip: true,
            settings: streamwire_zenoh::Settings(credential.tls_settings()),
            ..ZenohOptions::default()
        },
        None => ZenohOptions {
            run_id: run_id.unwrap_or("topic").to_owned(),
            connect: connect.to_vec(),
            // The stream's publisher is in a worker: learn the workers' endpoints from the
            // coordinator (over that connection only; multicast stays off).
            gossip: true,
            ..ZenohOptions::default()
        },
    };
    if credential.is_none() {
        eprintln!(
            "INSECURE: joining without a credential (--insecure): only a run started with \
             --insecure admits this tool, and any process that reaches it may read, write and \
             stop it"
        );
    }
    let run_id = credential.as_ref().map(Credential::run_id).or(run_id);
    let transport = ZenohTransport::open(&options)?;
    std::thread::sleep(SETTLE);
    match run_id {
        Some(_) => Ok(transport),
        None => {
            let runs: BTreeSet<String> = announced(&transport, "*", "@pub")?
                .into_iter()
                .map(|(run, _, _)| run)
                .collect();
            match runs.len() {
                1 => {
                    // infallible: this arm has exactly one run
                    let run = runs.into_iter().next().unwrap_or_default();
                    Ok(transport.with_run_id(&run)?)
                }
                0 => bail!(
                    "no run found at {}: give --run-id (`run` prints it), or check the endpoint",
                    connect.join(", ")
                ),
                _ => bail!(
                    "several runs at {}: give --run-id, one of {}",
                    connect.join(", "),
                    runs.into_iter().collect::<Vec<_>>().join(", ")
                ),
            }
        }
    }
}

/// A tool's credential: its `--secret-file`, or the run's tool file on this host (found
/// by the run id); none with `--insecure`.
fn tool_credential(
    run_id: Option<&str>,
    membership: &Membership,
) -> anyhow::Result<Option<Credential>> {
    if membership.insecure {
        return Ok(None);
    }
    let file = match (&membership.secret_file, run_id) {
        (Some(file), _) => file.clone(),
        (None, Some(run)) => access::secret_file(&access::run_folder(run), access::TOOL),
        (None, None) => bail!(
            "a closed run needs a credential: give --run-id (on the coordinator's host its \
             tool file is found by it) or --secret-file, or --insecure for a run started with \
             --insecure"
        ),
    };
    let credential = Credential::read_file(&file).with_context(|| {
        format!(
            "cannot read the run's secret file {} (on another host copy it and give \
             --secret-file; for a run started with --insecure give --insecure)",
            file.display()
        )
    })?;
    Ok(Some(credential))
}

/// Every (run, stream, process) announced under `streamwire/<run>/<role>/` (`@sub`: the
/// processes that receive a stream; `@pub`: those that publish it).
fn announced(
    transport: &ZenohTransport,
    run: &str,
    role: &str,
) -> anyhow::Result<Vec<(String, String, String)>> {
    let replies = transport
        .session()
        .liveliness()
        // `**` never matches a verbatim chunk such as the `@` that ends the stream's name.
        .get(format!("streamwire/{run}/{role}/**/@/**"))
        .timeout(Duration::from_secs(2))
        .wait()
        .map_err(|e| anyhow::anyhow!("zenoh liveliness query: {e}"))?;
    let separator = format!("/{role}/");
    let mut out = Vec::new();
    while let Ok(reply) = replies.recv() {
        let Ok(sample) = reply.result() else { continue };
        let key = sample.key_expr().as_str();
        // streamwire/<run>/<role>/<stream chunks>/@/<host>/<process>
        let Some(rest) = key.strip_prefix("streamwire/") else {
            continue;
        };
        let Some((run, rest)) = rest.split_once(separator.as_str()) else {
            continue;
        };
        let Some((stream, partition)) = rest.split_once("/@/") else {
            continue;
        };
        out.push((run.to_owned(), stream.to_owned(), partition.to_owned()));
    }
    Ok(out)
}

/// `topic list --connect`: every stream the run publishes on zenoh (each stream a process
/// produces, encoded forms included), who publishes it and which processes receive it.
fn list(
    connect: &[String],
    run_id: Option<&str>,
    membership: &Membership,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let transport = open(connect, run_id, membership)?;
    let run = transport
        .prefix()
        .trim_start_matches("streamwire/")
        .to_owned();
    // stream -> (publishers, receivers)
    let mut streams: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    for (_, stream, partition) in announced(&transport, &run, "@pub")? {
        streams.entry(stream).or_default().0.insert(partition);
    }
    for (_, stream, partition) in announced(&transport, &run, "@sub")? {
        streams.entry(stream).or_default().1.insert(partition);
    }
    transport.close();
    writeln!(
        out,
        "streams of run `{run}` on zenoh (every stream a process produces is published, \
         received or not; `received by` names the other processes that subscribe):"
    )?;
    if streams.is_empty() {
        writeln!(out, "  (none found)")?;
    }
    let names = |set: &BTreeSet<String>| {
        if set.is_empty() {
            "nobody".to_owned()
        } else {
            set.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    let width = streams.keys().map(String::len).max().unwrap_or(0);
    let rows: Vec<(String, String, String)> = streams
        .iter()
        .map(|(stream, (publishers, receivers))| {
            (stream.clone(), names(publishers), names(receivers))
        })
        .collect();
    let from_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    for (stream, publishers, receivers) in rows {
        writeln!(
            out,
            "  {stream:width$}  published by {publishers:from_width$}  received by {receivers}"
        )?;
    }
    Ok(())
}

impl ZenohFeed {
    /// Joins the run at `connect` and subscribes to `stream` with `requested`; a
    /// statistics publisher on `<stream>_stats` when `stats`.
    fn open(
        connect: &[String],
        run_id: Option<&str>,
        membership: &Membership,
        stream: &str,
        requested: Requested,
        stats: bool,
    ) -> anyhow::Result<(ZenohFeed, Vec<String>)> {
        let transport = open(connect, run_id, membership)?;
        let depth = requested.depth();
        let inbox = Arc::new((Mutex::new(Inbox::default()), Condvar::new()));
        let sink_inbox = inbox.clone();
        let subscription = transport
            .subscribe(
                stream.trim_start_matches('/'),
                requested.qos(),
                Arc::new(move |frame: FrameBytes| {
                    let arrived = (Instant::now(), Timestamp::now());
                    let (lock, wake) = &*sink_inbox;
                    let mut inbox = lock.lock();
                    if inbox.frames.len() >= depth {
                        inbox.frames.pop_front();
                        inbox.dropped += 1;
                    }
                    inbox.frames.push_back((arrived.0, arrived.1, frame));
                    wake.notify_one();
                }),
            )
            .with_context(|| format!("cannot subscribe to `{stream}`"))?;
        let stats = if stats {
            Some(transport.publisher(
                &format!("{}_stats", stream.trim_start_matches('/')),
                Qos::DEFAULT,
            )?)
        } else {
            None
        };
        let decode = stats.is_none();
        let mut warnings = Vec::new();
        if requested.reliability == Reliability::Reliable {
            warnings.push(
                "reliable requested: over zenoh the publisher decides (a keep-last stream drops under congestion, a keep-all one blocks); this tool's queue is as asked".to_owned(),
            );
        }
        if requested.history == History::KeepAll {
            warnings.push(format!(
                "keep_all requested: this tool's queue holds at most {KEEP_ALL_BOUND} frames (drops beyond are counted)"
            ));
        }
        Ok((
            ZenohFeed {
                transport,
                _subscription: subscription,
                inbox,
                depth,
                stream: stream.to_owned(),
                connect: connect.to_vec(),
                requested,
                stats,
                stats_seq: 0,
                ended: None,
                decode,
                refused: 0,
            },
            warnings,
        ))
    }
}

impl Feed for ZenohFeed {
    fn recv(&mut self, timeout: Duration) -> Option<Arrival> {
        let deadline = Instant::now() + timeout;
        loop {
            let (arrived, arrived_wall, frame) = {
                let (lock, wake) = &*self.inbox;
                let mut inbox = lock.lock();
                loop {
                    if let Some(entry) = inbox.frames.pop_front() {
                        break entry;
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    wake.wait_for(&mut inbox, left);
                }
            };
            let bytes = frame.len() as u64;
            let Ok(parsed) = WireFrame::parse(frame) else {
                self.refused += 1;
                continue;
            };
            if parsed.end_of_stream {
                self.ended = Some("the stream ended (its producer finished)".to_owned());
                return None;
            }
            if parsed.stop {
                // The sender stopped with its run: a frame without a message.
                continue;
            }
            // `topic bench` reads a compressed image's JPEG settings too (its payload is
            // the bytes themselves, parts of the frame: no copy, no pixels decoded).
            let wanted = self.decode
                || parsed.head.wire_name
                    == <streamwire_msgs::CompressedImage as streamwire_core::Message>::TYPE_NAME;
            let message = if wanted {
                parsed.read_message().ok().map(Arc::from)
            } else {
                None
            };
            return Some(Arrival {
                arrived,
                arrived_wall,
                publish_time: Timestamp::from_nanos(parsed.head.publish_time_ns),
                seq: parsed.head.seq,
                bytes,
                type_name: parsed.head.wire_name,
                message,
            });
        }
    }

    fn dropped(&self) -> u64 {
        let (lock, _) = &*self.inbox;
        lock.lock().dropped + self.refused
    }

    fn ended(&mut self) -> Option<String> {
        self.ended.clone()
    }

    fn path(&self) -> String {
        format!(
            "zenoh subscriber on `{}` (a peer joined at {}; latency compares the publisher's clock with this host's)",
            self.transport.key_expr(self.stream.trim_start_matches('/')),
            self.connect.join(", ")
        )
    }

    fn size_meaning(&self, _type_name: &str) -> String {
        "wire bytes: the whole frame as it crossed zenoh (CDR head + CBOR payload), not the message's content bytes".to_owned()
    }

    fn granted(&self) -> String {
        qos_text(
            "the publisher's",
            match self.requested.durability {
                Durability::TransientLocal => "transient_local",
                _ => "volatile",
            },
            &history_name(History::KeepLast(self.depth as u32)),
        )
    }

    fn cpu_note(&self) -> String {
        "this tool only; the run's processes are not counted".to_owned()
    }

    fn publish_stats(&mut self, stats: &TopicStats) {
        let Some(publisher) = &self.stats else {
            return;
        };
        let header = Header {
            seq: self.stats_seq,
            publish_time: Timestamp::now(),
        };
        self.stats_seq += 1;
        let _ = publisher.put(&mut |link_seq| WireFrame::encode(stats, header, link_seq, ""));
    }

    fn stats_stream(&self) -> String {
        format!(
            "published as `{}` (streamwire/TopicStats) on zenoh, once a second",
            self.transport
                .key_expr(&format!("{}_stats", self.stream.trim_start_matches('/')))
        )
    }
}

impl Drop for ZenohFeed {
    fn drop(&mut self) {
        self.transport.close();
    }
}
