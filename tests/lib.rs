//! Workspace-level tests of streamwire; see `ui.rs` (compile-fail proofs), `plans.rs`
//! (plan and error snapshots), `docs.rs` (the docs' numbers and quoted errors against the
//! code) and `layers.rs` (ARCHITECTURE.md's layers against the packages' dependencies).
//! This library holds nothing but this note.
