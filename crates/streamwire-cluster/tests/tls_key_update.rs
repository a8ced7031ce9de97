//! A closed run's TLS links under TLS 1.3 key updates while both directions carry large
//! frames (issue 50, eclipse-zenoh/zenoh#2557). zenoh-link-tls 1.10.2 reads and writes one
//! rustls connection from zenoh's rx and tx tasks at once (through an `UnsafeCell`): a
//! key update the reader receives replaces the encrypter the writer is using, and the
//! worker dies (SIGSEGV in `tx-0`, or a huge allocation and SIGABRT). rustls updates its
//! keys only every 2^23 or 2^24 records; here a test crypto provider, ring's TLS 1.3
//! suites with a confidentiality limit of [`RECORDS_PER_KEY`] records, installed before
//! zenoh makes its configurations (zenoh-link-tls keeps a provider already installed),
//! makes both ends of every link update their keys every megabyte or so, while two
//! members of a closed run (mutual TLS with the run's credentials, as its workers have,
//! shared memory off so every byte crosses the TLS link) send each other 1 MB puts.
//!
//! A crash kills its process: the stress runs in a child (this test binary started again
//! with [`CHILD`] set), and the test is that the child exits 0 within [`BOUND`], having
//! delivered frames both ways, made at least [`MIN_NEW_KEYS`] traffic keys and kept the
//! link up throughout (before the fix, most runs lost it again and again: TLS errors from
//! the corrupted state, which close the link, when they did not crash). A plain `main`
//! (`harness = false`): a child must not run the tests.

#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "test code: a failure is the test failing"
)]

use std::io::Read as _;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustls::SupportedCipherSuite;
use rustls::crypto::CryptoProvider;
use rustls::crypto::cipher::{
    AeadKey, Iv, MessageDecrypter, MessageEncrypter, Tls13AeadAlgorithm, UnsupportedOperationError,
};
use rustls::{CipherSuiteCommon, ConnectionTrafficSecrets, Tls13CipherSuite};
use streamwire_cluster::{RunAuthority, access};
use streamwire_transport::Transport as _;
use streamwire_zenoh::{Settings, SharedMemory, ZenohOptions, ZenohTransport};
use zenoh::Wait as _;
use zenoh::bytes::ZBytes;
use zenoh::qos::CongestionControl;

/// Set in the child's environment: it runs the stress and exits.
const CHILD: &str = "SW_TLS_STRESS_CHILD";

/// Records a traffic key may protect before it is replaced: a 1 MB frame is about 64
/// records of 16 KiB.
const RECORDS_PER_KEY: u64 = 64;

/// How long both directions send.
const TRAFFIC: Duration = Duration::from_secs(15);

/// How often the child checks that the two members are linked.
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// The child's whole life, start-up and shutdown included.
const BOUND: Duration = Duration::from_secs(50);

/// The size of each put.
const PAYLOAD: usize = 1 << 20;

/// Traffic keys the child must have made for the test to mean anything (a handful come
/// from the handshakes alone).
const MIN_NEW_KEYS: u64 = 100;

/// Encrypters made by the test provider: a handshake's and every key update's.
static ENCRYPTERS: AtomicU64 = AtomicU64::new(0);

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return stress();
    }
    let start = Instant::now();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes on threads: a chatty child must not block on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    print!("{out}");
    match status {
        Some(status) if status.success() => {
            println!(
                "tls_key_update: the child held ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        status => {
            eprintln!("{err}");
            match status {
                Some(status) => eprintln!("tls_key_update: FAILED, the child ended with {status}"),
                None => eprintln!("tls_key_update: FAILED, the child outlived {BOUND:?}"),
            }
            ExitCode::FAILURE
        }
    }
}

/// The child: two members of a closed run sending each other 1 MB puts with keys that
/// last [`RECORDS_PER_KEY`] records.
fn stress() -> ExitCode {
    install_short_lived_keys();
    let run_id = "tlsstress";
    let authority = RunAuthority::new(run_id).unwrap();
    let a = member(&authority, "stress/a", Vec::new());
    let b = member(&authority, "stress/b", a.locators());
    let to_a = a.key_expr("to_a");
    let to_b = b.key_expr("to_b");
    let at_a = Arc::new(AtomicU64::new(0));
    let at_b = Arc::new(AtomicU64::new(0));
    let _sub_a = subscribe(&a, &to_a, &at_a);
    let _sub_b = subscribe(&b, &to_b, &at_b);
    wait_for_link(&a, &b, &to_a, &to_b, &at_a, &at_b);
    let before = ENCRYPTERS.load(Ordering::Relaxed);
    let stop = Arc::new(AtomicBool::new(false));
    let senders = [(a.clone(), to_b), (b.clone(), to_a)].map(|(session, key)| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || send_until(&session, &key, &stop))
    });
    let link_down = watch_link(&a, &b, TRAFFIC);
    stop.store(true, Ordering::Relaxed);
    let sent: Vec<u64> = senders.into_iter().map(|s| s.join().unwrap()).collect();
    std::thread::sleep(Duration::from_secs(1));
    let new_keys = ENCRYPTERS.load(Ordering::Relaxed) - before;
    let (got_b, got_a) = (at_b.load(Ordering::Relaxed), at_a.load(Ordering::Relaxed));
    println!(
        "a -> b: {got_b} of {} MB delivered; b -> a: {got_a} of {} MB; {new_keys} new \
         traffic keys (one every {RECORDS_PER_KEY} records); link down in {link_down} of \
         {} checks",
        sent[0],
        sent[1],
        TRAFFIC.as_millis() / CHECK_EVERY.as_millis()
    );
    a.close();
    b.close();
    if link_down > 0 {
        // A TLS error closes the link (zenoh connects again): corrupted state that did
        // not crash. Drop congestion control never closes a link.
        eprintln!("the link went down while it carried traffic");
        return ExitCode::FAILURE;
    }
    if got_a == 0 || got_b == 0 || new_keys < MIN_NEW_KEYS {
        eprintln!("too little traffic or too few key updates to test anything");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Checks every [`CHECK_EVERY`] for `duration` that `a` and `b` are linked; the checks
/// that found them apart.
fn watch_link(a: &ZenohTransport, b: &ZenohTransport, duration: Duration) -> u64 {
    let end = Instant::now() + duration;
    let mut down = 0;
    while Instant::now() < end {
        std::thread::sleep(CHECK_EVERY);
        let peers = |s: &ZenohTransport| s.session().info().peers_zid().wait().count();
        if peers(a) == 0 || peers(b) == 0 {
            down += 1;
        }
    }
    down
}

/// A member of the run, as a worker opens its session (mutual TLS with its credential,
/// `tls/` endpoints), without shared memory: every byte crosses the TLS link.
fn member(authority: &RunAuthority, subject: &str, connect: Vec<String>) -> ZenohTransport {
    let credential = authority.issue(subject).unwrap();
    ZenohTransport::open(&ZenohOptions {
        run_id: credential.run_id().to_owned(),
        listen: access::closed_endpoints(&ZenohOptions::default().listen),
        connect: access::closed_endpoints(&connect),
        shared_memory: SharedMemory::off(),
        settings: Settings(credential.tls_settings()),
        ..ZenohOptions::default()
    })
    .unwrap()
}

fn subscribe(
    session: &ZenohTransport,
    key: &str,
    count: &Arc<AtomicU64>,
) -> zenoh::pubsub::Subscriber<()> {
    let count = Arc::clone(count);
    session
        .session()
        .declare_subscriber(key.to_owned())
        .callback(move |sample| {
            if sample.payload().len() == PAYLOAD {
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
        .wait()
        .unwrap()
}

/// Until a frame has gone each way (the link is up and both subscriptions are known).
fn wait_for_link(
    a: &ZenohTransport,
    b: &ZenohTransport,
    to_a: &str,
    to_b: &str,
    at_a: &AtomicU64,
    at_b: &AtomicU64,
) {
    let payload = ZBytes::from(vec![0u8; PAYLOAD]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while at_a.load(Ordering::Relaxed) == 0 || at_b.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "the members never linked");
        a.session().put(to_b, payload.clone()).wait().unwrap();
        b.session().put(to_a, payload.clone()).wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Puts 1 MB frames on `key` until `stop`; the number put. Frames the link has no room for
/// are dropped (zenoh's default for a put): blocking would close a link that stays full
/// for 1 s (streamwire's `wait_before_close`), which a loaded machine can do.
fn send_until(session: &ZenohTransport, key: &str, stop: &AtomicBool) -> u64 {
    let payload = ZBytes::from(vec![0x5a_u8; PAYLOAD]);
    let mut sent = 0;
    while !stop.load(Ordering::Relaxed) {
        session
            .session()
            .put(key, payload.clone())
            .congestion_control(CongestionControl::Drop)
            .wait()
            .unwrap();
        sent += 1;
    }
    sent
}

/// Installs ring's provider with TLS 1.3 keys that last [`RECORDS_PER_KEY`] records and
/// count the encrypters they make.
fn install_short_lived_keys() {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = provider
        .cipher_suites
        .into_iter()
        .filter_map(|suite| match suite {
            SupportedCipherSuite::Tls13(suite) => {
                Some(SupportedCipherSuite::Tls13(short_lived(suite)))
            }
            // Closed runs speak TLS 1.3 only.
            SupportedCipherSuite::Tls12(_) => None,
        })
        .collect();
    assert!(
        CryptoProvider::install_default(provider).is_ok(),
        "a crypto provider was installed before the test's"
    );
}

fn short_lived(suite: &'static Tls13CipherSuite) -> &'static Tls13CipherSuite {
    Box::leak(Box::new(Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: suite.common.suite,
            hash_provider: suite.common.hash_provider,
            confidentiality_limit: RECORDS_PER_KEY,
        },
        hkdf_provider: suite.hkdf_provider,
        aead_alg: Box::leak(Box::new(Counting(suite.aead_alg))),
        quic: suite.quic,
    }))
}

/// An AEAD that counts the encrypters it makes: a handshake's, then one per key update.
struct Counting(&'static dyn Tls13AeadAlgorithm);

impl Tls13AeadAlgorithm for Counting {
    fn encrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageEncrypter> {
        ENCRYPTERS.fetch_add(1, Ordering::Relaxed);
        self.0.encrypter(key, iv)
    }

    fn decrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageDecrypter> {
        self.0.decrypter(key, iv)
    }

    fn key_len(&self) -> usize {
        self.0.key_len()
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: Iv,
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        self.0.extract_keys(key, iv)
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}
