//! Shared memory between the workers of one host: how large each worker's pool is, and
//! the warning when some workers of a host run without it.

use std::collections::{BTreeMap, BTreeSet};

use streamwire_core::History;
use streamwire_graph::{Endpoint, Locality, Placement, Plan};
use streamwire_zenoh::SharedMemory;

/// Frames a worker may have in its shared-memory pool per stream it sends raw to processes
/// of its own host, besides those its consumers' queues hold: one being written (a loan),
/// one in the sender's queue or on the wire.
const SLOTS_PER_STREAM: usize = 2;

/// The queue depth counted for a keep-all consumer: the runtime's default keep-all depth.
const KEEP_ALL_DEPTH: usize = 10;

/// The room for one frame in a worker's pool: a 1080p RGBA image (8.3 MB) fits; a 720p
/// RGB one is 2.76 MB. Messages are not sized in the plan, so this is a bound, not a
/// measurement; a loan the pool cannot serve is a heap buffer (counted `loan_fallback`)
/// and travels copied.
const SLOT_BYTES: usize = 8 << 20;

/// The shared-memory pool of the worker of `process`: per stream it sends raw to other
/// processes of its host (or hands on to them, as its host's receiver of a stream from
/// another host), room for what its deepest consumer's queue may hold (received
/// frames pin the producer's chunks until they are dropped; every consumer of a frame
/// shares its one chunk) plus one being written and one in flight, at 8 MiB each (a 1080p
/// RGBA image fits); at least zenoh's 16 MiB, at most 1 GiB. zenoh's allocator walks the
/// whole pool before it reuses freed chunks, so the pool's size is also the memory it
/// comes to hold.
pub fn shared_memory_pool(plan: &Plan, process: &Placement) -> usize {
    let mut depth_by_stream: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(view) = plan.process(process) {
        for link in view
            .outgoing_links()
            .filter(|l| l.locality == Locality::SameHost && !l.payload.is_encoded())
        {
            let depth = depth_by_stream.entry(link.stream.clone()).or_default();
            *depth = (*depth).max(consumer_depth(plan, link.to));
        }
    }
    // A host's receiver puts what it hands on (raw or encoded) into its pool too.
    for crossing in plan.crossings() {
        if crossing.receiver != *process || crossing.forwarded_to.is_empty() {
            continue;
        }
        let depth = plan
            .links_from(crossing.from)
            .filter(|l| {
                plan.placement_of(l.to)
                    .is_some_and(|p| crossing.is_forwarded_to(p))
            })
            .map(|l| consumer_depth(plan, l.to))
            .max()
            .unwrap_or(1);
        depth_by_stream.insert(crossing.forwarded_key(), depth);
    }
    let slots: usize = depth_by_stream
        .values()
        .map(|depth| SLOTS_PER_STREAM + depth)
        .sum();
    slots
        .saturating_mul(SLOT_BYTES)
        .clamp(SharedMemory::DEFAULT_POOL_BYTES, 1 << 30)
}

/// How many messages the queue at `to` may hold.
fn consumer_depth(plan: &Plan, to: Endpoint) -> usize {
    let history = match to {
        Endpoint::Port { instance, port } => plan.port(instance, port).map(|p| p.qos.history),
        Endpoint::Codec(id) => plan.codec_node(id).map(|c| c.qos.history),
        _ => None,
    };
    match history {
        Some(History::KeepLast(n)) => usize::try_from(n).unwrap_or(usize::MAX),
        Some(History::KeepAll) => KEEP_ALL_DEPTH,
        None => 1,
    }
}

/// The warnings for the workers of one host that cannot share memory: a worker without
/// it gets the raw frames of its neighbours copied through TCP, silently.
/// `processes` are `(host/process, host)`; `offers` says, per joined worker, whether its
/// session offers shared memory.
pub(crate) fn warnings(
    processes: &[(String, String)],
    offers: &BTreeMap<String, bool>,
) -> Vec<String> {
    let hosts: BTreeSet<&str> = processes.iter().map(|(_, h)| h.as_str()).collect();
    hosts
        .into_iter()
        .filter_map(|host| {
            let on_host = || processes.iter().filter(move |(_, h)| h == host);
            let offering = |offer: bool| -> Vec<&str> {
                on_host()
                    .filter(|(p, _)| offers.get(p) == Some(&offer))
                    .map(|(p, _)| p.as_str())
                    .collect()
            };
            let (with, without) = (offering(true), offering(false));
            (!with.is_empty() && !without.is_empty()).then(|| warning(host, &with, &without))
        })
        .collect()
}

fn warning(host: &str, with: &[&str], without: &[&str]) -> String {
    format!(
        "shared memory: worker{} {} on host `{host}` run{} without it ({} {} it): large \
         frames between them are copied through TCP; enable it on both ends (zenoh's \
         `transport/shared_memory/enabled`)",
        if without.len() == 1 { "" } else { "s" },
        without.join(", "),
        if without.len() == 1 { "s" } else { "" },
        with.join(", "),
        if with.len() == 1 { "has" } else { "have" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn processes(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
            .collect()
    }

    #[test]
    fn workers_of_one_host_that_disagree_about_shared_memory_are_named() {
        let processes = processes(&[
            ("robot/cam", "robot"),
            ("robot/ui", "robot"),
            ("laptop/web", "laptop"),
        ]);
        let offers: BTreeMap<String, bool> = [
            ("robot/cam".to_owned(), true),
            ("robot/ui".to_owned(), false),
            ("laptop/web".to_owned(), false),
        ]
        .into();
        assert_eq!(
            warnings(&processes, &offers),
            [
                "shared memory: worker robot/ui on host `robot` runs without it (robot/cam has \
              it): large frames between them are copied through TCP; enable it on both ends \
              (zenoh's `transport/shared_memory/enabled`)"
            ]
        );
        // One host alone, or every worker of a host alike: nothing to say.
        let alike: BTreeMap<String, bool> = [
            ("robot/cam".to_owned(), true),
            ("robot/ui".to_owned(), true),
            ("laptop/web".to_owned(), false),
        ]
        .into();
        assert!(warnings(&processes, &alike).is_empty());
    }
}
