//! Streams carried to another host: once per host, however many of its processes consume
//! them (RFC.md, "One copy per link"). Derived from the links, not stored: the links stay
//! what each consumer is fed, and a crossing says which process of the receiving host
//! takes the stream off the link for the others.

use std::collections::BTreeMap;

use super::{Endpoint, Plan};
use crate::settings::Placement;

/// The first chunk of a stream handed on inside a host: `@host/<host>/<stream>`. A
/// verbatim chunk (`@`), so no wildcard subscription on a run's streams hears the
/// forwarded copy as a stream of its own.
pub const FORWARDED_PREFIX: &str = "@host";

/// One stream carried to one host: received across the link by one process
/// ([`receiver`](Crossing::receiver)), which hands it on to the host's other processes
/// that consume it ([`forwarded_to`](Crossing::forwarded_to)) on
/// [`forwarded_key`](Crossing::forwarded_key), through the host's shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Crossing {
    /// Where the stream starts: an output port, or an encoder.
    pub from: Endpoint,
    /// The stream as it travels (`color_image/compressed` for an encoder's bytes).
    pub stream: String,
    /// The receiving host.
    pub host: String,
    /// The process that receives it across the link: the first, by name, of the host's
    /// processes that consume it.
    pub receiver: Placement,
    /// The host's other processes that consume it, in name order: fed by the receiver.
    pub forwarded_to: Vec<Placement>,
}

impl Crossing {
    /// The key the receiver hands the stream on under: `@host/<host>/<stream>`.
    pub fn forwarded_key(&self) -> String {
        forwarded_key(&self.host, &self.stream)
    }

    /// True when `placement` gets the stream from the receiver, not from the link.
    pub fn is_forwarded_to(&self, placement: &Placement) -> bool {
        self.forwarded_to.contains(placement)
    }
}

/// `@host/<host>/<stream>`: the key under which `stream` is handed on inside `host`.
pub fn forwarded_key(host: &str, stream: &str) -> String {
    format!(
        "{FORWARDED_PREFIX}/{host}/{}",
        stream.trim_start_matches('/')
    )
}

impl Plan {
    /// Every stream carried to another host than its producer's, once per receiving host,
    /// sorted by stream, then host.
    pub fn crossings(&self) -> Vec<Crossing> {
        let mut by_host: BTreeMap<(String, String, Endpoint), Vec<Placement>> = BTreeMap::new();
        for link in self.links() {
            let (Some(from), Some(to)) = (self.placement_of(link.from), self.placement_of(link.to))
            else {
                continue;
            };
            if from.host() == to.host() {
                continue;
            }
            let receivers = by_host
                .entry((link.stream.clone(), to.host().to_owned(), link.from))
                .or_default();
            if !receivers.contains(to) {
                receivers.push(to.clone());
            }
        }
        by_host
            .into_iter()
            .filter_map(|((stream, host, from), mut receivers)| {
                receivers.sort();
                let mut receivers = receivers.into_iter();
                Some(Crossing {
                    from,
                    stream,
                    host,
                    receiver: receivers.next()?,
                    forwarded_to: receivers.collect(),
                })
            })
            .collect()
    }

    /// The crossing of the stream that starts at `from` to `host`, if it goes there.
    pub fn crossing(&self, from: Endpoint, host: &str) -> Option<Crossing> {
        self.crossings()
            .into_iter()
            .find(|c| c.from == from && c.host == host)
    }
}
