//! The relay's sockets under hostile or broken clients: timeouts that close silent,
//! half-sent and idle connections, RFC 6455 close codes for broken frames, a cap on
//! open connections that a stranger without the token cannot fill, and counted drops of
//! replies nobody reads.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::raw::{close_of, closed_by_peer, frame, frames_until_closed, upgrade};
use common::{SyntheticCamera, TestRun, relay_counter, start, stats};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use streamwire_web::RelayConfig;
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(20);

fn camera() -> SyntheticCamera {
    SyntheticCamera::new(64, 48, 10.0, None)
}

fn connect_raw(run: &TestRun) -> TcpStream {
    let stream = TcpStream::connect(run.addr).expect("connects");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    stream
}

/// Waits (bounded) until the run's report has `at_least` of the relay's `counter`.
fn wait_for_counter(run: &TestRun, counter: &str, at_least: u64) -> u64 {
    let deadline = Instant::now() + WAIT;
    loop {
        let n = relay_counter(run, counter);
        if n >= at_least || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn silent_half_sent_and_idle_connections_are_closed() {
    let config = RelayConfig {
        header_timeout: Duration::from_millis(300),
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    // Connected, never a byte.
    let mut silent = connect_raw(&run);
    // Headers begun, never ended.
    let mut half = connect_raw(&run);
    half.write_all(b"GET /stats HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
        .expect("writes");
    // One request answered, then nothing more on a kept-alive connection.
    let mut idle = connect_raw(&run);
    write!(
        idle,
        "GET {} HTTP/1.1\r\nHost: relay\r\n\r\n",
        run.with_token("/stats")
    )
    .expect("writes");
    let mut answer = [0u8; 12];
    idle.read_exact(&mut answer).expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 200");

    assert!(
        closed_by_peer(&mut silent),
        "the silent connection is closed"
    );
    assert!(closed_by_peer(&mut half), "the half-sent one is closed");
    assert!(closed_by_peer(&mut idle), "the idle one is closed");
    assert_eq!(wait_for_counter(&run, "header_timeouts", 3), 3);
    drop(run);
}

#[test]
fn a_silent_websocket_is_pinged_then_closed_with_1001() {
    let config = RelayConfig {
        idle_timeout: Duration::from_millis(600),
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    let (status, mut ws) = upgrade(run.addr, &run.with_token("/"), "").expect("upgrades");
    assert_eq!(status, 101);
    // This client answers nothing: it only reads until the relay closes it.
    let frames = frames_until_closed(&mut ws);
    assert!(
        frames.iter().any(|(opcode, _)| *opcode == 0x9),
        "pinged first: {frames:?}"
    );
    let (code, reason) = close_of(&frames).expect("a close frame");
    assert_eq!(code, 1001, "{reason}");
    assert!(reason.contains("no pong"), "{reason}");
    assert_eq!(wait_for_counter(&run, "idle_disconnects", 1), 1);
    drop(run);
}

/// Sends `bytes` on a fresh websocket and returns the close the relay answers with.
fn close_after(run: &TestRun, bytes: &[u8]) -> (u16, String) {
    let (status, mut ws) = upgrade(run.addr, &run.with_token("/"), "").expect("upgrades");
    assert_eq!(status, 101);
    ws.write_all(bytes).expect("writes");
    let frames = frames_until_closed(&mut ws);
    close_of(&frames).expect("a close frame")
}

#[test]
fn broken_frames_get_their_rfc_6455_close_codes() {
    let run = start(RelayConfig::default(), camera());
    let (code, reason) = close_after(&run, &frame(0x1, &[b'{', 0xFF, 0xFE, b'}'], true));
    assert_eq!(
        code, 1007,
        "invalid UTF-8 is invalid payload data: {reason}"
    );
    let (code, reason) = close_after(&run, &frame(0x3, b"{}", true));
    assert_eq!(code, 1002, "a reserved data opcode: {reason}");
    let (code, reason) = close_after(&run, &frame(0xB, b"", true));
    assert_eq!(code, 1002, "a reserved control opcode: {reason}");
    let (code, reason) = close_after(&run, &frame(0x1, b"{}", false));
    assert_eq!(code, 1002, "an unmasked frame: {reason}");
    assert!(reason.contains("unmasked"), "{reason}");
    assert_eq!(wait_for_counter(&run, "bad_input", 4), 4);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_refused_while_a_client_keeps_receiving() {
    let config = RelayConfig {
        max_connections: 4,
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    let url = format!("ws://{}{}", run.addr, run.with_token("/?client=bystander"));
    let (mut bystander, _) = connect_async(url).await.expect("connects");
    let subscribe = json!({"op": "subscribe", "topic": "/odom"});
    bystander
        .send(Message::Text(subscribe.to_string().into()))
        .await
        .expect("sends");
    let mut odometry = async || loop {
        let frame = tokio::time::timeout(WAIT, bystander.next())
            .await
            .expect("a frame in time");
        match frame {
            Some(Ok(Message::Text(text))) if text.contains("\"/odom\"") => return,
            Some(Ok(_)) => {}
            other => panic!("the bystander lost its connection: {other:?}"),
        }
    };
    odometry().await;

    // Three more take the other places with the token (and hold them: the header timeout
    // is 10 s); a connection without it would make way for a newcomer.
    let holders: Vec<TcpStream> = (0..3).map(|_| authenticated_raw(&run)).collect();
    // Until the relay has accepted them, one more could still get in: wait for the count.
    let deadline = Instant::now() + WAIT;
    while relay_counter(&run, "refused_connections") == 0 {
        assert!(Instant::now() < deadline, "the cap was never reached");
        let mut probe = connect_raw(&run);
        let mut answer = String::new();
        let _ = probe.read_to_string(&mut answer);
        if !answer.is_empty() {
            assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        }
    }
    for _ in 0..5 {
        let mut refused = connect_raw(&run);
        let mut answer = String::new();
        refused
            .read_to_string(&mut answer)
            .expect("answered and closed");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("4 connections"), "{answer}");
    }
    assert!(relay_counter(&run, "refused_connections") >= 5);
    // The bystander never noticed.
    for _ in 0..3 {
        odometry().await;
    }
    // Places freed are places taken.
    drop(holders);
    let deadline = Instant::now() + WAIT;
    let s = loop {
        let mut stream = connect_raw(&run);
        let mut answer = String::new();
        write!(
            stream,
            "GET {} HTTP/1.0\r\nHost: relay\r\n\r\n",
            run.with_token("/stats")
        )
        .expect("writes");
        let _ = stream.read_to_string(&mut answer);
        if answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200") {
            break stats(&run);
        }
        assert!(Instant::now() < deadline, "no place came free: {answer}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        s["totals"]["refused_connections"].as_u64() >= Some(5),
        "{s}"
    );
    assert_eq!(s["connections"]["max"], 4, "{s}");
    drop(run);
}

/// A kept-alive connection that presented the token (its `/stats` answered).
fn authenticated_raw(run: &TestRun) -> TcpStream {
    let mut stream = connect_raw(run);
    write!(
        stream,
        "GET {} HTTP/1.1\r\nHost: relay\r\n\r\n",
        run.with_token("/stats")
    )
    .expect("writes");
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 200");
    stream
}

/// A local stranger without the token: `connections` tasks, each holding one idle
/// connection to `addr` and opening another as soon as the relay closes it, until `stop`.
fn stranger(
    addr: std::net::SocketAddr,
    connections: usize,
    stop: tokio::sync::watch::Receiver<bool>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("stranger".to_owned())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let holders = (0..connections).map(|_| {
                    let mut stop = stop.clone();
                    tokio::spawn(async move {
                        while !*stop.borrow() {
                            let Ok(stream) = tokio::net::TcpStream::connect(addr).await else {
                                tokio::time::sleep(Duration::from_millis(10)).await;
                                continue;
                            };
                            // Idle until the relay answers or closes, then again.
                            tokio::select! {
                                _ = stream.readable() => {}
                                _ = stop.changed() => {}
                            }
                        }
                    })
                });
                for holder in holders.collect::<Vec<_>>() {
                    let _ = holder.await;
                }
            });
        })
        .expect("the stranger's thread starts")
}

/// A stranger without the token holds 300 idle connections (more than `max_connections`,
/// 256) and re-opens each one closed; a client with the token connects 10 times, to the
/// viewer page, the rosbridge and Foxglove websockets and `/stats`: it is served each
/// time, the stranger's oldest connections making way.
#[test]
fn a_stranger_holding_every_connection_cannot_keep_a_client_with_the_token_out() {
    let config = RelayConfig {
        foxglove: true,
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let stranger = stranger(run.addr, 300, stop);
    // Until the relay is full, the client would get in anyway.
    let deadline = Instant::now() + WAIT;
    while relay_counter(&run, "refused_connections") + relay_counter(&run, "evicted_connections")
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the stranger never filled the relay"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut answers = Vec::new();
    for attempt in 0..10 {
        let answer = match attempt % 4 {
            0 => {
                let (status, body) = common::http_get(run.addr, &run.with_token("/"));
                (status, body.contains("<html"))
            }
            1 => upgrade(run.addr, &run.with_token("/"), "").map_or((0, false), |(s, _)| (s, true)),
            2 => upgrade(
                run.addr,
                &run.with_token("/foxglove"),
                "Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n",
            )
            .map_or((0, false), |(s, _)| (s, true)),
            _ => {
                let (status, body) = common::http_get(run.addr, &run.with_token("/stats"));
                (status, body.contains("\"connections\""))
            }
        };
        answers.push(answer);
    }
    let _ = stop_tx.send(true);
    stranger.join().expect("the stranger ends");
    let served = answers
        .iter()
        .filter(|(status, ok)| matches!(status, 101 | 200) && *ok)
        .count();
    assert_eq!(
        served, 10,
        "(status, answer as expected) per attempt: {answers:?}"
    );
    assert!(relay_counter(&run, "evicted_connections") > 0);
    drop(run);
}

/// A connection that presents no token (here a request refused 401, then nothing) is
/// closed at `token_timeout`, long before its header timeout, and counted.
#[test]
fn a_connection_without_the_token_is_closed_at_its_deadline() {
    let config = RelayConfig {
        token_timeout: Duration::from_millis(300),
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    let mut refused = connect_raw(&run);
    write!(refused, "GET /stats HTTP/1.1\r\nHost: relay\r\n\r\n").expect("writes");
    let mut answer = [0u8; 12];
    refused.read_exact(&mut answer).expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 401");
    let mut silent = connect_raw(&run);
    // With the token, kept alive: only the header timeout (10 s) closes it.
    let mut kept = authenticated_raw(&run);
    assert!(closed_by_peer(&mut refused), "closed at its deadline");
    assert!(closed_by_peer(&mut silent), "closed at its deadline");
    assert_eq!(wait_for_counter(&run, "token_timeouts", 2), 2);
    // The rest of its answer, then nothing: still open (a close would read as 0 bytes).
    kept.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a timeout");
    let mut rest = [0u8; 4096];
    let still_open = loop {
        match kept.read(&mut rest) {
            Ok(0) => break false,
            Ok(_) => {}
            Err(e) => {
                break matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    };
    assert!(still_open, "the connection with the token is kept");
    assert_eq!(stats(&run)["totals"]["token_timeouts"], 2);
    drop(run);
}

#[test]
fn replies_nobody_reads_are_dropped_and_counted() {
    let config = RelayConfig {
        stall_timeout: Duration::from_secs(60),
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    let (status, mut ws) =
        upgrade(run.addr, &run.with_token("/?client=deaf"), "").expect("upgrades");
    assert_eq!(status, 101);
    // Each request gets a status reply of about 600 bytes; this client never reads them,
    // so once the socket buffers are full the relay's queue of replies overflows.
    let topic = format!("/{}", "x".repeat(700));
    let request = json!({"op": "subscribe", "topic": topic}).to_string();
    let one = frame(0x1, request.as_bytes(), true);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut sent = 0u64;
    while relay_counter(&run, "replies_dropped") == 0 {
        assert!(
            Instant::now() < deadline,
            "{sent} requests, no reply dropped"
        );
        for _ in 0..1000 {
            ws.write_all(&one).expect("writes");
        }
        sent += 1000;
    }
    let s = stats(&run);
    let deaf = s["clients"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "deaf").cloned())
        .expect("the deaf client");
    assert!(deaf["replies_dropped"].as_u64() > Some(0), "{deaf}");
    assert!(s["totals"]["replies_dropped"].as_u64() > Some(0), "{s}");
    drop(ws);
    drop(run);
}
