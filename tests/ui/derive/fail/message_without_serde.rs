// A message travels serialized: `#[derive(Message)]` needs `Serialize` and `Deserialize` too.
use streamwire::prelude::*;

#[derive(Clone, Debug, Message)]
#[message(name = "acme/Beep")]
pub struct Beep;

fn main() {}
