//! Buffers for large messages: loans a producer fills in place, and pools that recycle
//! the buffers the runtime makes for every frame.
//!
//! A 720p camera frame is a 2.76 MB buffer, made 20 or 30 times a second. Made fresh each
//! time, it costs an allocation, page faults on first touch (about a millisecond with
//! glibc's default thresholds, RFC.md's open question) and, where the frame leaves the
//! process through zenoh's shared memory, a copy into the shared-memory pool. A
//! [`Loan`] avoids all three: a module asks its output for one
//! ([`Out::loan`](crate::Out::loan)), fills it, and [`freeze`](Loan::freeze)s it into the
//! `Bytes` of its message.
//!
//! - Where the stream leaves the process over zenoh with shared memory, the loan *is* a
//!   shared-memory buffer of the session's provider; the wire frame sends it by reference
//!   (no copy) and the receiver reads it where it lies.
//! - Elsewhere it is a buffer from a [`BufferPool`], recycled when the last `Bytes` of it
//!   drops.
//! - A loan that the shared memory cannot serve (its pool is full: consumers still hold
//!   earlier frames) falls back to the heap pool, never blocks, and is counted as
//!   [`LoanStats::fallback`].
//!
//! ```
//! use streamwire::buffer::{BufferPool, Loan};
//!
//! let pool = BufferPool::new("frames", 4);
//! let mut loan = Loan::pooled(pool.take(16));
//! loan.fill(7);
//! let bytes = loan.freeze();
//! assert_eq!(&bytes[..], &[7; 16]);
//! drop(bytes); // the buffer goes back to the pool
//! let again = pool.take(16);
//! assert_eq!(pool.stats().hits, 1);
//! # drop(again);
//! ```

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// A pool of byte buffers, bounded: it keeps at most `max_free` idle buffers, and a buffer
/// returned past that is freed. Cheap to clone (clones share the pool).
#[derive(Clone)]
pub struct BufferPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    name: Arc<str>,
    max_free: usize,
    free: Mutex<Vec<Vec<u8>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Bytes of the buffers this pool made that are alive (idle or lent).
    bytes: AtomicU64,
}

/// What a pool has served, as a run's report shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    /// The pool's name (`decoded images`, `received blobs`, `encoded images`, or an
    /// output's stream).
    pub name: String,
    /// Buffers served from the pool's idle ones.
    pub hits: u64,
    /// Buffers the pool had to allocate (none idle, or none large enough).
    pub misses: u64,
    /// Bytes of the buffers the pool made that are alive now, idle or lent.
    pub bytes: u64,
}

impl BufferPool {
    /// A pool that keeps at most `max_free` idle buffers.
    pub fn new(name: impl Into<Arc<str>>, max_free: usize) -> BufferPool {
        BufferPool {
            inner: Arc::new(PoolInner {
                name: name.into(),
                max_free,
                free: Mutex::new(Vec::new()),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
            }),
        }
    }

    /// A buffer of `len` bytes: an idle one of enough capacity (its old contents, not
    /// zeroed: the caller overwrites them), or a new zeroed one. Never blocks.
    pub fn take(&self, len: usize) -> PooledBuf {
        let reused = {
            let mut free = self.inner.free.lock();
            free.iter()
                .position(|b| b.capacity() >= len)
                .map(|i| free.swap_remove(i))
        };
        let vec = match reused {
            Some(mut vec) => {
                self.inner.hits.fetch_add(1, Ordering::Relaxed);
                // Bytes up to the old length are initialized already; only growth zeroes.
                vec.resize(len, 0);
                vec
            }
            None => {
                self.inner.misses.fetch_add(1, Ordering::Relaxed);
                let vec = vec![0u8; len];
                self.inner
                    .bytes
                    .fetch_add(vec.capacity() as u64, Ordering::Relaxed);
                vec
            }
        };
        PooledBuf {
            counted: vec.capacity(),
            vec,
            pool: Arc::downgrade(&self.inner),
        }
    }

    /// A buffer of length 0 and at least `capacity` (for a writer that appends, such as
    /// an encoder); it may grow past it.
    pub fn take_empty(&self, capacity: usize) -> PooledBuf {
        let mut buf = self.take(capacity);
        buf.vec.clear();
        buf
    }

    /// What the pool has served so far.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            name: self.inner.name.to_string(),
            hits: self.inner.hits.load(Ordering::Relaxed),
            misses: self.inner.misses.load(Ordering::Relaxed),
            bytes: self.inner.bytes.load(Ordering::Relaxed),
        }
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BufferPool").field(&self.stats()).finish()
    }
}

impl PoolInner {
    /// Takes back a buffer whose last user is done: kept if there is room, else freed.
    /// `counted` is the capacity it was counted with when lent (a writer may have grown
    /// it since).
    fn give_back(&self, vec: Vec<u8>, counted: usize) {
        let capacity = vec.capacity() as u64;
        if capacity >= counted as u64 {
            self.bytes
                .fetch_add(capacity - counted as u64, Ordering::Relaxed);
        } else {
            self.bytes
                .fetch_sub(counted as u64 - capacity, Ordering::Relaxed);
        }
        let mut free = self.free.lock();
        if free.len() < self.max_free && capacity > 0 {
            // Its length is kept: those bytes are initialized, so `take` of a frame of the
            // same size zeroes nothing.
            free.push(vec);
        } else {
            self.bytes.fetch_sub(capacity, Ordering::Relaxed);
        }
    }
}

/// A buffer lent by a [`BufferPool`]: a `Vec<u8>` that goes back to its pool when dropped,
/// or when the last `Bytes` made of it by [`freeze`](Self::freeze) drops.
pub struct PooledBuf {
    vec: Vec<u8>,
    pool: Weak<PoolInner>,
    /// The capacity the pool counted in its bytes for it.
    counted: usize,
}

impl PooledBuf {
    /// The buffer as a vector, to append to or resize (an encoder writes into it).
    pub fn vec_mut(&mut self) -> &mut Vec<u8> {
        &mut self.vec
    }

    /// The filled buffer as `Bytes`, without a copy; the buffer returns to the pool when
    /// the last clone of them drops.
    pub fn freeze(mut self) -> Bytes {
        let vec = std::mem::take(&mut self.vec);
        let pool = std::mem::take(&mut self.pool);
        Bytes::from_owner(Recycled {
            vec,
            pool,
            counted: self.counted,
        })
    }
}

impl Deref for PooledBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.vec
    }
}

impl DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.vec
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_back(std::mem::take(&mut self.vec), self.counted);
        }
    }
}

/// The owner of a frozen pooled buffer: gives it back when `Bytes` drops its last clone.
struct Recycled {
    vec: Vec<u8>,
    pool: Weak<PoolInner>,
    counted: usize,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.vec
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_back(std::mem::take(&mut self.vec), self.counted);
        }
    }
}

/// A shared-memory buffer lent by a transport (zenoh's `ZShmMut`), seen by the core.
pub trait SharedLoan: DerefMut<Target = [u8]> + Send {
    /// The filled buffer as `Bytes`, kept recognisable to the transport, which then sends
    /// it by reference.
    fn freeze(self: Box<Self>) -> Bytes;
}

/// Where shared-memory loans come from: a transport whose peers on this host share memory.
pub trait LoanSource: Send + Sync {
    /// A buffer of `len` bytes, or `None` when the shared memory cannot serve it now (its
    /// pool is full, or not made yet). Never blocks.
    fn loan(&self, len: usize) -> Option<Box<dyn SharedLoan>>;
}

/// A buffer a producer fills, then freezes into its message's `Bytes`.
pub struct Loan {
    kind: LoanKind,
}

enum LoanKind {
    Shared(Box<dyn SharedLoan>),
    Pooled(PooledBuf),
}

impl Loan {
    /// A loan of a pooled heap buffer.
    pub fn pooled(buf: PooledBuf) -> Loan {
        Loan {
            kind: LoanKind::Pooled(buf),
        }
    }

    /// A loan of a transport's shared memory.
    pub fn shared(buf: Box<dyn SharedLoan>) -> Loan {
        Loan {
            kind: LoanKind::Shared(buf),
        }
    }

    /// A loan of a fresh heap buffer of `len` zeroed bytes, in no pool (an unbound port's
    /// default).
    pub fn heap(len: usize) -> Loan {
        Loan::pooled(PooledBuf {
            vec: vec![0u8; len],
            pool: Weak::new(),
            counted: 0,
        })
    }

    /// Whether the buffer is shared memory that the wire frame sends by reference.
    pub fn is_shared(&self) -> bool {
        matches!(self.kind, LoanKind::Shared(_))
    }

    /// The filled buffer as `Bytes`, without a copy.
    pub fn freeze(self) -> Bytes {
        match self.kind {
            LoanKind::Shared(buf) => buf.freeze(),
            LoanKind::Pooled(buf) => buf.freeze(),
        }
    }
}

impl Deref for Loan {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.kind {
            LoanKind::Shared(buf) => buf,
            LoanKind::Pooled(buf) => buf,
        }
    }
}

impl DerefMut for Loan {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.kind {
            LoanKind::Shared(buf) => buf,
            LoanKind::Pooled(buf) => buf,
        }
    }
}

impl std::fmt::Debug for Loan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loan")
            .field("len", &self.len())
            .field("shared", &self.is_shared())
            .finish()
    }
}

/// What an output's loans were served by, as a run's report shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoanStats {
    /// Loans of shared memory (sent by reference).
    pub shared: u64,
    /// Loans of pooled heap buffers, where the stream does not leave the process through
    /// shared memory, or of fewer than [`blob::MIN_LEN`](crate::blob::MIN_LEN) bytes
    /// (they travel inline in the frame: shared memory would only cost an allocation).
    pub pooled: u64,
    /// Loans that wanted shared memory and got a heap buffer: the shared-memory pool was
    /// full (consumers held earlier frames) or not ready yet. The frame still travels,
    /// copied once into shared memory by zenoh or through the link.
    pub fallback: u64,
}

/// Counts an output's loans.
#[derive(Debug, Default)]
pub struct LoanCounters {
    shared: AtomicU64,
    pooled: AtomicU64,
    fallback: AtomicU64,
}

impl LoanCounters {
    /// A loan for an output: shared memory from `source` if there is one and it can serve,
    /// else a buffer of `pool` (counted as a fallback when shared memory was wanted).
    /// Under [`blob::MIN_LEN`](crate::blob::MIN_LEN) bytes the pool serves without asking:
    /// such a field is written inline in the frame, so a chunk of shared memory would be
    /// allocated (and garbage-collected) per message for nothing (issue 51: 64 B messages
    /// at a third of bare zenoh's rate, and their p99 spikes).
    pub fn loan(&self, source: Option<&dyn LoanSource>, pool: &BufferPool, len: usize) -> Loan {
        if let Some(source) = source.filter(|_| len >= crate::blob::MIN_LEN) {
            if let Some(buf) = source.loan(len) {
                self.shared.fetch_add(1, Ordering::Relaxed);
                return Loan::shared(buf);
            }
            self.fallback.fetch_add(1, Ordering::Relaxed);
        } else {
            self.pooled.fetch_add(1, Ordering::Relaxed);
        }
        Loan::pooled(pool.take(len))
    }

    /// The counts so far.
    pub fn stats(&self) -> LoanStats {
        LoanStats {
            shared: self.shared.load(Ordering::Relaxed),
            pooled: self.pooled.load(Ordering::Relaxed),
            fallback: self.fallback.load(Ordering::Relaxed),
        }
    }
}

/// The process's pools for buffers the runtime makes per frame, each bounded.
pub mod pools {
    use std::sync::LazyLock;

    use super::BufferPool;

    /// Idle buffers each process-wide pool keeps (11 MB of 720p frames): a buffer is idle
    /// only between a frame's last consumer and the next frame, so a few suffice.
    const MAX_FREE: usize = 4;

    static DECODED: LazyLock<BufferPool> =
        LazyLock::new(|| BufferPool::new("decoded images", MAX_FREE));
    static RECEIVED: LazyLock<BufferPool> =
        LazyLock::new(|| BufferPool::new("received blobs", MAX_FREE));
    static ENCODED: LazyLock<BufferPool> =
        LazyLock::new(|| BufferPool::new("encoded images", MAX_FREE));

    /// Decoded images: a decoder's output never leaves its process, so a heap buffer.
    pub fn decoded() -> &'static BufferPool {
        &DECODED
    }

    /// Blobs that arrived in several slices and were joined into one buffer.
    pub fn received() -> &'static BufferPool {
        &RECEIVED
    }

    /// Encoded images (JPEG), which the encoder writes into.
    pub fn encoded() -> &'static BufferPool {
        &ENCODED
    }

    /// Every process-wide pool, for a report.
    pub fn all() -> [&'static BufferPool; 3] {
        [decoded(), received(), encoded()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_returns_to_its_pool_when_the_last_bytes_drop() {
        let pool = BufferPool::new("test", 2);
        let mut buf = pool.take(1000);
        buf[0] = 1;
        let bytes = buf.freeze();
        let clone = bytes.clone();
        drop(bytes);
        let second = pool.take(1000);
        assert_eq!(pool.stats().misses, 2, "the first buffer is still lent");
        drop((clone, second));
        let third = pool.take(500);
        assert_eq!(pool.stats().hits, 1);
        assert_eq!(third.len(), 500);
        assert_eq!(pool.stats().bytes, 2000);
    }

    #[test]
    fn a_buffer_a_writer_grew_is_counted_at_its_new_size() {
        let pool = BufferPool::new("test", 1);
        let mut buf = pool.take_empty(10);
        buf.vec_mut().extend_from_slice(&[1; 5000]);
        let grown = buf.vec_mut().capacity() as u64;
        drop(buf.freeze());
        assert_eq!(pool.stats().bytes, grown);
        let (a, b) = (pool.take(10), pool.take(10));
        drop((a, b));
        assert_eq!(
            pool.stats().bytes,
            grown,
            "the second, freed, is no longer counted"
        );
    }

    #[test]
    fn a_pool_keeps_at_most_its_bound_and_frees_the_rest() {
        let pool = BufferPool::new("test", 1);
        let (a, b) = (pool.take(100), pool.take(100));
        drop((a, b));
        assert_eq!(pool.stats().bytes, 100, "one kept, one freed");
        let _c = pool.take(200);
        assert_eq!(pool.stats().misses, 3, "the idle buffer is too small");
    }

    struct Refusing;
    impl LoanSource for Refusing {
        fn loan(&self, _: usize) -> Option<Box<dyn SharedLoan>> {
            None
        }
    }

    #[test]
    fn a_loan_the_shared_memory_cannot_serve_falls_back_and_is_counted() {
        let counters = LoanCounters::default();
        let pool = BufferPool::new("test", 1);
        let loan = counters.loan(Some(&Refusing), &pool, 8192);
        assert!(!loan.is_shared());
        assert_eq!(loan.len(), 8192);
        let _local = counters.loan(None, &pool, 64);
        assert_eq!(
            counters.stats(),
            LoanStats {
                shared: 0,
                pooled: 1,
                fallback: 1
            }
        );
    }

    struct Panicking;
    impl LoanSource for Panicking {
        fn loan(&self, len: usize) -> Option<Box<dyn SharedLoan>> {
            panic!("a loan of {len} B asked of the shared memory")
        }
    }

    #[test]
    fn a_small_loan_is_pooled_without_asking_the_shared_memory() {
        let counters = LoanCounters::default();
        let pool = BufferPool::new("test", 1);
        let loan = counters.loan(Some(&Panicking), &pool, crate::blob::MIN_LEN - 1);
        assert!(!loan.is_shared());
        assert_eq!(counters.stats().pooled, 1);
    }
}
