//! The relay as a module: what it says when it cannot run, and its counters in the run's
//! report.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{SyntheticCamera, start};
use streamwire::prelude::*;
use streamwire::runtime::Harness;
use streamwire_web::{RelayConfig, WebRelay};

#[test]
fn alone_in_the_harness_it_says_it_needs_a_run() {
    let mut harness = Harness::new(WebRelay::new(RelayConfig::default().with_port(0)));
    let error = harness
        .start()
        .expect_err("no taps in the harness")
        .to_string();
    assert!(error.contains("needs a run's taps"), "{error}");
}

#[test]
fn a_taken_port_is_named_with_how_to_choose_another() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("addr").port();
    let mut blueprint = Blueprint::new();
    blueprint.add("web", WebRelay::new(RelayConfig::default().with_port(port)));
    let run = blueprint.run(RunOptions::default()).expect("starts");
    let report = run.wait_timeout(Duration::from_secs(20));
    let text = format!("{report:?}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(text.contains("port 0 picks a free one"), "{text}");
}

#[test]
fn the_bound_port_is_a_counter_of_the_run() {
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(64, 48, 10.0, None),
    );
    let stats = run.run.stats();
    let text = format!("{stats:?}");
    assert!(
        text.contains(&format!("(\"port\", {})", run.addr.port())),
        "{text}"
    );
    drop(run);
}
