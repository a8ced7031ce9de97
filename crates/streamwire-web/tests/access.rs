//! Who gets in: the run's token on every route, and the Origin allow-list on the
//! websocket upgrade. Refusals are clear statuses, counted.

mod common;

use std::time::Duration;

use common::raw::upgrade;
use common::{SyntheticCamera, TestRun, http_get, http_get_with, start, stats};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use streamwire_web::{RelayConfig, RelayToken};
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

fn camera() -> SyntheticCamera {
    SyntheticCamera::new(64, 48, 10.0, None)
}

/// Connects a websocket to `path` with these headers, and proves it is served: a
/// service call is answered.
async fn served(run: &TestRun, path: &str, headers: &[(&'static str, String)]) {
    let mut request = format!("ws://{}{path}", run.addr)
        .into_client_request()
        .expect("a request");
    for (name, value) in headers {
        request
            .headers_mut()
            .insert(*name, HeaderValue::from_str(value).expect("a header value"));
    }
    let (mut ws, _) = connect_async(request).await.expect("served");
    let call = json!({"op": "call_service", "service": "/rosapi/topics", "id": "in"});
    ws.send(Message::Text(call.to_string().into()))
        .await
        .expect("sends");
    let reply = loop {
        let frame = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("an answer in time");
        if let Some(Ok(Message::Text(text))) = frame {
            break serde_json::from_str::<Value>(&text).expect("JSON");
        }
        assert!(frame.is_some(), "closed before answering");
    };
    assert_eq!(reply["id"], "in", "{reply}");
}

fn status_of_upgrade(run: &TestRun, path: &str, extra: &str) -> u16 {
    upgrade(run.addr, path, extra).expect("an answer").0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_needs_the_token_and_an_allowed_origin() {
    let run = start(RelayConfig::default(), camera());
    let token = run.token.clone().expect("a token by default");
    assert_eq!(token.len(), 48, "192 bits in hex: {token}");
    assert_eq!(run.url, format!("http://{}/?token={token}", run.addr));
    let own = format!("Origin: http://127.0.0.1:{}\r\n", run.addr.port());

    // No token, a wrong one: 401, whatever the origin.
    assert_eq!(status_of_upgrade(&run, "/", &own), 401);
    assert_eq!(status_of_upgrade(&run, "/?token=wrong", &own), 401);
    assert_eq!(
        status_of_upgrade(&run, "/", "Authorization: Bearer wrong\r\n"),
        401
    );
    // The token from a foreign page: 403.
    let with_token = run.with_token("/");
    assert_eq!(
        status_of_upgrade(&run, &with_token, "Origin: http://evil.example\r\n"),
        403
    );
    assert_eq!(
        status_of_upgrade(&run, &with_token, "Origin: http://127.0.0.1:1\r\n"),
        403,
        "another port is another origin"
    );

    // Both: served. The relay's own origins, the token in the query or as a bearer, and a
    // client sending no Origin (not a browser).
    let port = run.addr.port();
    served(
        &run,
        &with_token,
        &[("Origin", format!("http://127.0.0.1:{port}"))],
    )
    .await;
    served(
        &run,
        &with_token,
        &[("Origin", format!("http://localhost:{port}"))],
    )
    .await;
    served(&run, "/", &[("Authorization", format!("Bearer {token}"))]).await;
    served(&run, &with_token, &[]).await;

    let s = stats(&run);
    assert_eq!(s["totals"]["refused_token"], 3, "{s}");
    assert_eq!(s["totals"]["refused_origin"], 2, "{s}");
    assert_eq!(s["totals"]["clients"], 4, "{s}");
    drop(run);
}

#[test]
fn the_page_and_stats_need_the_token_too() {
    let run = start(RelayConfig::default(), camera());
    let token = run.token.clone().expect("a token");
    let (status, body) = http_get(run.addr, "/");
    assert_eq!(status, 401);
    assert!(body.contains("?token="), "says how to get in: {body}");
    assert_eq!(http_get(run.addr, "/stats").0, 401);
    assert_eq!(http_get(run.addr, "/stats?token=nope").0, 401);
    let (status, page) = http_get(run.addr, &run.with_token("/"));
    assert_eq!(status, 200);
    assert!(page.contains("swViewer"), "the viewer page");
    let bearer = format!("Authorization: Bearer {token}\r\n");
    assert_eq!(http_get_with(run.addr, "/stats", &bearer).0, 200);
    assert_eq!(stats(&run)["totals"]["refused_token"], 3);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_origins_are_still_checked() {
    let config = RelayConfig::default()
        .without_token()
        .allow_origin("https://app.foxglove.dev");
    assert_eq!(config.token, RelayToken::Open);
    let run = start(config, camera());
    assert_eq!(run.token, None);
    assert_eq!(run.url, format!("http://{}/", run.addr));
    assert_eq!(
        status_of_upgrade(&run, "/", "Origin: http://evil.example\r\n"),
        403
    );
    served(
        &run,
        "/",
        &[("Origin", "https://app.foxglove.dev".to_owned())],
    )
    .await;
    served(&run, "/", &[]).await;
    assert_eq!(http_get(run.addr, "/stats").0, 200);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_ones_own() {
    let run = start(RelayConfig::default().with_token("s3cret"), camera());
    assert_eq!(run.token.as_deref(), Some("s3cret"));
    assert_eq!(status_of_upgrade(&run, "/?token=s3cre", ""), 401);
    served(&run, "/?token=s3cret", &[]).await;
    drop(run);
}
