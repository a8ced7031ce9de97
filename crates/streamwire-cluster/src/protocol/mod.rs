//! The control protocol between a coordinator and its workers: its messages, one module
//! per direction (as dora's `libraries/message` keeps them), the keys they travel on, and
//! the two ways they travel (a worker's query, the coordinator's reply), all JSON.
//!
//! Every exchange is a worker's query answered by the coordinator: a worker joins
//! ([`JoinRequest`] → [`JoinReply`]), says its state about every 100 ms and gets the run's
//! ([`StateRequest`] → [`StateReply`]), and sends its report at the end
//! ([`ReportRequest`] → `true`). The join carries the protocol [`VERSION`]: a worker
//! speaking another version is refused at once, naming both. Each worker asks on keys
//! that end with its process ([`Keys::ask`]); the coordinator answers only a request
//! whose process is its key's.

mod coordinator_to_worker;
mod worker_to_coordinator;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zenoh::Wait;

pub use coordinator_to_worker::{JoinReply, StateReply};
pub use worker_to_coordinator::{JoinRequest, ReportRequest, StateRequest};

use crate::ClusterError;

/// The protocol's version: a worker and a coordinator of different versions refuse each
/// other at the join. Raise it with any change to a message that an older peer would
/// misread. Version 3: each worker asks on keys of its own (`.../join/<host>/<process>`),
/// which a closed run's access control lets only that worker use.
pub const VERSION: u32 = 3;

/// How long one query waits for its answer.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(1);

/// The three things a worker asks its coordinator, each on keys of its own.
pub const ASKS: [&str; 3] = ["join", "state", "report"];

/// The control keys of one run (`streamwire/<run>/@cluster/...`).
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys under a run's prefix (`streamwire/<run>`).
    pub fn new(prefix: &str) -> Keys {
        Keys {
            prefix: format!("{prefix}/@cluster"),
        }
    }

    /// Where the worker of `process` (`host/process`) asks `ask` (one of [`ASKS`]).
    pub fn ask(&self, ask: &str, process: &str) -> String {
        format!("{}/{ask}/{process}", self.prefix)
    }

    /// Where the worker of `process` joins.
    pub fn join(&self, process: &str) -> String {
        self.ask("join", process)
    }

    /// Where the worker of `process` says its state and learns the run's.
    pub fn state(&self, process: &str) -> String {
        self.ask("state", process)
    }

    /// Where the worker of `process` sends its report.
    pub fn report(&self, process: &str) -> String {
        self.ask("report", process)
    }

    /// Every worker's keys of `ask`: the coordinator's queryable.
    pub fn every(&self, ask: &str) -> String {
        format!("{}/{ask}/**", self.prefix)
    }

    /// The process a key of `ask` belongs to (`None`: not such a key). The run's chunk
    /// is not compared: a worker that does not know its run asks `streamwire/*/...`.
    pub fn process_of<'k>(ask: &str, key: &'k str) -> Option<&'k str> {
        let (_, rest) = key.split_once("/@cluster/")?;
        rest.strip_prefix(ask)?.strip_prefix('/')
    }

    /// A worker's liveliness token (`process` is `host/process`).
    pub fn worker(&self, process: &str) -> String {
        format!("{}/worker/{process}", self.prefix)
    }

    /// The prefix of every worker's token, with its trailing `/`.
    pub fn worker_prefix(&self) -> String {
        format!("{}/worker/", self.prefix)
    }
}

/// A worker's request, which names the worker's process (`host/process`).
pub trait Named {
    /// The process the request is for.
    fn process(&self) -> &str;
}

impl Named for JoinRequest {
    fn process(&self) -> &str {
        &self.process
    }
}

impl Named for StateRequest {
    fn process(&self) -> &str {
        &self.process
    }
}

impl Named for ReportRequest {
    fn process(&self) -> &str {
        &self.process
    }
}

/// Asks `key` with `request`; the first answer that reads as `A`, with the key it came
/// from, or `None` if none came within [`QUERY_TIMEOUT`].
pub(crate) fn ask<Q: Serialize, A: for<'de> Deserialize<'de>>(
    session: &zenoh::Session,
    key: &str,
    request: &Q,
) -> Result<Option<(String, A)>, ClusterError> {
    let payload = serde_json::to_vec(request).map_err(|source| ClusterError::Protocol {
        what: "a worker's request",
        source,
    })?;
    let replies = session
        .get(key)
        .payload(payload)
        .timeout(QUERY_TIMEOUT)
        .wait()
        .map_err(crate::engine("a query to the coordinator"))?;
    while let Ok(reply) = replies.recv() {
        match reply.result() {
            Ok(sample) => match serde_json::from_slice::<A>(&sample.payload().to_bytes()) {
                Ok(answer) => return Ok(Some((sample.key_expr().as_str().to_owned(), answer))),
                Err(error) => tracing::warn!("an unreadable answer on {key}: {error}"),
            },
            Err(error) => tracing::debug!("an error reply on {key}: {error:?}"),
        }
    }
    Ok(None)
}

/// Answers `query` with `value`; a failure is logged here, once (the worker will ask
/// again).
pub(crate) fn reply<T: Serialize>(query: &zenoh::query::Query, value: &T) {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            if let Err(error) = query.reply(query.key_expr().clone(), bytes).wait() {
                tracing::warn!("cannot answer a worker: {error}");
            }
        }
        Err(error) => tracing::warn!("cannot encode an answer: {error}"),
    }
}

/// The request a query carries, or `None` (logged) when it has none or it does not read.
pub(crate) fn request<T: for<'de> Deserialize<'de>>(query: &zenoh::query::Query) -> Option<T> {
    let Some(payload) = query.payload() else {
        tracing::warn!("a query without a request on {}", query.key_expr());
        return None;
    };
    match serde_json::from_slice(&payload.to_bytes()) {
        Ok(request) => Some(request),
        Err(error) => {
            tracing::warn!("an unreadable request on {}: {error}", query.key_expr());
            None
        }
    }
}
