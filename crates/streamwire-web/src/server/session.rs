//! A websocket client from its upgrade to its end: a [`Seat`] of `max_clients` or turned
//! away (its protocol's `status`, then a close with 1013), its reader (each text or binary
//! frame to its [`Dialect`]'s session, pings while it is silent, the RFC 6455 close code
//! of a broken frame), its writer started beside it (`writer.rs`), and forgetting it
//! (its subscriptions, its drops kept for the run's report).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::extract::Extension;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures_util::StreamExt;
use futures_util::stream::SplitStream;
use serde_json::json;

use super::client::{Client, clip};
use super::feeds;
use super::shared::{Shared, lock};
use super::writer;
use crate::foxglove;
use crate::listener::Connection;
use crate::rosbridge;

/// How long a client turned away (too many) gets to take its status and close.
const TURN_AWAY_TIMEOUT: Duration = Duration::from_secs(1);

/// The protocol a websocket client speaks, with the client's state in it.
pub(crate) enum Dialect {
    /// rosbridge v2 (`/`).
    Rosbridge(rosbridge::Session),
    /// The Foxglove WebSocket protocol (`/foxglove`).
    Foxglove(foxglove::Session),
}

impl Dialect {
    /// What the client is sent before it asks anything.
    fn greet(&self, shared: &Shared, client: &Client) {
        if let Dialect::Foxglove(session) = self {
            session.greet(shared, client);
        }
    }

    /// Answers one text or binary frame of the client.
    fn handle(&mut self, shared: &Arc<Shared>, client: &Arc<Client>, frame: Message) {
        match self {
            Dialect::Rosbridge(session) => session.handle(shared, client, frame),
            Dialect::Foxglove(session) => session.handle(shared, client, frame),
        }
    }
}

/// Serves an upgrade whose token and origin passed: a seat of `max_clients`, or a client
/// turned away (told so in its protocol's status, closed with 1013).
pub(crate) fn accept_client(
    shared: Arc<Shared>,
    connection: Option<Extension<Arc<Connection>>>,
    upgrade: WebSocketUpgrade,
    name: Option<String>,
    dialect: Dialect,
) -> Response {
    // The websocket keeps its connection's place until it ends.
    let connection = connection.map(|Extension(c)| c);
    if let Some(connection) = &connection {
        connection.upgrading.notify_one();
    }
    let Some(seat) = Seat::claim(&shared) else {
        shared.counters.refused.increment();
        let max_clients = shared.config.max_clients;
        return upgrade
            .max_message_size(1024)
            .on_upgrade(move |socket| async move {
                turn_away(socket, max_clients, &dialect).await;
                drop(connection);
            });
    };
    let limit = shared.config.max_message_bytes;
    let id = shared.next_client.fetch_add(1, Ordering::Relaxed);
    let name: String = name
        .unwrap_or_else(|| format!("client {id}"))
        .chars()
        .take(64)
        .collect();
    upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move {
            serve_client(shared, socket, Client::new(id, name), seat, dialect).await;
            drop(connection);
        })
}

/// One of the relay's `max_clients` places, held by a client from its upgrade until it
/// is gone (dropped with the upgrade's callback if the upgrade fails).
struct Seat(Arc<Shared>);

impl Seat {
    fn claim(shared: &Arc<Shared>) -> Option<Seat> {
        let max = shared.config.max_clients;
        shared
            .seats_taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
                (taken < max).then_some(taken + 1)
            })
            .ok()
            .map(|_| Seat(shared.clone()))
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.seats_taken.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tells a client that the relay is full (a `status` error, then a close with code
/// 1013, try again later) and ends its connection.
async fn turn_away(mut socket: WebSocket, max_clients: usize, dialect: &Dialect) {
    let why = format!("the relay serves at most {max_clients} clients at once; try again later");
    let status = match dialect {
        Dialect::Rosbridge(_) => json!({"op": "status", "level": "error", "msg": why}),
        Dialect::Foxglove(_) => foxglove::status_error(&why, None),
    };
    let _ = tokio::time::timeout(TURN_AWAY_TIMEOUT, async {
        socket
            .send(Message::Text(status.to_string().into()))
            .await?;
        socket
            .send(Message::Close(Some(CloseFrame {
                code: 1013,
                reason: clip(&why, 120).into(),
            })))
            .await
    })
    .await;
}

/// Serves `client` on `socket` until it leaves, stalls or the relay stops; then gives
/// its seat back.
async fn serve_client(
    shared: Arc<Shared>,
    socket: WebSocket,
    client: Client,
    seat: Seat,
    mut dialect: Dialect,
) {
    let client = Arc::new(client);
    shared.counters.clients.increment();
    lock(&shared.clients).push(client.clone());
    dialect.greet(&shared, &client);
    let (sink, stream) = socket.split();
    let writer = {
        let (shared, client) = (shared.clone(), client.clone());
        tokio::spawn(async move {
            writer::write_client(shared, client.clone(), sink).await;
            client.closed.store(true, Ordering::SeqCst);
            client.gone.notify_one();
        })
    };
    read_client(&shared, &client, stream, &mut dialect).await;
    // Let the writer send what is queued (a close reason), then end it.
    client.closed.store(true, Ordering::SeqCst);
    client.wake.notify_one();
    let _ = tokio::time::timeout(shared.config.stall_timeout, writer).await;
    // The place is free once the client is gone from the list (as /stats shows it).
    drop(seat);
    forget_client(&shared, &client);
}

/// Reads the client's frames and answers each in its dialect, until it closes, breaks a
/// frame, stays silent past the idle timeout, its writer ends or the relay stops.
async fn read_client(
    shared: &Arc<Shared>,
    client: &Arc<Client>,
    mut stream: SplitStream<WebSocket>,
    dialect: &mut Dialect,
) {
    loop {
        let Some(frame) = next_frame(shared, client, &mut stream).await else {
            break;
        };
        if shared.stopping.load(Ordering::SeqCst) || client.closed.load(Ordering::SeqCst) {
            break;
        }
        match frame {
            Ok(Message::Close(_)) => break,
            Ok(frame @ (Message::Text(_) | Message::Binary(_))) => {
                dialect.handle(shared, client, frame);
            }
            Ok(_) => {}
            Err(error) => {
                // A broken frame or an oversized message: said in the close, then closed.
                // A connection that just ended gets nothing.
                if let Some((code, reason)) = close_for(error, shared.config.max_message_bytes) {
                    client.bad_input.fetch_add(1, Ordering::Relaxed);
                    shared.counters.bad_input.increment();
                    client.queue_control(shared, close_frame(code, reason));
                }
                break;
            }
        }
    }
}

/// The client's next frame; `None` when it ended, its writer ended, or it was silent
/// for the whole idle timeout (closed with 1001, counted). A silent client is pinged
/// every third of the idle timeout (browsers, roslib and roslibpy answer by themselves).
async fn next_frame(
    shared: &Shared,
    client: &Client,
    stream: &mut SplitStream<WebSocket>,
) -> Option<Result<Message, axum::Error>> {
    let idle_timeout = shared.config.idle_timeout;
    let ping_every = (idle_timeout / 3).max(Duration::from_millis(10));
    let heard = Instant::now();
    loop {
        tokio::select! {
            frame = stream.next() => return frame,
            () = client.gone.notified() => return None,
            () = tokio::time::sleep(ping_every) => {
                if heard.elapsed() < idle_timeout {
                    client.queue_control(shared, Message::Ping(bytes::Bytes::new()));
                    continue;
                }
                shared.counters.idle.increment();
                let reason = format!("silent for {} ms: no frame, no pong", idle_timeout.as_millis());
                client.queue_control(shared, close_frame(1001, reason));
                return None;
            }
        }
    }
}

/// The close code and reason for a websocket error (RFC 6455 section 7.4.1), or `None`
/// when the connection just ended.
fn close_for(error: axum::Error, limit: usize) -> Option<(u16, String)> {
    use tungstenite::error::ProtocolError;
    let error = error.into_inner();
    match error.downcast_ref::<tungstenite::Error>()? {
        // 1009: a message too big to process.
        tungstenite::Error::Capacity(e) => {
            Some((1009, format!("{e} (the limit is {limit} bytes)")))
        }
        // 1007: data inconsistent with the message's type.
        tungstenite::Error::Utf8(_) => Some((1007, "a text message that is not UTF-8".to_owned())),
        tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => None,
        // 1002: a protocol error (an unmasked frame, a reserved opcode or bit, ...).
        tungstenite::Error::Protocol(e) => Some((1002, e.to_string())),
        _ => None,
    }
}

/// A close frame; the reason cut to the 123 bytes a close frame holds.
fn close_frame(code: u16, reason: String) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: clip(&reason, 120).into(),
    }))
}

/// Takes a client that ended off its feeds and the list of clients, keeping its
/// unreported drops for the run's report.
fn forget_client(shared: &Shared, client: &Arc<Client>) {
    for topic in lock(&client.topics).drain(..) {
        feeds::leave_feed(shared, &topic);
    }
    lock(&shared.clients).retain(|c| !Arc::ptr_eq(c, client));
    let unreported = client.unreported_drops();
    if unreported > 0 {
        *lock(&shared.departed_drops)
            .entry(client.report_as.clone())
            .or_default() += unreported;
    }
}
