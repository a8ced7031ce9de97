//! `cargo metadata` of the workspace, for the tests that hold the docs to the packages
//! (`docs.rs`, `layers.rs`; each takes this file with `#[path]`).

use std::path::Path;
use std::process::Command;

/// The workspace's root folder.
pub(crate) fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace's root")
}

/// `cargo metadata --no-deps` of the workspace (no resolution, no network), as JSON.
pub(crate) fn cargo_metadata() -> serde_json::Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}
