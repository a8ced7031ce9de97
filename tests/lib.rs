//! Workspace-level tests of streamwire; see `ui.rs` (compile-fail proofs) and `plans.rs`
//! (plan and error snapshots). This library holds nothing but this note.
