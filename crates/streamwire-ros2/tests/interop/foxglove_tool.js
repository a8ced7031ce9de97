// The Foxglove side of streamwire-ros2's interop tests (tests/interop.rs drives it).
// Reads one JSON request on stdin, writes one JSON answer on stdout:
//   {"items": [{"text": ros2msg full text, "cdr": hex}, ...]}
//   -> [{"definitions": [{"name", "fields": [names]}], "value": decoded message}, ...]
// The text is parsed by @foxglove/rosmsg (ROS 2 mode), the bytes decoded by
// @foxglove/rosmsg2-serialization's MessageReader. A failing item answers {"error": text}.
"use strict";
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");

function plain(value) {
  if (typeof value === "bigint") return Number(value);
  if (ArrayBuffer.isView(value)) return Array.from(value, plain);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  return value;
}

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const request = JSON.parse(input);
  const answers = request.items.map((item) => {
    try {
      const definitions = parse(item.text, { ros2: true });
      const reader = new MessageReader(definitions);
      const value = reader.readMessage(Buffer.from(item.cdr, "hex"));
      return {
        definitions: definitions.map((d) => ({
          name: d.name ?? "",
          fields: d.definitions.filter((f) => !f.isConstant).map((f) => f.name),
        })),
        value: plain(value),
      };
    } catch (e) {
      return { error: String(e && e.stack ? e.stack : e) };
    }
  });
  process.stdout.write(JSON.stringify(answers));
});
