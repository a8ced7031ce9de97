//! A rosbridge client over a real websocket, shared by the protocol and rosbridge tests.

use futures_util::SinkExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

use super::TestRun;

/// A client's websocket.
pub type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects to the relay at `/{query}` with the run's token.
pub async fn connect(run: &TestRun, query: &str) -> Ws {
    let path = run.with_token(&format!("/{query}"));
    let (ws, _) = connect_async(format!("ws://{}{path}", run.addr))
        .await
        .expect("connects");
    ws
}

/// Sends `value` as a JSON text frame.
pub async fn send(ws: &mut Ws, value: Value) {
    ws.send(Message::Text(value.to_string().into()))
        .await
        .expect("sends");
}
