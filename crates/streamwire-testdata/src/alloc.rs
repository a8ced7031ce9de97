//! The one counting allocator of the workspace's tests: it proves that a path makes no
//! payload copy (cloning a message), or that hostile input is refused before anything
//! proportional to its declared size is allocated.
//!
//! A test binary installs it once, then measures closures:
//!
//! ```
//! use streamwire_testdata::alloc::{CountingAlloc, allocated_during, peak_during};
//!
//! #[global_allocator]
//! static ALLOCATOR: CountingAlloc = CountingAlloc;
//!
//! # fn main() {
//! let ((), bytes) = allocated_during(|| drop(vec![0u8; 4096]));
//! assert!(bytes >= 4096);
//! let (_, peak) = peak_during(|| vec![0u8; 1 << 20]);
//! assert!(peak >= 1 << 20);
//! # }
//! ```
//!
//! Counts are kept per thread (const-initialised thread locals, which never allocate), so
//! the test harness running other tests on other threads cannot disturb a measurement.
//! A path that spans threads (a runtime's fan-out) is measured process-wide with
//! [`process_counts_during`]; such a test binary then runs one measurement at a time.
//! Both functions panic when the allocator is not installed, rather than report zero.
#![expect(
    unsafe_code,
    reason = "a counting allocator must implement the unsafe GlobalAlloc trait; every other \
              module of this crate denies unsafe"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated by every thread, never decreased by frees.
static PROCESS_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Allocations (and growing reallocations) by every thread.
static PROCESS_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// The largest single allocation since the last process-wide measurement began.
static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// Bytes live in the whole process (allocated minus freed), and their peak.
static PROCESS_LIVE: AtomicUsize = AtomicUsize::new(0);
static PROCESS_PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations of at least `LARGE_AT_LEAST` bytes by every thread (none counted until a
/// size is set).
static LARGE_AT_LEAST: AtomicUsize = AtomicUsize::new(usize::MAX);
static LARGE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Bytes live on this thread (allocated minus freed; may go negative when a thread
    /// frees memory another thread allocated).
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    /// The highest `CURRENT` since the last reset.
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Bytes allocated on this thread, never decreased by frees.
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn record(delta: isize) {
    if delta >= 0 {
        let grown = delta.unsigned_abs();
        let live = PROCESS_LIVE
            .fetch_add(grown, Ordering::SeqCst)
            .wrapping_add(grown);
        PROCESS_PEAK.fetch_max(live, Ordering::SeqCst);
    } else {
        PROCESS_LIVE.fetch_sub(delta.unsigned_abs(), Ordering::SeqCst);
    }
    // try_with: allocations during thread teardown find the locals gone; skip them.
    let _ = CURRENT.try_with(|current| {
        let now = current.get().wrapping_add(delta);
        current.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
    if let Ok(grown) = usize::try_from(delta) {
        let _ = ALLOCATED.try_with(|allocated| allocated.set(allocated.get().wrapping_add(grown)));
        PROCESS_BYTES.fetch_add(grown, Ordering::Relaxed);
        PROCESS_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LARGEST.fetch_max(grown, Ordering::Relaxed);
        if grown >= LARGE_AT_LEAST.load(Ordering::Relaxed) {
            LARGE.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

/// The system allocator, counting per thread what it hands out. Install it with
/// `#[global_allocator] static ALLOCATOR: CountingAlloc = CountingAlloc;`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountingAlloc;

// SAFETY: every method forwards its arguments unchanged to the system allocator and only
// adds bookkeeping that never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record(signed(layout.size()));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(signed(layout.size()));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        record(-signed(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            record(signed(new_size) - signed(layout.size()));
        }
        new
    }
}

/// Panics unless [`CountingAlloc`] is the global allocator (else every count would be 0
/// and a "no copy" test would pass for the wrong reason).
fn assert_installed() {
    let before = ALLOCATED.with(Cell::get);
    drop(std::hint::black_box(Box::new(0u64)));
    assert!(
        ALLOCATED.with(Cell::get) != before,
        "CountingAlloc is not the global allocator of this test binary: add \
         `#[global_allocator] static ALLOCATOR: CountingAlloc = CountingAlloc;`"
    );
}

/// Runs `f` and returns its result with the bytes it allocated on this thread (frees not
/// subtracted: a payload copy shows even if it is dropped before `f` returns).
pub fn allocated_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    assert_installed();
    let before = ALLOCATED.with(Cell::get);
    let result = f();
    let after = ALLOCATED.with(Cell::get);
    (result, after.wrapping_sub(before))
}

/// Runs `f` and returns its result with the peak bytes live on this thread during the
/// call, above what was live when it started.
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    assert_installed();
    let base = CURRENT.with(Cell::get);
    PEAK.with(|peak| peak.set(base));
    let result = f();
    let peak = PEAK.with(Cell::get);
    (result, usize::try_from(peak - base).unwrap_or(0))
}

/// What every thread of the process allocated during a measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessCounts {
    /// Bytes allocated (frees not subtracted).
    pub bytes: usize,
    /// Number of allocations.
    pub allocations: usize,
    /// The largest single allocation: a payload copy shows here as its size.
    pub largest: usize,
}

/// Runs `f` and returns what every thread allocated meanwhile (for paths that span
/// threads). Measurements of this kind must not overlap within one test binary.
pub fn process_counts_during<T>(f: impl FnOnce() -> T) -> (T, ProcessCounts) {
    assert_installed();
    let bytes = PROCESS_BYTES.load(Ordering::SeqCst);
    let allocations = PROCESS_ALLOCATIONS.load(Ordering::SeqCst);
    LARGEST.store(0, Ordering::SeqCst);
    let result = f();
    let counts = ProcessCounts {
        bytes: PROCESS_BYTES.load(Ordering::SeqCst).wrapping_sub(bytes),
        allocations: PROCESS_ALLOCATIONS
            .load(Ordering::SeqCst)
            .wrapping_sub(allocations),
        largest: LARGEST.load(Ordering::SeqCst),
    };
    (result, counts)
}

/// Runs `f` and returns its result with the peak bytes live in the whole process during
/// the call, above what was live when it started: for code that allocates on a thread
/// pool (a parallel decoder). Measurements of this kind must not overlap within one
/// test binary.
pub fn process_peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    assert_installed();
    let base = PROCESS_LIVE.load(Ordering::SeqCst);
    PROCESS_PEAK.store(base, Ordering::SeqCst);
    let result = f();
    (
        result,
        PROCESS_PEAK.load(Ordering::SeqCst).saturating_sub(base),
    )
}

/// From now on, counts every allocation of at least `bytes` by any thread of the process
/// (a copy of a payload, where the payload is larger than anything else allocated): read
/// the count with [`allocations_of_at_least`], at any time, from any thread.
pub fn count_allocations_of_at_least(bytes: usize) {
    assert_installed();
    LARGE.store(0, Ordering::SeqCst);
    LARGE_AT_LEAST.store(bytes, Ordering::SeqCst);
}

/// The allocations counted since [`count_allocations_of_at_least`].
pub fn allocations_of_at_least() -> usize {
    LARGE.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    // This crate's unit-test binary does not install the allocator.
    #[test]
    #[should_panic(expected = "CountingAlloc is not the global allocator")]
    fn measuring_without_the_allocator_installed_panics() {
        let _ = super::allocated_during(|| Box::new(1u8));
    }
}
