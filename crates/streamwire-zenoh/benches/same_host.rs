//! Raw against compressed 720p frames between two processes on one host, through the zenoh
//! transport, with and without shared memory: what a same-host link costs per frame, in
//! CPU on each side and in latency, to choose the `auto` default for such links.
//!
//! ```text
//! cargo bench -p streamwire-zenoh --bench same_host [-- FRAMES_PER_BLOCK PAIRS]
//! ```
//!
//! The two processes hold two pairs of sessions: one pair with zenoh's shared memory on
//! (a 64 MiB pool), one with it off (TCP on loopback only). The parent publishes blocks of
//! frames at 20 fps in four modes, raw and JPEG (q75, the codec's defaults) over each pair,
//! the order of the modes rotated every round so that a drift of the machine's speed falls
//! on all of them; the child (this binary again) receives them as the
//! runtime does (parse the wire frame, read the message; decode the JPEG into a reused
//! buffer). Each process reads its own CPU time at every block boundary, so zenoh's threads
//! are counted. Once a round the parent also encodes and decodes a block's frames alone,
//! with no transport: the JPEG modes' CPU is compared with that floor. Frames: the real camera sequence of `../shared/data` when present, else a
//! synthetic pattern (said in the output; it compresses differently).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cpu_time::ProcessTime;
use streamwire_codec::jpeg::{self, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef};
use streamwire_core::{
    AnyMessage, Durability, Header, History, Message, Qos, Reliability, Timestamp,
};
use streamwire_msgs::{CompressedImage, Image, ImageEncoding};
use streamwire_transport::{FrameBytes, Transport, WireFrame};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};

type Failure = Box<dyn std::error::Error>;

const CHILD_ENV: &str = "SW_SAME_HOST_CHILD";
const REAPER_ENV: &str = "SW_SAME_HOST_REAPER";
const PERIOD: Duration = Duration::from_millis(50);
const KEY: &str = "frames";
const QOS: Qos = Qos {
    reliability: Reliability::Reliable,
    durability: Durability::Volatile,
    history: History::KeepAll,
};

fn main() -> Result<(), Failure> {
    if let Ok(endpoint) = std::env::var(CHILD_ENV) {
        return child(&endpoint);
    }
    if let Ok(parent) = std::env::var(REAPER_ENV) {
        return reap(&parent);
    }
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let per_block: u64 = args.next().map_or(Ok(20), |a| a.parse())?;
    let pairs: u64 = args.next().map_or(Ok(6), |a| a.parse())?;
    parent(per_block, pairs)
}

/// The five modes: (JPEG, shared memory, loaned). Loaned: the sender writes each frame
/// into a loan of its session's shared memory (as a camera writing its pixels would),
/// which is sent by reference; the other raw modes send one ready-made heap buffer per
/// frame, which zenoh copies into its pool (shm) or through the link (tcp), and write
/// nothing themselves: the loaned mode pays a 2.76 MB write they do not.
const MODES: [(bool, bool, bool); 5] = [
    (false, true, true),
    (false, true, false),
    (false, false, false),
    (true, false, false),
    (true, true, false),
];

fn mode_name(mode: (bool, bool, bool)) -> &'static str {
    match mode {
        (false, true, true) => "raw shm loaned",
        (false, true, false) => "raw shm",
        (false, false, _) => "raw tcp",
        (true, false, _) => "jpeg tcp",
        (true, true, _) => "jpeg shm",
    }
}

/// Block `b`'s mode: round `b / 5` rotates the order of the five modes by one.
fn mode_of(block: u64) -> (bool, bool, bool) {
    MODES[((block % 5 + block / 5) % 5) as usize]
}

fn frames() -> Result<(Vec<Bytes>, &'static str), Failure> {
    let dir = streamwire_testdata::dir();
    if dir.join("cockatoo_720p").is_dir() {
        let decoder = JpegDecoder::default();
        let mut out = Vec::new();
        for i in 0..20 {
            let file = std::fs::read(dir.join(streamwire_testdata::cockatoo_frame(i)))?;
            out.push(Bytes::from(decoder.decode(&file, PixelFormat::Rgb8)?.data));
        }
        return Ok((
            out,
            "the real camera sequence (20 frames of ../shared/data/cockatoo_720p)",
        ));
    }
    let mut state = 0x9e37_79b9_u32;
    let frames = (0..20u32)
        .map(|n| {
            let pixels: Vec<u8> = (0..1280 * 720 * 3)
                .map(|i: u32| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    ((i / 3 % 1280 + n * 7) as u8).wrapping_add((state & 15) as u8)
                })
                .collect();
            Bytes::from(pixels)
        })
        .collect();
    Ok((frames, "a synthetic pattern (no ../shared/data here)"))
}

#[expect(
    clippy::too_many_lines,
    reason = "a measurement read top to bottom: both pairs' setup, rotated rounds and table"
)]
fn parent(per_block: u64, pairs: u64) -> Result<(), Failure> {
    let (frames, source) = frames()?;
    let open = |shm: bool| {
        ZenohTransport::open(&ZenohOptions {
            run_id: "same-host-bench".to_owned(),
            shared_memory: pool(shm),
            ..ZenohOptions::default()
        })
    };
    let (on, off) = (open(true)?, open(false)?);
    let endpoint = |t: &ZenohTransport| {
        t.locators()
            .into_iter()
            .find(|l| l.starts_with("tcp/127.0.0.1:"))
            .ok_or("the session listens on no loopback endpoint")
    };
    let mut child = Command::new(std::env::current_exe()?)
        .env(CHILD_ENV, format!("{},{}", endpoint(&on)?, endpoint(&off)?))
        .env("SW_SAME_HOST_PER_BLOCK", per_block.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let publisher_on = on.publisher(KEY, QOS)?;
    let publisher_off = off.publisher(KEY, QOS)?;
    let began = Instant::now();
    while !publisher_on.is_matched() || !publisher_off.is_matched() {
        if began.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            return Err("the child never subscribed".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // The subscription is declared before the match fires; give the child's reader a moment.
    std::thread::sleep(Duration::from_millis(200));

    let options = EncodeOptions::default();
    let loans = on
        .loans()
        .ok_or("the shared-memory session lends nothing")?;
    let blocks = pairs * 5;
    let mut sent_cpu = Vec::new();
    let mut wire_bytes = Vec::new();
    let mut alone_cpu = Vec::new();
    let mut next = Instant::now();
    for block in 0..blocks {
        let cpu = ProcessTime::now();
        let mut bytes = 0usize;
        for i in 0..per_block {
            let seq = block * per_block + i;
            let pixels = &frames[(seq % frames.len() as u64) as usize];
            let header = Header {
                seq,
                publish_time: Timestamp::now(),
            };
            let (jpeg_block, shm_block, loaned_block) = mode_of(block);
            // Encoding is the sender's work in the JPEG blocks, as the encode node's.
            let (message, codec): (Box<dyn AnyMessage>, &str) = if jpeg_block {
                let image = PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, pixels)?;
                let encoded = jpeg::encode(&image, &options)?;
                let message =
                    CompressedImage::new("rgb8; jpeg compressed bgr8", encoded.data, 1280, 720)?;
                (Box::new(message), "jpeg")
            } else if loaned_block {
                let mut loan = match loans.loan(pixels.len()) {
                    Some(shared) => streamwire_core::buffer::Loan::shared(shared),
                    None => streamwire_core::buffer::Loan::heap(pixels.len()),
                };
                loan.copy_from_slice(pixels);
                let message = Image::from_packed(1280, 720, ImageEncoding::Rgb8, loan.freeze())?;
                (Box::new(message), "")
            } else {
                let message = Image::from_packed(1280, 720, ImageEncoding::Rgb8, pixels.clone())?;
                (Box::new(message), "")
            };
            let mut build = |link_seq: u64| {
                WireFrame::encode(&*message, header, link_seq, codec).inspect(|f| bytes += f.len())
            };
            if shm_block {
                publisher_on.put(&mut build)?;
            } else {
                publisher_off.put(&mut build)?;
            }
            next += PERIOD;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        sent_cpu.push(cpu.elapsed());
        wire_bytes.push(bytes);
        if block % 5 == 4 {
            // Once a round: the JPEG work alone, in this process, on the same frames
            // with the same settings (what the JPEG modes cost at the least).
            alone_cpu.push(codec_alone(&frames, per_block, &options)?);
        }
    }
    publisher_off.put(&mut WireFrame::end_of_stream)?;

    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let mut received = Vec::new();
    let mut child_shm = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(shm) = line.strip_prefix("shm ") {
            child_shm = shm.to_owned();
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [block, frames, cpu_ms, p50_ms, max_ms] = fields[..] {
            received.push((
                block.parse::<u64>()?,
                frames.parse::<u64>()?,
                cpu_ms.parse::<f64>()?,
                p50_ms.parse::<f64>()?,
                max_ms.parse::<f64>()?,
            ));
        }
    }
    drop(child.stdin.take());
    child.wait()?;
    let gaps = on.shared_memory_gaps().len();
    on.close();
    off.close();
    // zenoh removes a process's shared-memory segments only once it has ended: the
    // child's now, this process's by a reaper that outlives it.
    streamwire_zenoh::remove_orphaned_shared_memory();
    Command::new(std::env::current_exe()?)
        .env(REAPER_ENV, std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;

    println!(
        "same-host link, two processes, zenoh on loopback: shared memory on (64 MiB pool) and off (TCP); \
         loaned: each frame written into a loan of the pool (the write counted), sent by reference"
    );
    println!("frames: {source}; {per_block} per block at 20 fps, {blocks} blocks interleaved");
    println!(
        "receiver, shared memory: {child_shm}; peers without it on the shared-memory pair: {gaps}"
    );
    println!();
    println!(
        "{:<14} {:>8} {:>10} {:>16} {:>16} {:>16} {:>12} {:>12}",
        "mode",
        "frames",
        "received",
        "sender CPU/frame",
        "receiver CPU/fr",
        "both CPU/frame",
        "latency p50",
        "latency max"
    );
    let mut medians = Vec::new();
    for mode in MODES {
        let mut sender = Vec::new();
        let mut receiver = Vec::new();
        let mut both = Vec::new();
        let mut p50 = Vec::new();
        let mut max: f64 = 0.0;
        let mut got = 0;
        let mut bytes = 0;
        for (block, frames, cpu_ms, block_p50, block_max) in &received {
            let b = *block as usize;
            if mode_of(*block) != mode || b >= sent_cpu.len() {
                continue;
            }
            let s = sent_cpu[b].as_secs_f64() * 1e3 / per_block as f64;
            let r = cpu_ms / per_block as f64;
            sender.push(s);
            receiver.push(r);
            both.push(s + r);
            p50.push(*block_p50);
            max = max.max(*block_max);
            got += frames;
            bytes += wire_bytes[b];
        }
        let name = mode_name(mode);
        let m = (
            median(&mut sender),
            median(&mut receiver),
            median(&mut both),
        );
        println!(
            "{name:<14} {:>8} {got:>10} {:>13.2} ms {:>13.2} ms {:>13.2} ms {:>9.2} ms {:>9.2} ms",
            pairs * per_block,
            m.0,
            m.1,
            m.2,
            median(&mut p50),
            max
        );
        medians.push((
            m.2,
            median(&mut p50),
            bytes as f64 / (pairs * per_block) as f64,
        ));
    }
    let alone = median(&mut alone_cpu);
    println!(
        "{:<14} {:>8} {:>10} {:>16} {:>16} {alone:>13.2} ms",
        "jpeg alone",
        (alone_cpu.len() as u64) * per_block,
        "-",
        "",
        ""
    );
    if let [loaned, raw_shm, raw_tcp, jpeg_tcp, jpeg_shm] = medians[..] {
        println!();
        println!(
            "jpeg tcp / jpeg alone: CPU per frame (both processes) {:.2}x; jpeg shm / jpeg alone: {:.2}x \
             (alone: encode and decode of the same frames in one process, no transport)",
            jpeg_tcp.0 / alone,
            jpeg_shm.0 / alone
        );
        for (what, a, b) in [
            ("raw shm loaned / raw shm", loaned, raw_shm),
            ("raw shm / raw tcp", raw_shm, raw_tcp),
            ("jpeg tcp / raw tcp", jpeg_tcp, raw_tcp),
            ("jpeg shm / raw shm", jpeg_shm, raw_shm),
        ] {
            println!(
                "{what}: CPU per frame (both processes) {:.2}x, latency p50 {:.2}x, wire bytes {:.3}x ({:.0} KB against {:.0} KB)",
                a.0 / b.0,
                a.1 / b.1,
                a.2 / b.2,
                a.2 / 1e3,
                b.2 / 1e3
            );
        }
    }
    println!(
        "(CPU: medians over blocks of each process's CPU time per frame; latency: stamp before encode to message read, or JPEG decoded)"
    );
    Ok(())
}

/// The CPU per frame of encoding `per_block` of `frames` with `options` and decoding each
/// into a reused buffer, as the JPEG modes' two processes do, in this process alone.
fn codec_alone(frames: &[Bytes], per_block: u64, options: &EncodeOptions) -> Result<f64, Failure> {
    let decoder = JpegDecoder::default();
    let mut pixels = Vec::new();
    let cpu = ProcessTime::now();
    for i in 0..per_block {
        let frame = &frames[(i % frames.len() as u64) as usize];
        let image = PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, frame)?;
        let encoded = jpeg::encode(&image, options)?;
        decoder.decode_into(&encoded.data, PixelFormat::Rgb8, &mut pixels)?;
    }
    Ok(cpu.elapsed().as_secs_f64() * 1e3 / per_block as f64)
}

/// Shared memory on (a pool of 64 MiB: 23 raw frames) or off.
fn pool(on: bool) -> SharedMemory {
    if on {
        SharedMemory {
            enabled: true,
            pool_bytes: 64 << 20,
        }
    } else {
        SharedMemory::off()
    }
}

/// Waits (at most 10 s) for process `parent` to end, then removes the shared-memory
/// segments it left.
fn reap(parent: &str) -> Result<(), Failure> {
    let began = Instant::now();
    while std::path::Path::new(&format!("/proc/{parent}")).exists()
        && began.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    streamwire_zenoh::remove_orphaned_shared_memory();
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn child(endpoints: &str) -> Result<(), Failure> {
    let per_block: u64 = std::env::var("SW_SAME_HOST_PER_BLOCK")?.parse()?;
    let (endpoint_on, endpoint_off) = endpoints.split_once(',').ok_or("expected two endpoints")?;
    let open = |endpoint: &str, shm: bool| {
        ZenohTransport::open(&ZenohOptions {
            run_id: "same-host-bench".to_owned(),
            listen: Vec::new(),
            connect: vec![endpoint.to_owned()],
            gossip: false,
            shared_memory: pool(shm),
            ..ZenohOptions::default()
        })
    };
    let (on, off) = (open(endpoint_on, true)?, open(endpoint_off, false)?);
    let (tx, rx) = mpsc::channel::<FrameBytes>();
    let mut subscriptions = Vec::new();
    for transport in [&on, &off] {
        let tx = parking_lot::Mutex::new(tx.clone());
        subscriptions.push(transport.subscribe(
            KEY,
            QOS,
            Arc::new(move |frame| {
                let tx = tx.lock();
                let _ = tx.send(frame);
            }),
        )?);
    }
    drop(tx);
    let accepted = [
        (Image::TYPE_NAME, Image::SCHEMA_VERSION),
        (CompressedImage::TYPE_NAME, CompressedImage::SCHEMA_VERSION),
    ];
    let decoder = JpegDecoder::default();
    let mut pixels = Vec::new();
    let mut out = std::io::stdout().lock();
    let mut block = 0u64;
    let mut cpu = ProcessTime::now();
    let mut latencies: Vec<f64> = Vec::new();
    let mut report = |block: u64, cpu: &ProcessTime, latencies: &mut Vec<f64>| {
        let max = latencies.iter().copied().fold(0.0, f64::max);
        let count = latencies.len();
        let _ = writeln!(
            out,
            "{block} {count} {:.3} {:.3} {max:.3}",
            cpu.elapsed().as_secs_f64() * 1e3,
            median(latencies)
        );
        latencies.clear();
    };
    while let Ok(bytes) = rx.recv_timeout(Duration::from_secs(30)) {
        let frame = WireFrame::parse(bytes)?;
        if frame.end_of_stream {
            break;
        }
        let header = frame.head.header();
        let this = header.seq / per_block;
        if this != block {
            report(block, &cpu, &mut latencies);
            block = this;
            cpu = ProcessTime::now();
        }
        let message = frame.decode_message(&accepted)?;
        if let Some(jpeg) = message.downcast_ref::<CompressedImage>() {
            decoder.decode_into(jpeg.data(), PixelFormat::Rgb8, &mut pixels)?;
        } else if message.downcast_ref::<Image>().is_none() {
            return Err("an unexpected message".into());
        }
        let latency = Timestamp::now().saturating_since(header.publish_time);
        latencies.push(latency.as_secs_f64() * 1e3);
    }
    report(block, &cpu, &mut latencies);
    let stats = on.shared_memory_stats();
    let _ = writeln!(
        out,
        "shm {} frames arrived in shared memory, {} large ones copied (on the shared-memory pair)",
        stats.received_shared, stats.received_large_copied
    );
    drop(subscriptions);
    on.close();
    off.close();
    Ok(())
}
