//! The relay's accept loop: a cap on open connections (those without the token evicted
//! first), a deadline to present the token, and hyper's header read timeout.
//!
//! Why not `axum::serve`: it sets no header read timeout (hyper's needs a timer, which it
//! does not give) and accepts every connection until the process runs out of files, after
//! which neither new clients nor `/stats` get in. Here each connection takes a place of
//! [`Shared::connection_cap`] (below the open-files limit) or is answered `503` and closed
//! at once, and is served by hyper's http1 builder with its timer, so a connection that
//! sends no headers in time (silent, half-sent, or idle after its last response) is closed.
//! A websocket keeps its connection's place until it ends. A connection counts as
//! unauthenticated until a request of it presents the token: it is closed at
//! `token_timeout`, and when the relay is full the oldest of them makes way for a
//! newcomer ([`ConnectionBook`]); only when every place has presented the token is a
//! newcomer answered `503`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tower::ServiceExt as _;

use crate::access::more_since;
use crate::server::{Shared, lock};

/// How long the loop waits after a failed accept (out of files): the connection stays
/// queued in the kernel, and a loop retrying at once would only spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The most connections the relay keeps: `setting`, lowered to half the process's
/// open-files limit (the run's other files, its transports and shared memory, need the
/// rest), at least 1. Also returns the limit, when there is one.
pub(crate) fn connection_cap(setting: usize) -> (usize, Option<u64>) {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let cap = match limit {
        Some(limit) => setting.min(usize::try_from(limit / 2).unwrap_or(usize::MAX)),
        None => setting,
    };
    (cap.max(1), limit)
}

/// The relay's open connections, told apart by whether they presented the token.
///
/// Why apart: a connection's token comes with its first request, after it is accepted, so
/// a stranger's idle connections and a client's look alike at the accept. A stranger
/// holding every place (and re-opening each one closed) would turn every client away;
/// here a connection without the token is evicted, the oldest first, to make way for a
/// new one, and only connections that presented it keep their places against newcomers.
#[derive(Default)]
pub(crate) struct ConnectionBook {
    /// Connections that presented the token (never evicted).
    authenticated: usize,
    /// Connections that have not, by arrival: told to close when evicted.
    unauthenticated: BTreeMap<u64, Arc<Notify>>,
    next: u64,
}

impl ConnectionBook {
    /// `(authenticated, unauthenticated)` connections open now.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.authenticated, self.unauthenticated.len())
    }
}

/// One of the relay's connection places, given back when dropped.
pub(crate) struct ConnectionPlace {
    shared: Arc<Shared>,
    /// Its arrival number in the [`ConnectionBook`].
    number: u64,
    /// Told when the place is taken back for a newcomer.
    evicted: Arc<Notify>,
    authenticated: AtomicBool,
}

impl ConnectionPlace {
    /// A place for a new connection: a free one, or the oldest unauthenticated
    /// connection's (told to close); `None` when every place is authenticated.
    fn claim(shared: &Arc<Shared>) -> Option<ConnectionPlace> {
        let mut book = lock(&shared.connections);
        let (authenticated, unauthenticated) = book.counts();
        if authenticated + unauthenticated >= shared.connection_cap {
            let (_, oldest) = book.unauthenticated.pop_first()?;
            oldest.notify_one();
            shared.counters.evicted_connections.increment();
        }
        let number = book.next;
        book.next += 1;
        let evicted = Arc::new(Notify::new());
        book.unauthenticated.insert(number, evicted.clone());
        Some(ConnectionPlace {
            shared: shared.clone(),
            number,
            evicted,
            authenticated: AtomicBool::new(false),
        })
    }

    /// Marks the connection as having presented the token: it is no longer evicted nor
    /// closed at `token_timeout`. False if it was evicted already (it is closing).
    pub(crate) fn authenticate(&self) -> bool {
        if self.authenticated.load(Ordering::SeqCst) {
            return true;
        }
        let mut book = lock(&self.shared.connections);
        if book.unauthenticated.remove(&self.number).is_none() {
            return false;
        }
        book.authenticated += 1;
        self.authenticated.store(true, Ordering::SeqCst);
        true
    }

    fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::SeqCst)
    }
}

impl Drop for ConnectionPlace {
    fn drop(&mut self) {
        let mut book = lock(&self.shared.connections);
        if self.authenticated.load(Ordering::SeqCst) {
            book.authenticated -= 1;
        } else {
            // Absent when evicted: its place was given to the newcomer.
            book.unauthenticated.remove(&self.number);
        }
    }
}

/// A connection as its requests see it (a request extension): its place, which a
/// websocket keeps, and the signal that an upgrade was answered.
pub(crate) struct Connection {
    /// Held while the connection or its websocket lives.
    pub(crate) place: ConnectionPlace,
    /// Told when the handler answered an upgrade: the handshake's clock starts.
    pub(crate) upgrading: tokio::sync::Notify,
}

/// Accepts connections until `stop`.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: Router,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _peer)) => match ConnectionPlace::claim(&shared) {
                Some(place) => {
                    tokio::spawn(serve_connection(
                        stream,
                        router.clone(),
                        shared.clone(),
                        place,
                    ));
                }
                None => turn_away(&shared, &stream),
            },
            Err(error) => {
                shared.counters.accept_errors.increment();
                if let Some(unsaid) = shared.logs.accept_errors.note() {
                    tracing::warn!(
                        "web relay: cannot accept a connection: {error}{}",
                        more_since(unsaid)
                    );
                }
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// Answers a connection beyond the cap (every place taken by one with the token) `503` (if its socket takes it now) and closes it.
fn turn_away(shared: &Shared, stream: &TcpStream) {
    shared.counters.refused_connections.increment();
    let cap = shared.connection_cap;
    if let Some(unsaid) = shared.logs.refused_connections.note() {
        tracing::warn!(
            "web relay: {cap} connections open, all with the token, the most it keeps \
             (`max_connections`, under the open-files limit); refusing more{}",
            more_since(unsaid)
        );
    }
    let body =
        format!("the relay has {cap} connections open, the most it keeps; try again later\n");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // Never waits: what the client already sent is read first (closing a socket with
    // unread bytes resets it, and the client would lose the answer), then the answer goes
    // into the socket's buffer if it fits.
    let mut scratch = [0u8; 4096];
    let _ = stream.try_read(&mut scratch);
    let _ = stream.try_write(response.as_bytes());
}

/// Serves one connection's requests; an upgrade hands it to its websocket. A connection
/// that has not presented the token is closed when evicted or at `token_timeout`.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    shared: Arc<Shared>,
    place: ConnectionPlace,
) {
    let connection = Arc::new(Connection {
        place,
        upgrading: tokio::sync::Notify::new(),
    });
    let service = {
        let connection = connection.clone();
        hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(connection.clone());
            router.clone().oneshot(request)
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(shared.config.header_timeout);
    let served = http
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(served);
    let token_deadline = tokio::time::sleep(shared.config.token_timeout);
    tokio::pin!(token_deadline);
    let mut deadline_passed = false;
    let result = loop {
        tokio::select! {
            result = &mut served => break result,
            () = connection.upgrading.notified() => {
                // The 101 is answered: hyper writes it and hands the socket over.
                match tokio::time::timeout(shared.config.handshake_timeout, &mut served).await {
                    Ok(result) => break result,
                    Err(_) => {
                        shared.counters.handshake_timeouts.increment();
                        tracing::debug!("web relay: a websocket handshake did not complete in time");
                        return;
                    }
                }
            }
            // Counted when evicted (`evicted_connections`).
            () = connection.place.evicted.notified() => return,
            () = &mut token_deadline, if !deadline_passed => {
                deadline_passed = true;
                if !connection.place.is_authenticated() {
                    shared.counters.token_timeouts.increment();
                    tracing::debug!("web relay: a connection presented no token in time");
                    return;
                }
            }
        }
    };
    if let Err(error) = result {
        if error.is_timeout() {
            // Headers not sent in time: a silent, half-sent or idle connection.
            shared.counters.header_timeouts.increment();
        }
        tracing::debug!(%error, "web relay: connection closed");
    }
}
