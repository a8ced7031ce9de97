//! The emulated radio link (`streamwire_replay_bench::link`): the veths are shaped, and
//! the relay adds its delay. Needs root, `ip` and `tc`; skips without them (fails under
//! `STREAMWIRE_REQUIRE=all`).
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns: a failure is the test's failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use streamwire_replay_bench::link::{Link, LinkProfile, Side, in_namespace};

/// Whether links can be built here; else skips, saying why.
fn can_build_links() -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    });
    if !root {
        streamwire_testdata::skip("the emulated link needs root");
        return false;
    }
    for tool in ["ip", "tc"] {
        if Command::new(tool).arg("-V").output().is_err() {
            streamwire_testdata::skip(format!("the emulated link needs `{tool}` (iproute2)"));
            return false;
        }
    }
    true
}

fn link(name: &str, profile: &str) -> Link {
    let tag = format!("t{}-{name}", std::process::id());
    Link::create(&tag, &LinkProfile::parse(profile).unwrap()).unwrap()
}

/// A listener on the laptop's address (in the laptop's namespace).
fn listen(link: &Link) -> (TcpListener, SocketAddr) {
    let address = link.address(Side::Laptop);
    let listener = in_namespace(link.namespace(Side::Laptop), move || {
        TcpListener::bind((address, 0))
    })
    .unwrap()
    .unwrap();
    let local = listener.local_addr().unwrap();
    (listener, local)
}

/// A connection from the robot's namespace.
fn connect(link: &Link, to: SocketAddr) -> TcpStream {
    let stream = in_namespace(link.namespace(Side::Robot), move || {
        TcpStream::connect_timeout(&to, Duration::from_secs(3))
    })
    .unwrap()
    .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    stream
}

/// Byte `i` of a transfer: a pattern the receiver checks, so a frame the relay mangled
/// (and TCP let through) would show.
fn pattern(i: u64) -> u8 {
    (i % 251) as u8
}

/// Sends robot to laptop for `seconds`; returns the bytes the laptop received, intact,
/// within that window, and the window's length.
fn transfer(link: &Link, seconds: f64) -> (u64, f64) {
    let (listener, to) = listen(link);
    let receiver: JoinHandle<(u64, f64)> = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(seconds);
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut buffer = vec![0u8; 1 << 16];
        let mut received = 0u64;
        while Instant::now() < end {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    for (k, byte) in buffer[..n].iter().enumerate() {
                        assert_eq!(
                            *byte,
                            pattern(received + k as u64),
                            "byte {}",
                            received + k as u64
                        );
                    }
                    received += n as u64;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("{e}"),
            }
        }
        (received, start.elapsed().as_secs_f64())
    });
    let mut stream = connect(link, to);
    let block: Vec<u8> = (0..(1u64 << 16) * 251).map(pattern).collect();
    let mut sent = 0u64;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds + 2.0);
    while !receiver.is_finished() && Instant::now() < deadline {
        let at = (sent % 251) as usize;
        match stream.write(&block[at..at + (1 << 16)]) {
            Ok(n) => sent += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break, // the receiver is gone
        }
    }
    drop(stream);
    receiver.join().unwrap()
}

#[test]
fn the_veth_is_shaped_three_ways() {
    if !can_build_links() {
        return;
    }
    let rate_mbit_s = 20.0;
    let link = link("shape", "rate=20mbit,delay=0ms,jitter=0ms");
    let before = link.counters().unwrap();
    // 1. Shaped: robot to laptop, through robot0's tbf.
    let (shaped, seconds) = transfer(&link, 2.5);
    let ceiling = rate_mbit_s * 1e6 / 8.0 * seconds * 1.2;
    let shaped_rate = shaped as f64 * 8.0 / seconds / 1e6;
    println!("shaped: {shaped} bytes in {seconds:.2} s, {shaped_rate:.1} Mbit/s");
    assert!(
        (shaped as f64) < ceiling,
        "a 20 Mbit/s link carried {shaped} bytes in {seconds:.2} s (ceiling {ceiling:.0})"
    );
    assert!(shaped > 0, "nothing crossed the link");
    // 3. The qdisc saw the shaping: packets waited for tokens, or were queued.
    let qdiscs = link.qdiscs().unwrap();
    println!("{qdiscs:?}");
    let robot = qdiscs.iter().find(|q| q.device == "robot0").unwrap();
    assert_eq!(robot.kind, "tbf");
    assert!(
        robot.overlimits > 0 || robot.backlog_bytes > 0,
        "robot0's qdisc shows no shaping: {robot:?}"
    );
    let after = link.counters().unwrap();
    println!("{after:?}");
    assert!(after.robot_to_laptop_bytes - before.robot_to_laptop_bytes >= shaped);
    // The relay read every frame the shaped link carried.
    assert_eq!(after.robot_to_laptop_missed, 0, "{after:?}");
    // 2. Unshaped: the same path with robot0's qdisc removed.
    let out = link
        .command(Side::Robot, "tc")
        .args(["qdisc", "del", "dev", "robot0", "root"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (unshaped, seconds) = transfer(&link, 1.5);
    let unshaped_rate = unshaped as f64 * 8.0 / seconds / 1e6;
    println!(
        "unshaped through the relay: {unshaped} bytes in {seconds:.2} s, {unshaped_rate:.1} Mbit/s ({:.1} MB/s); relay {:?}",
        unshaped as f64 / seconds / 1e6,
        link.relay_stats()
    );
    println!("{:?}", link.counters().unwrap());
    // Every frame crossed: none too large for a raw socket (GSO is off), none refused.
    let relay = link.relay_stats().robot_to_laptop;
    assert_eq!(
        (relay.unsent_frames, relay.queue_full_frames),
        (0, 0),
        "{relay:?}"
    );
    if unshaped_rate < 3.0 * rate_mbit_s {
        streamwire_testdata::skip(format!(
            "this machine is too slow to tell: unshaped, the link carried {unshaped_rate:.1} Mbit/s, \
             under 3 x the shaped {rate_mbit_s} Mbit/s"
        ));
    }
}

/// Round trips of a 64-byte message robot to laptop and back, ms.
fn ping_pong(link: &Link, rounds: usize) -> Vec<f64> {
    let (listener, to) = listen(link);
    let echo = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let mut message = [0u8; 64];
        while stream.read_exact(&mut message).is_ok() {
            stream.write_all(&message).unwrap();
        }
    });
    let mut stream = connect(link, to);
    stream.set_nodelay(true).unwrap();
    let mut rtts = Vec::new();
    let mut message = [7u8; 64];
    for _ in 0..rounds {
        let start = Instant::now();
        stream.write_all(&message).unwrap();
        stream.read_exact(&mut message).unwrap();
        rtts.push(start.elapsed().as_secs_f64() * 1e3);
    }
    drop(stream);
    echo.join().unwrap();
    rtts
}

#[test]
fn the_relay_adds_its_delay_to_a_ping_pong() {
    if !can_build_links() {
        return;
    }
    for (name, profile, delay_ms, jitter_ms) in [
        ("delay", "rate=100,delay=20,jitter=0", 20.0, 0.0),
        ("jitter", "rate=100,delay=20,jitter=10", 20.0, 10.0),
    ] {
        let link = link(name, profile);
        let rtts = ping_pong(&link, 20);
        let (min, max) = rtts
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        println!("{profile}: round trips {min:.2}..{max:.2} ms: {rtts:.1?}");
        // Each way holds every frame at least delay - jitter.
        let floor = 2.0 * (delay_ms - jitter_ms);
        assert!(
            rtts.iter().all(|&r| r >= floor),
            "{profile}: a round trip under {floor} ms: {rtts:?}"
        );
        let stats = link.relay_stats();
        println!("{stats:?}");
        for direction in [stats.robot_to_laptop, stats.laptop_to_robot] {
            assert!(direction.frames >= 20, "{profile}: {stats:?}");
            assert_eq!(direction.unsent_frames, 0, "{profile}: {stats:?}");
            assert_eq!(direction.queue_full_frames, 0, "{profile}: {stats:?}");
        }
    }
}

#[test]
fn a_dropped_link_leaves_no_namespace() {
    if !can_build_links() {
        return;
    }
    let link = link("drop", "wifi");
    let names: Vec<String> = [Side::Robot, Side::Laptop]
        .iter()
        .map(|&s| link.namespace(s).to_owned())
        .chain([link.air_namespace().to_owned()])
        .collect();
    assert!(
        link.describe().contains("random loss is not emulated"),
        "{}",
        link.describe()
    );
    for name in &names {
        assert!(
            std::path::Path::new("/run/netns").join(name).exists(),
            "{name}"
        );
    }
    let start = Instant::now();
    drop(link);
    let took = start.elapsed();
    for name in &names {
        assert!(
            !std::path::Path::new("/run/netns").join(name).exists(),
            "{name}"
        );
    }
    println!("dropping the link took {took:?}");
}

#[test]
fn a_bad_profile_or_tag_is_refused_before_anything_is_made() {
    let mut profile = LinkProfile::wifi();
    profile.delay_ms = -1.0;
    let e = Link::create("bad", &profile).err().unwrap();
    assert!(
        e.to_string()
            .contains("delay -1 ms is out of range: expected 0..=2000 ms"),
        "{e}"
    );
    let e = Link::create("no spaces", &LinkProfile::wifi())
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("expected 1 to 32 letters, digits"),
        "{e}"
    );
    assert!(!std::path::Path::new("/run/netns/sw-bad-robot").exists());
}
