//! The emulated radio link between a blueprint's `robot` and `laptop` processes.
//!
//! Three network namespaces per link: `robot`, `laptop` and, between them, `air`. A veth
//! joins `robot0` (robot, 10.203.0.1/24) to `air-r` (air), another `laptop0` (laptop,
//! 10.203.0.2/24) to `air-l` (air); the two ends are one Ethernet segment, bridged in user
//! space by the [`relay`] (threads of the calling process with raw sockets in `air`), which
//! holds every frame for the delay ± jitter (uniform, in order). A delaying TCP proxy would
//! not do: the workers gossip and connect to each other directly, over mutual TLS.
//!
//! **The rate** is shaped by `tbf` on the egress of `robot0` (robot to laptop) and of
//! `laptop0` (laptop to robot), where the sender's own stack sees the queue (TCP backs off
//! as it would behind a radio). `tbf` over `htb`: one qdisc per device instead of three
//! objects, the same token bucket, and a queue limit in bytes. The queue holds 100 ms at
//! the link's rate (at least 16 full frames): a wifi access point or driver queue holds
//! tens to hundreds of ms, and a frame that finds it full is dropped (counted in the
//! qdisc's drops). The bucket holds 2 ms at the rate (at least 2 full frames).
//!
//! **Random loss is not emulated**: frames are lost only to a full queue.
//!
//! **What the relay costs** (measured on the 2-core VM this was written on): unshaped, a
//! TCP transfer through it carries 39-44 MB/s (310-350 Mbit/s), so a faster `rate=` is
//! capped by the relay, not by `tbf`; with delay 0 it adds about 0.06 ms to a 64-byte TCP
//! ping-pong (medians 0.075 against 0.014 ms over a direct veth, 0.102 against 0.042 ms in
//! a busier run). `htb` measured the same as `tbf` at 20 Mbit/s (19.0 against 18.9-19.1
//! Mbit/s of TCP payload). With jitter, frames close together wait for the ones before
//! them (no reordering), so a busy direction sees more than the mean delay.
//!
//! Needs root, `ip` and `tc` (iproute2), and network namespaces.

mod checksum;
mod profile;
pub mod relay;

use std::ffi::OsStr;
use std::fs::File;
use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use self::profile::{DELAY_RANGE_MS, LinkProfile, RATE_RANGE_MBIT_S};
pub use self::relay::{DirectionStats, RelayStats};
use crate::BenchError;

/// The robot's address on the link.
pub const ROBOT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 203, 0, 1);
/// The laptop's address on the link.
pub const LAPTOP_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 203, 0, 2);
/// The robot's device (in the robot's namespace).
pub const ROBOT_DEVICE: &str = "robot0";
/// The laptop's device (in the laptop's namespace).
pub const LAPTOP_DEVICE: &str = "laptop0";
/// Largest Ethernet frame on the link (MTU 1500).
const FRAME: f64 = 1514.0;

/// One end of the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// Where the blueprint's `robot` processes run.
    Robot,
    /// Where the blueprint's `laptop` processes run.
    Laptop,
}

/// Bytes and packets each way, from the veths' own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkCounters {
    /// Frames `air-r` received (from the robot) that the relay never read: the kernel
    /// dropped them at the relay's socket, its buffer full (or they were still in it).
    pub robot_to_laptop_missed: u64,
    /// Frames `air-l` received (from the laptop) that the relay never read.
    pub laptop_to_robot_missed: u64,
    /// `robot0` tx bytes.
    pub robot_to_laptop_bytes: u64,
    /// `robot0` tx packets.
    pub robot_to_laptop_packets: u64,
    /// `laptop0` tx bytes.
    pub laptop_to_robot_bytes: u64,
    /// `laptop0` tx packets.
    pub laptop_to_robot_packets: u64,
}

/// The shaping qdisc of one device, from `tc -s -j qdisc show`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QdiscStats {
    /// `robot0` or `laptop0`.
    pub device: String,
    /// The qdisc (`tbf`).
    pub kind: String,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Times a packet had to wait for tokens.
    pub overlimits: u64,
    /// Packets dropped (the queue was full).
    pub drops: u64,
    /// Bytes queued now.
    pub backlog_bytes: u64,
    /// Packets queued now.
    pub qlen: u64,
}

/// A running link: three namespaces, two shaped veths and the relay. Dropping it stops
/// the relay and deletes the namespaces (which deletes the veths).
pub struct Link {
    profile: LinkProfile,
    robot: String,
    laptop: String,
    air: String,
    queue_limit_bytes: u64,
    relay: Option<relay::Relay>,
}

impl Link {
    /// Builds the link. `tag` makes the namespaces' names unique (`sw-<tag>-robot`,
    /// `-laptop`, `-air`); stale namespaces of the same names are removed first.
    pub fn create(tag: &str, profile: &LinkProfile) -> Result<Link, BenchError> {
        if tag.is_empty()
            || tag.len() > 32
            || !tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(BenchError::Usage(format!(
                "link tag `{tag}`: expected 1 to 32 letters, digits, - or _"
            )));
        }
        profile
            .check()
            .map_err(|e| BenchError::Usage(format!("link {profile}: {e}")))?;
        if !is_root() {
            return Err(BenchError::Cell(
                "the emulated link needs root (network namespaces, veths, qdiscs)".to_owned(),
            ));
        }
        for tool in ["ip", "tc"] {
            if let Err(e) = Command::new(tool).arg("-V").output() {
                return Err(BenchError::Cell(format!(
                    "the emulated link needs `{tool}` (iproute2): cannot run it: {e}"
                )));
            }
        }
        let rate_bytes_s = profile.rate_mbit_s * 1e6 / 8.0;
        let mut link = Link {
            profile: profile.clone(),
            robot: format!("sw-{tag}-robot"),
            laptop: format!("sw-{tag}-laptop"),
            air: format!("sw-{tag}-air"),
            queue_limit_bytes: (rate_bytes_s * 0.1).max(16.0 * FRAME) as u64,
            relay: None,
        };
        link.delete_namespaces();
        // From here on, a failure drops `link`, which deletes what was made.
        link.build(rate_bytes_s)?;
        // The relay's sockets are bound while every device is still down: each sees every
        // frame its device ever receives, and nothing from before it was bound.
        link.relay = Some(relay::Relay::start(
            &link.air,
            Duration::from_secs_f64(profile.delay_ms / 1e3),
            Duration::from_secs_f64(profile.jitter_ms / 1e3),
        )?);
        link.bring_up()?;
        Ok(link)
    }

    fn build(&self, rate_bytes_s: f64) -> Result<(), BenchError> {
        let (robot, laptop, air) = (&self.robot, &self.laptop, &self.air);
        for ns in [robot, laptop, air] {
            run("ip", &["netns", "add", ns])?;
        }
        // No IPv6 in `air`: its kernel sends nothing on the relay's devices.
        disable_ipv6(air, &["all", "default"])?;
        let rate = format!("{}bit", (rate_bytes_s * 8.0).round() as u64);
        let burst = ((rate_bytes_s * 0.002).max(2.0 * FRAME) as u64).to_string();
        let limit = self.queue_limit_bytes.to_string();
        let robot_ip = format!("{ROBOT_ADDRESS}/24");
        let laptop_ip = format!("{LAPTOP_ADDRESS}/24");
        #[rustfmt::skip]
        let steps: Vec<(&str, Vec<&str>)> = vec![
            // `gso_max_segs 1`: no frame larger than the MTU (the relay forwards frames, and
            // a raw socket refuses to send a GSO super-packet of 64 KB: EMSGSIZE).
            ("ip", vec!["-n", robot, "link", "add", ROBOT_DEVICE, "gso_max_segs", "1", "type", "veth", "peer", "name", "air-r", "netns", air]),
            ("ip", vec!["-n", laptop, "link", "add", LAPTOP_DEVICE, "gso_max_segs", "1", "type", "veth", "peer", "name", "air-l", "netns", air]),
            ("ip", vec!["-n", robot, "addr", "add", &robot_ip, "dev", ROBOT_DEVICE]),
            ("ip", vec!["-n", laptop, "addr", "add", &laptop_ip, "dev", LAPTOP_DEVICE]),
            ("tc", vec!["-n", robot, "qdisc", "add", "dev", ROBOT_DEVICE, "root", "tbf", "rate", &rate, "burst", &burst, "limit", &limit]),
            ("tc", vec!["-n", laptop, "qdisc", "add", "dev", LAPTOP_DEVICE, "root", "tbf", "rate", &rate, "burst", &burst, "limit", &limit]),
        ];
        for (program, args) in steps {
            run(program, &args)?;
        }
        // Nor on the link's devices (`lo` keeps ::1): no IPv6 chatter (router solicitations,
        // MLD) on the link, whose only traffic is then the benchmark's and its ARP.
        disable_ipv6(robot, &[ROBOT_DEVICE])?;
        disable_ipv6(laptop, &[LAPTOP_DEVICE])?;
        Ok(())
    }

    fn bring_up(&self) -> Result<(), BenchError> {
        let (robot, laptop, air) = (&self.robot, &self.laptop, &self.air);
        #[rustfmt::skip]
        let steps: Vec<(&str, Vec<&str>)> = vec![
            ("ip", vec!["-n", air, "link", "set", "air-r", "up"]),
            ("ip", vec!["-n", air, "link", "set", "air-l", "up"]),
            ("ip", vec!["-n", robot, "link", "set", ROBOT_DEVICE, "up"]),
            ("ip", vec!["-n", laptop, "link", "set", LAPTOP_DEVICE, "up"]),
            ("ip", vec!["-n", robot, "link", "set", "lo", "up"]),
            ("ip", vec!["-n", laptop, "link", "set", "lo", "up"]),
            ("ip", vec!["-n", air, "link", "set", "lo", "up"]),
        ];
        for (program, args) in steps {
            run(program, &args)?;
        }
        // A veth carries frames once both ends are up and the kernel's link watch has
        // activated its queue (asynchronous, up to a second): until then a frame sent is lost.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        for (ns, device) in [
            (air, "air-r"),
            (air, "air-l"),
            (robot, ROBOT_DEVICE),
            (laptop, LAPTOP_DEVICE),
        ] {
            let args = ["-j", "-n", ns, "link", "show", "dev", device];
            loop {
                let json = parse_json("ip", &args, &run("ip", &args)?)?;
                if json[0]["operstate"].as_str() == Some("UP") {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    return Err(BenchError::Cell(format!(
                        "link: {device} in {ns} is not up 5 s after `ip link set up` (`ip {}`: {})",
                        args.join(" "),
                        json[0]["operstate"]
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// The namespace of one side.
    pub fn namespace(&self, side: Side) -> &str {
        match side {
            Side::Robot => &self.robot,
            Side::Laptop => &self.laptop,
        }
    }

    /// The middle namespace, where the relay's sockets are.
    pub fn air_namespace(&self) -> &str {
        &self.air
    }

    /// The address of one side.
    pub fn address(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::Robot => ROBOT_ADDRESS,
            Side::Laptop => LAPTOP_ADDRESS,
        }
    }

    /// The shaped device of one side (its egress is shaped).
    pub fn device(&self, side: Side) -> &'static str {
        match side {
            Side::Robot => ROBOT_DEVICE,
            Side::Laptop => LAPTOP_DEVICE,
        }
    }

    /// The profile.
    pub fn profile(&self) -> &LinkProfile {
        &self.profile
    }

    /// The shaping queue's limit, bytes, each way.
    pub fn queue_limit_bytes(&self) -> u64 {
        self.queue_limit_bytes
    }

    /// `ip netns exec <ns> <program>`.
    pub fn command(&self, side: Side, program: impl AsRef<OsStr>) -> Command {
        netns_command(self.namespace(side), program)
    }

    /// Bytes and packets each way, from the veths' own counters (`robot0` tx is robot to
    /// laptop, `laptop0` tx laptop to robot).
    pub fn counters(&self) -> Result<LinkCounters, BenchError> {
        let (robot_to_laptop_bytes, robot_to_laptop_packets) =
            device_stats(&self.robot, ROBOT_DEVICE, "tx")?;
        let (laptop_to_robot_bytes, laptop_to_robot_packets) =
            device_stats(&self.laptop, LAPTOP_DEVICE, "tx")?;
        let (_, air_r) = device_stats(&self.air, "air-r", "rx")?;
        let (_, air_l) = device_stats(&self.air, "air-l", "rx")?;
        let relay = self.relay_stats();
        Ok(LinkCounters {
            robot_to_laptop_missed: air_r.saturating_sub(relay.robot_to_laptop.received_frames),
            laptop_to_robot_missed: air_l.saturating_sub(relay.laptop_to_robot.received_frames),
            robot_to_laptop_bytes,
            robot_to_laptop_packets,
            laptop_to_robot_bytes,
            laptop_to_robot_packets,
        })
    }

    /// The shaping qdisc of each device (robot's, then laptop's), from
    /// `tc -s -j qdisc show`.
    pub fn qdiscs(&self) -> Result<Vec<QdiscStats>, BenchError> {
        let mut all = Vec::new();
        for side in [Side::Robot, Side::Laptop] {
            let (ns, device) = (self.namespace(side), self.device(side));
            let args = ["-s", "-j", "-n", ns, "qdisc", "show", "dev", device];
            let json: serde_json::Value = parse_json("tc", &args, &run("tc", &args)?)?;
            let root = json
                .as_array()
                .and_then(|qdiscs| qdiscs.iter().find(|q| q["root"].as_bool() == Some(true)))
                .ok_or_else(|| {
                    BenchError::Malformed(format!("`tc {}`: no root qdisc", args.join(" ")))
                })?;
            // infallible: a counter tc leaves out is one that counted nothing
            let field = |name: &str| root[name].as_u64().unwrap_or_default();
            all.push(QdiscStats {
                device: device.to_owned(),
                kind: root["kind"].as_str().unwrap_or("?").to_owned(),
                bytes: field("bytes"),
                packets: field("packets"),
                overlimits: field("overlimits"),
                drops: field("drops"),
                backlog_bytes: field("backlog"),
                qlen: field("qlen"),
            });
        }
        Ok(all)
    }

    /// What crossed the relay each way so far.
    pub fn relay_stats(&self) -> RelayStats {
        self.relay
            .as_ref()
            .map(relay::Relay::stats)
            // infallible: a link is only handed out with its relay running
            .unwrap_or_default()
    }

    /// One sentence for the benchmark's output: what shapes the rate, what adds the delay,
    /// that random loss is not emulated.
    pub fn describe(&self) -> String {
        format!(
            "Link {}: the rate is shaped by tbf at {} Mbit/s on the egress of each end's veth \
             (queue {} KB, about 100 ms), the delay added by a user-space Ethernet relay between \
             the robot's and the laptop's network namespaces ({} ms ± {} ms uniform each way, \
             frames kept in order); random loss is not emulated.",
            self.profile.name,
            self.profile.rate_mbit_s,
            self.queue_limit_bytes / 1000,
            self.profile.delay_ms,
            self.profile.jitter_ms
        )
    }

    fn delete_namespaces(&self) {
        for ns in [&self.robot, &self.laptop, &self.air] {
            if std::path::Path::new("/run/netns").join(ns).exists() {
                // Nothing to report from a cleanup: a namespace that will not go is
                // named again by the next `ip netns add`.
                let _ = Command::new("ip").args(["netns", "del", ns]).output();
            }
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.relay = None;
        self.delete_namespaces();
    }
}

/// `ip netns exec <namespace> <program>`: `program` run in a named network namespace (a
/// link's, or one whose name a cell was told).
pub fn netns_command(namespace: &str, program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new("ip");
    command.args(["netns", "exec", namespace]).arg(program);
    command
}

/// Runs `f` on a thread of its own that has joined network namespace `ns`
/// (`/run/netns/<ns>`): sockets it makes stay in that namespace wherever they are used.
pub fn in_namespace<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T, BenchError> {
    let path = std::path::Path::new("/run/netns").join(ns);
    let file = File::open(&path).map_err(|e| BenchError::io(&path, e))?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(|e| BenchError::Cell(format!("link: cannot join {ns}: {e}")))?;
                Ok(f())
            })
            .join()
            .map_err(|_| BenchError::Cell(format!("link: a thread in {ns} panicked")))?
    })
}

/// Writes 1 to `net.ipv6.conf.<device>.disable_ipv6` of namespace `ns` for each of
/// `devices` (a kernel without IPv6 has nothing to disable).
fn disable_ipv6(ns: &str, devices: &[&str]) -> Result<(), BenchError> {
    in_namespace(ns, || -> Result<(), BenchError> {
        for device in devices {
            let path = format!("/proc/sys/net/ipv6/conf/{device}/disable_ipv6");
            match std::fs::write(&path, "1") {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BenchError::io(path.as_ref(), e)),
            }
        }
        Ok(())
    })?
}

/// Whether this process is root (effective uid 0).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Bytes and packets of `device` in namespace `ns`, `way` `tx` or `rx`, from
/// `ip -j -s link show`.
fn device_stats(ns: &str, device: &str, way: &str) -> Result<(u64, u64), BenchError> {
    let args = ["-j", "-s", "-n", ns, "link", "show", "dev", device];
    let json = parse_json("ip", &args, &run("ip", &args)?)?;
    let stats = &json[0]["stats64"][way];
    match (stats["bytes"].as_u64(), stats["packets"].as_u64()) {
        (Some(bytes), Some(packets)) => Ok((bytes, packets)),
        _ => Err(BenchError::Malformed(format!(
            "`ip {}`: no stats64.{way} bytes and packets",
            args.join(" ")
        ))),
    }
}

/// Runs `program args`; its standard output, or an error with the command and its stderr.
fn run(program: &str, args: &[&str]) -> Result<String, BenchError> {
    let command = || format!("`{program} {}`", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| BenchError::Cell(format!("link: cannot run {}: {e}", command())))?;
    if !out.status.success() {
        return Err(BenchError::Cell(format!(
            "link: {} failed ({}): {}",
            command(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn parse_json(program: &str, args: &[&str], text: &str) -> Result<serde_json::Value, BenchError> {
    serde_json::from_str(text)
        .map_err(|e| BenchError::Malformed(format!("`{program} {}`: {e}", args.join(" "))))
}
