//! Shared memory between the workers of one host: how large each worker's pool is, and
//! the warning when some workers of a host run without it.

use std::collections::{BTreeMap, BTreeSet};

use streamwire_graph::{Locality, Placement, Plan};
use streamwire_zenoh::SharedMemory;

/// Frames a worker may have in its shared-memory pool per stream it sends raw to a
/// process of its own host: one being written, one in flight, one being read.
const SLOTS_PER_LINK: usize = 3;

/// The room for one frame in a worker's pool: a 1080p RGBA image (8.3 MB) fits; a 720p
/// RGB one is 2.76 MB. Messages are not sized in the plan, so this is a bound, not a
/// measurement; a frame that finds the pool full travels as bytes instead.
const SLOT_BYTES: usize = 8 << 20;

/// The shared-memory pool of the worker of `process`: room for three frames of 8 MiB
/// (one being written, one in flight, one being read; a 1080p RGBA image fits) per raw
/// link to another process of its host, at least zenoh's 16 MiB, at most 1 GiB.
pub fn shared_memory_pool(plan: &Plan, process: &Placement) -> usize {
    let links = plan.process(process).map_or(0, |view| {
        view.outgoing_links()
            .filter(|l| l.locality == Locality::SameHost && !l.payload.is_encoded())
            .count()
    });
    (links * SLOTS_PER_LINK * SLOT_BYTES).clamp(SharedMemory::DEFAULT_POOL_BYTES, 1 << 30)
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
