//! Tests that need a tool or data the machine may lack (Debian's chromium or djpeg,
//! network namespaces, the shared data, the ROS 2 reference implementations) skip where it
//! is missing, saying why; under `STREAMWIRE_REQUIRE=all` (which `.ci/run` sets) they fail
//! instead, so a CI machine without them cannot go green.

use std::fmt::Display;

/// The environment variable that turns skips into failures.
pub const VARIABLE: &str = "STREAMWIRE_REQUIRE";

/// Whether every test must run (`STREAMWIRE_REQUIRE=all`).
pub fn required() -> bool {
    required_by(std::env::var(VARIABLE).ok().as_deref())
}

/// Whether `value` of [`VARIABLE`] asks that every test run.
pub fn required_by(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim() == "all")
}

/// Says why the calling test skips (the caller then returns); under
/// `STREAMWIRE_REQUIRE=all` fails the test with the same reason instead.
///
/// # Panics
///
/// Under `STREAMWIRE_REQUIRE=all`, always: that is the failure.
pub fn skip(reason: impl Display) {
    assert!(
        !required(),
        "{VARIABLE}=all, and this test cannot run: {reason}"
    );
    println!("skipped: {reason}");
}
