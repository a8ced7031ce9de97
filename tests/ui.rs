//! Compile-fail proofs of every type-level promise, and a pass suite of the intended forms.
//!
//! Each case is one small file under `ui/<area>/{fail,pass}/`; a failing case's `.stderr`
//! is the error a user sees, reviewed to read as a person would want. The `.stderr` files
//! depend on the compiler version, pinned in `rust-toolchain.toml`. Regenerate them with
//! `TRYBUILD=overwrite cargo test -p streamwire-tests --test ui` and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/*/pass/*.rs");
    t.compile_fail("ui/*/fail/*.rs");
}
