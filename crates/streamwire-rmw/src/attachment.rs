//! The attachment every rmw_zenoh publication carries, without which rmw_zenoh drops
//! the sample.
//!
//! Source: ros2/rmw_zenoh (Jazzy) `docs/design.md` ("Publishers") and
//! `rmw_zenoh_cpp/src/detail/attachment_helpers.cpp`: 8 bytes of sequence number (int64
//! little-endian), 8 bytes of source timestamp (ns since the epoch, int64 little-endian),
//! 1 byte of GID length (always 16), 16 bytes of publisher GID.

use crate::ContractError;

/// A GID's length (`RMW_GID_STORAGE_SIZE`).
pub const GID_LEN: usize = 16;

/// The attachment's length: 8 + 8 + 1 + 16.
pub const ATTACHMENT_LEN: usize = 8 + 8 + 1 + GID_LEN;

/// A publication's attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attachment {
    /// The publisher's sequence number (rmw_zenoh counts from 1).
    pub sequence_number: i64,
    /// When it was published, ns since the epoch.
    pub source_timestamp: i64,
    /// The publisher's GID.
    pub gid: [u8; GID_LEN],
}

impl Attachment {
    /// The 33 bytes.
    ///
    /// ```
    /// use streamwire_rmw::Attachment;
    /// let a = Attachment { sequence_number: 1, source_timestamp: 2, gid: [7; 16] };
    /// let bytes = a.encode();
    /// assert_eq!(bytes.len(), 33);
    /// assert_eq!(&bytes[..9], &[1, 0, 0, 0, 0, 0, 0, 0, 2]);
    /// assert_eq!(bytes[16], 16);
    /// assert_eq!(Attachment::decode(&bytes)?, a);
    /// assert!(Attachment::decode(&bytes[..32]).is_err());
    /// # Ok::<(), streamwire_rmw::ContractError>(())
    /// ```
    pub fn encode(&self) -> [u8; ATTACHMENT_LEN] {
        let mut out = [0; ATTACHMENT_LEN];
        out[..8].copy_from_slice(&self.sequence_number.to_le_bytes());
        out[8..16].copy_from_slice(&self.source_timestamp.to_le_bytes());
        out[16] = GID_LEN as u8;
        out[17..].copy_from_slice(&self.gid);
        out
    }

    /// Reads an attachment, refusing any other length and a GID length byte other than
    /// 16 (what rmw_zenoh's reader would misread or refuse).
    pub fn decode(bytes: &[u8]) -> Result<Attachment, ContractError> {
        let refuse = |why: &'static str| ContractError::Attachment {
            len: bytes.len(),
            why,
        };
        if bytes.len() != ATTACHMENT_LEN {
            return Err(refuse("not 33 bytes"));
        }
        let (sequence, rest) = bytes.split_at(8);
        let (timestamp, rest) = rest.split_at(8);
        let (gid_len, gid) = rest.split_at(1);
        if usize::from(gid_len[0]) != GID_LEN {
            return Err(refuse("a GID length other than 16"));
        }
        let word = |slice: &[u8]| {
            let mut word = [0; 8];
            word.copy_from_slice(slice);
            i64::from_le_bytes(word)
        };
        let mut gid_bytes = [0; GID_LEN];
        gid_bytes.copy_from_slice(gid);
        Ok(Attachment {
            sequence_number: word(sequence),
            source_timestamp: word(timestamp),
            gid: gid_bytes,
        })
    }
}
