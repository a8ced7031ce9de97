//! Buffers zenoh sends by reference: shared-memory loans, and received slices sent on.
//!
//! A `bytes::Bytes` has no way back to its owner, so once a shared-memory buffer is wrapped
//! in one, zenoh would see ordinary bytes and copy them into its pool again. So this module
//! keeps a table, by address, of the zenoh slices behind the `Bytes` it made: a loan of the
//! session's shared memory once frozen, and each slice of a received frame. When a frame is
//! sent, each of its parts is looked up: a part that is a known slice is appended as that
//! slice, which zenoh sends as a reference to shared memory when it is one; any other
//! part (a sub-slice included) is appended as it is.
//!
//! An entry lives exactly as long as the `Bytes` it describes: the owner removes it when
//! the last clone drops, before the memory can be reused, so an address in the table is
//! always the slice's.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, LazyLock, OnceLock};

use bytes::Bytes;
use parking_lot::RwLock;
use streamwire_core::blob;
use streamwire_core::buffer::{LoanSource, SharedLoan};
use zenoh::Wait;
use zenoh::bytes::ZBytes;
use zenoh::shm::{GarbageCollect, JustAlloc, ShmProvider, ZShm, ZShmMut};
use zenoh_buffers::{ZBuf, ZSlice};

type PosixProvider = ShmProvider<zenoh::shm::PosixShmProviderBackend>;

/// The slices behind the `Bytes` this process made of zenoh buffers, by start address:
/// (length, slice).
static KNOWN: LazyLock<RwLock<BTreeMap<usize, (usize, ZSlice)>>> =
    LazyLock::new(|| RwLock::new(BTreeMap::new()));

/// Slices from this size up are entered in the table: zenoh's threshold for shared memory
/// (smaller ones are copied by zenoh whatever their origin, and a frame's small head would
/// only cost two writes of the table each).
const KNOWN_FROM: usize = blob::MIN_LEN;

/// A `Bytes` of one zenoh slice, with its entry in the table for as long as it lives (when
/// it is large enough to be worth one).
pub(crate) fn known_bytes(slice: ZSlice) -> Bytes {
    let start = slice.as_ref().as_ptr() as usize;
    let len = slice.len();
    let entered = len >= KNOWN_FROM;
    if entered {
        KNOWN.write().insert(start, (len, slice.clone()));
    }
    Bytes::from_owner(KnownSlice {
        slice,
        start,
        entered,
    })
}

/// The owner of a `Bytes` made by [`known_bytes`]: removes its entry when dropped.
struct KnownSlice {
    slice: ZSlice,
    start: usize,
    entered: bool,
}

impl AsRef<[u8]> for KnownSlice {
    fn as_ref(&self) -> &[u8] {
        self.slice.as_ref()
    }
}

impl Drop for KnownSlice {
    fn drop(&mut self) {
        if self.entered {
            KNOWN.write().remove(&self.start);
        }
    }
}

/// `part` as zenoh sends it: the known slice it is, or the bytes themselves.
pub(crate) fn to_zbytes_part(part: &Bytes) -> ZBytes {
    match known_slice_of(part) {
        Some(slice) => ZBytes::from(ZBuf::from(slice)),
        None => ZBytes::from(part.clone()),
    }
}

/// The known slice that is exactly `part`. Only a whole slice: zenoh sends a slice of
/// shared memory as a reference to its whole chunk (zenoh-codec writes the chunk's info,
/// not the slice's range), so a part of one must travel as bytes.
fn known_slice_of(part: &[u8]) -> Option<ZSlice> {
    if part.len() < KNOWN_FROM {
        return None;
    }
    let known = KNOWN.read();
    let (len, slice) = known.get(&(part.as_ptr() as usize))?;
    (*len == part.len()).then(|| slice.clone())
}

/// Splits a received payload into its slices, each a `Bytes` that keeps its own zenoh
/// slice (and nothing else of the payload) alive and is known to the table.
pub(crate) fn received_parts(payload: &ZBytes) -> Vec<Bytes> {
    ZBuf::from(payload.clone())
        .zslices()
        .map(|slice| known_bytes(slice.clone()))
        .collect()
}

/// Loans of a session's shared memory (zenoh's provider of the session, the same pool
/// zenoh copies large payloads into when they are not shared memory already).
pub(crate) struct ShmLoans {
    session: zenoh::Session,
    /// The provider, once zenoh has made it (on a thread of its own, after the session
    /// opened).
    provider: OnceLock<Arc<PosixProvider>>,
}

impl ShmLoans {
    /// Loans of `session`'s shared memory; asking for its provider now starts making it.
    pub(crate) fn new(session: zenoh::Session) -> ShmLoans {
        let loans = ShmLoans {
            session,
            provider: OnceLock::new(),
        };
        let _ = loans.provider();
        loans
    }

    fn provider(&self) -> Option<&Arc<PosixProvider>> {
        if let Some(provider) = self.provider.get() {
            return Some(provider);
        }
        let provider = self.session.get_shm_provider().into_option()?;
        Some(self.provider.get_or_init(|| provider))
    }
}

impl LoanSource for ShmLoans {
    fn loan(&self, len: usize) -> Option<Box<dyn SharedLoan>> {
        // Garbage-collect the chunks whose every reference is gone (frames consumers
        // dropped), never wait: a full pool is a fallback to the heap, counted by the
        // output that asked (`LoanCounters`, the report's `loan fallback`).
        let buf = self.provider().and_then(|provider| {
            provider
                .alloc(len)
                .with_policy::<GarbageCollect<JustAlloc>>()
                .wait()
                .ok()
        })?;
        Some(Box::new(ShmLoan(buf)))
    }
}

/// A loan of shared memory: zenoh's mutable buffer until frozen.
struct ShmLoan(ZShmMut);

impl Deref for ShmLoan {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl DerefMut for ShmLoan {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl SharedLoan for ShmLoan {
    fn freeze(self: Box<Self>) -> Bytes {
        let shm: ZShm = self.0.into();
        let payload = ZBuf::from(ZBytes::from(shm));
        match payload.zslices().next() {
            Some(slice) => known_bytes(slice.clone()),
            None => Bytes::new(),
        }
    }
}

/// Whether `part` lies in a buffer this process knows as zenoh's (a loan, or a received
/// slice): what a test asks to prove a frame would be sent by reference.
pub fn is_known(part: &[u8]) -> bool {
    known_slice_of(part).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_received_slice_is_known_whole_and_forgotten_when_dropped() {
        let payload = ZBytes::from(vec![5u8; 8192]);
        let parts = received_parts(&payload);
        let [part] = parts.as_slice() else {
            panic!("one slice expected, got {}", parts.len());
        };
        assert!(is_known(part));
        assert_eq!(to_zbytes_part(part).to_bytes().as_ref(), &[5u8; 8192]);
        let inner = part.slice(100..200);
        assert!(!is_known(&inner), "a part of a slice travels as bytes");
        assert_eq!(to_zbytes_part(&inner).to_bytes().as_ref(), &[5u8; 100]);
        let heap = Bytes::from(vec![5u8; 8192]);
        assert!(!is_known(&heap));
        let address = part.as_ptr() as usize;
        drop((parts, inner));
        assert!(!KNOWN.read().contains_key(&address));
    }
}
