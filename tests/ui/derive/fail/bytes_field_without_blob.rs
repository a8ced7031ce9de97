// A message's `Bytes` field says how it travels: as a blob (beside the message, read where
// it arrives) unless its author gives it a `with` of their own.
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Scan")]
pub struct Scan {
    pub ranges: Bytes,
    #[serde(with = "streamwire::blob")]
    pub intensities: Bytes,
    pub angle_step: f32,
}

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Chunk")]
pub struct Chunk(pub bytes::Bytes);

fn main() {}
