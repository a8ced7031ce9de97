//! A client's writer: a task per client that sends its control replies, then one frame
//! from each of its topics' keep-last queues in turn (a big image stream cannot starve a
//! small one), and gives each send at most `stall_timeout`: a client that stops reading
//! is disconnected, counted, and never slows the feeds (they only fill its queues).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use futures_util::SinkExt;
use futures_util::stream::SplitSink;

use super::client::Client;
use super::shared::{Shared, lock};

/// How long an idle writer sleeps before looking again, when nothing wakes it.
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// Whether the writer goes on after a send.
enum Sent {
    /// The frame went.
    Going,
    /// The client is gone, stalled or closed: the writer ends.
    Ended,
}

/// Writes `client`'s queued frames to `sink` until the client closes, stalls or the
/// relay stops.
pub(super) async fn write_client(
    shared: Arc<Shared>,
    client: Arc<Client>,
    mut sink: SplitSink<WebSocket, Message>,
) {
    let mut turn = 0usize;
    loop {
        let frames = take_frames(&client, turn);
        turn = turn.wrapping_add(1);
        if frames.is_empty() {
            if client.closed.load(Ordering::SeqCst) || shared.stopping.load(Ordering::SeqCst) {
                break;
            }
            tokio::select! {
                () = client.wake.notified() => {}
                () = tokio::time::sleep(IDLE_LOOK) => {}
            }
            continue;
        }
        for frame in frames {
            if let Sent::Ended = send(&shared, &client, &mut sink, frame).await {
                return;
            }
        }
    }
    let _ = sink.close().await;
}

/// The control replies queued, then one frame of each topic, starting at topic `turn`.
fn take_frames(client: &Client, turn: usize) -> Vec<Message> {
    let mut frames = Vec::new();
    while let Some(frame) = client.control.pop() {
        frames.push(frame);
    }
    // One frame per topic in turn: a big stream cannot starve a small one.
    let topics = lock(&client.topics);
    let n = topics.len();
    for k in 0..n {
        if let Some(outgoing) = topics[(turn + k) % n].slot.pop() {
            frames.extend(outgoing.iter().cloned());
        }
    }
    frames
}

/// Sends one frame within the stall timeout, counting what went; a close frame ends
/// the writer once sent.
async fn send(
    shared: &Shared,
    client: &Client,
    sink: &mut SplitSink<WebSocket, Message>,
    frame: Message,
) -> Sent {
    let closing = matches!(frame, Message::Close(_));
    let counted = matches!(frame, Message::Text(_) | Message::Binary(_));
    let len = match &frame {
        Message::Text(t) => t.len(),
        Message::Binary(b) => b.len(),
        _ => 0,
    } as u64;
    match tokio::time::timeout(shared.config.stall_timeout, sink.send(frame)).await {
        Ok(Ok(())) if counted => {
            client.sent.fetch_add(1, Ordering::Relaxed);
            shared.counters.frames_sent.increment();
            shared.counters.bytes_sent.add(len);
        }
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            client.closed.store(true, Ordering::SeqCst);
            return Sent::Ended;
        }
        Err(_) => {
            // The client stopped reading: disconnect it, counted.
            shared.counters.stalled.increment();
            client.closed.store(true, Ordering::SeqCst);
            return Sent::Ended;
        }
    }
    if closing {
        client.closed.store(true, Ordering::SeqCst);
        let _ = sink.close().await;
        return Sent::Ended;
    }
    Sent::Going
}
