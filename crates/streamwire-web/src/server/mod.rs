//! The relay's server: the HTTP routes, one websocket per client, one feed per tapped
//! stream. This file starts and stops it ([`Running`]); its parts are one file each:
//!
//! - `shared.rs`: what every thread of the relay shares ([`Shared`]: settings, topics,
//!   feeds, clients, counters);
//! - `routes.rs`: the HTTP routes (`/`: the viewer page or a rosbridge websocket,
//!   `/stats`) and the answers to refused requests;
//! - `client.rs`: one websocket client as the feeds and writer see it ([`Client`], its
//!   subscriptions to a topic, [`ClientTopic`], and their keep-last queues);
//! - `session.rs`: a client from its upgrade to its end: a seat of `max_clients` or turned
//!   away, its reader (the ops of its [`Dialect`], its idle timeout), and forgetting it;
//! - `writer.rs`: a client's writer, one frame per topic in turn, a stalled client
//!   disconnected;
//! - `feeds.rs`: the feeds (a thread per tapped stream) and subscribing a client to them.
//!
//! The rosbridge ops are `crate::rosbridge::Session`'s methods, the Foxglove ops
//! `crate::foxglove::Session`'s: both speak through the same clients and feeds.
//!
//! Threads and queues, and why: a *feed* (a plain thread per stream that some client
//! wants) reads the stream's tap, writes each message once per form asked for, and
//! puts the frame into each subscriber's *slot* (a bounded keep-last queue per client and
//! topic) without ever waiting: a full slot drops its oldest frame and counts it for that
//! client. Each client's *writer* task takes one frame from each of its slots in turn, so
//! a big image stream cannot starve a small one, and gives a send at most
//! `stall_timeout` before disconnecting the client. Nothing a client does reaches the
//! run's threads but its commands (`cmd_vel`), through a bounded counted channel.

mod client;
mod feeds;
mod routes;
mod session;
mod shared;
mod writer;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use streamwire_core::{Context, Counter};
use streamwire_msgs::Twist;

pub(crate) use client::{Client, ClientTopic, MAX_ID, MAX_REPLY_TEXT, clip};
pub(crate) use feeds::{subscribe, unsubscribe};
pub(crate) use routes::authorized_upgrade;
pub(crate) use session::{Dialect, accept_client};
pub(crate) use shared::{Shared, lock};

use crate::access::{Access, random_token};
use crate::listener::{accept_loop, connection_cap};
use crate::{RelayConfig, RelayToken};

/// Browser commands waiting for the relay's next step.
const COMMAND_QUEUE: usize = 64;
/// Clients whose drops the run's report names one by one (see `Running::report_drops`).
const REPORTED_CLIENTS: usize = 32;

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The listen address is taken or not allowed.
    #[error(
        "the web relay cannot listen on {address}: {source}; choose another port with the relay's `port` setting (`-o web.port=N` for an instance `web`; port 0 picks a free one)"
    )]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The relay runs in a runtime without taps (the `Harness` runs one module alone).
    #[error("the web relay needs a run's taps: run it in a blueprint, not alone in the Harness")]
    NoTaps,
    /// The relay's own threads could not start.
    #[error("the web relay cannot start its threads: {0}")]
    Threads(#[source] std::io::Error),
    /// The operating system gave no random bytes for the run's token.
    #[error(
        "the web relay cannot make its token: {0}; set one with the relay's `token` setting (`-o web.token=...`)"
    )]
    Token(#[source] getrandom::Error),
}

/// The relay while it runs.
pub(crate) struct Running {
    address: SocketAddr,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    commands: Receiver<Twist>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    /// Each client's drops in the run's report, by the client's name.
    client_counters: HashMap<String, Counter>,
}

impl Running {
    /// Listens on the relay's address and serves it on a runtime of its own.
    pub(crate) fn start(config: &RelayConfig, cx: &Context<'_>) -> Result<Running, RelayError> {
        let taps = cx.taps().ok_or(RelayError::NoTaps)?;
        let (listener, address) = bind(config.listen)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sw web")
            .enable_all()
            .build()
            .map_err(RelayError::Threads)?;
        let (commands_tx, commands) = std::sync::mpsc::sync_channel(COMMAND_QUEUE);
        let token = match &config.token {
            RelayToken::Random => Some(random_token().map_err(RelayError::Token)?),
            RelayToken::Open => None,
            RelayToken::Fixed(token) => Some(token.clone()),
        };
        let (cap, files_limit) = connection_cap(config.max_connections);
        let access = Access::new(token, address, &config.allowed_origins);
        let shared = Arc::new(Shared::new(config, cx, taps, access, cap, commands_tx));
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(RelayError::Threads)?
        };
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let router = routes::router(&shared);
        runtime.spawn(accept_loop(listener, router, shared.clone(), stop));
        say_where(&shared, address, files_limit);
        Ok(Running {
            address,
            shared,
            runtime: Some(runtime),
            commands,
            shutdown: Some(shutdown),
            client_counters: HashMap::new(),
        })
    }

    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// The token clients must give (`None`: the relay is open).
    pub(crate) fn token(&self) -> Option<&str> {
        self.shared.access.token()
    }

    /// Commands browsers published since the last call.
    pub(crate) fn commands(&self) -> impl Iterator<Item = Twist> + '_ {
        self.commands.try_iter()
    }

    /// Stops serving: clients are closed, feeds end within their poll.
    pub(crate) fn shutdown(&mut self) {
        self.stop();
    }

    /// Adds each client's drops since the last call to its counter `dropped:<client>`
    /// in the run's report (clients that left since included). Counters are made for
    /// the first [`REPORTED_CLIENTS`] names that drop anything; later names share
    /// `dropped:other_clients`, so the report stays bounded however many come and go.
    pub(crate) fn report_drops(&mut self, cx: &Context<'_>) {
        let mut drops: Vec<(String, u64)> = lock(&self.shared.clients)
            .iter()
            .map(|c| (c.report_as.clone(), c.unreported_drops()))
            .collect();
        drops.extend(lock(&self.shared.departed_drops).drain());
        for (name, n) in drops {
            if n == 0 {
                continue;
            }
            let counter = match self.client_counters.get(&name) {
                Some(counter) => counter,
                None => {
                    let key = if self.client_counters.len() < REPORTED_CLIENTS {
                        name
                    } else {
                        "other_clients".to_owned()
                    };
                    self.client_counters
                        .entry(key)
                        .or_insert_with_key(|key| cx.counter(&format!("dropped:{key}")))
                }
            };
            counter.add(n);
        }
    }

    fn stop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for client in lock(&self.shared.clients).iter() {
            client.wake.notify_one();
        }
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A non-blocking listener on `listen` (tokio takes it over), and the address it got.
fn bind(listen: SocketAddr) -> Result<(std::net::TcpListener, SocketAddr), RelayError> {
    let listener = std::net::TcpListener::bind(listen).map_err(|source| RelayError::Bind {
        address: listen,
        source,
    })?;
    let address = listener.local_addr().map_err(RelayError::Threads)?;
    listener
        .set_nonblocking(true)
        .map_err(RelayError::Threads)?;
    Ok((listener, address))
}

/// Logs where to open the relay (with its token), and warns when it asks for none.
fn say_where(shared: &Shared, address: SocketAddr, files_limit: Option<u64>) {
    let cap = shared.connection_cap;
    let limit = files_limit.map_or_else(|| "no".to_owned(), |l| l.to_string());
    match shared.access.token() {
        Some(token) => tracing::info!(
            "web relay: open http://{address}/?token={token} (at most {cap} connections; open-files limit {limit})"
        ),
        None => tracing::warn!(
            "web relay: open http://{address}/ - no token (token = none): any program on this machine may connect (at most {cap} connections; open-files limit {limit})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_says_how_to_choose_another() {
        let error = RelayError::Bind {
            address: SocketAddr::from(([127, 0, 0, 1], 9090)),
            source: std::io::ErrorKind::AddrInUse.into(),
        };
        insta::assert_snapshot!(error.to_string());
    }
}
