//! What streamwire's benchmarks share, so that each draws and samples the same way:
//!
//! - [`charts`]: grouped bars, lines and grids of line panels as SVG and PNG, with the
//!   font shipped in `fonts/` (no system font library), its palette and the writer of both
//!   files that a bench's own chart draws through;
//! - [`procfs`]: a run's process tree from /proc, and per process its CPU time, private
//!   memory (PSS, USS), RSS, fds, threads and the /dev/shm files it maps.

pub mod charts;
pub mod procfs;
