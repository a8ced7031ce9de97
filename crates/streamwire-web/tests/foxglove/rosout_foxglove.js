// `/rosout` as Foxglove's own client (@foxglove/ws-protocol's FoxgloveClient) sees it,
// each message decoded by @foxglove/rosmsg2-serialization over the advertised schema.
// streamwire-bin's tests/rosout.rs drives it:
//   node rosout_foxglove.js <ws url with token> <text>
// and reads one JSON line: the first `/rosout` record whose `msg` contains <text> with its
// channel's schema name, or {"error": text} when none came within 30 s.
"use strict";
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");
const WebSocket = require("ws");

const [url, wanted] = process.argv.slice(2);
const WAIT_MS = 30000;

function answer(value) {
  console.log(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? Number(v) : v)));
  process.exit(0);
}

setTimeout(() => answer({ error: `no record with "${wanted}" within ${WAIT_MS} ms` }), WAIT_MS);
const client = new FoxgloveClient({
  ws: new WebSocket(url, ["foxglove.sdk.v1"]),
});
client.on("error", (error) => answer({ error: `connection: ${error?.message ?? error}` }));
const readers = new Map();
client.on("advertise", (channels) => {
  for (const channel of channels) {
    if (channel.topic !== "/rosout") continue;
    const reader = new MessageReader(parse(channel.schema, { ros2: true }));
    const id = client.subscribe(channel.id);
    readers.set(id, { reader, schemaName: channel.schemaName });
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const entry = readers.get(subscriptionId);
  if (!entry) return;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const record = entry.reader.readMessage(bytes);
  if (typeof record.msg === "string" && record.msg.includes(wanted)) {
    answer({ record, schemaName: entry.schemaName });
  }
});
