// The Foxglove side of streamwire-web's tests/foxglove.rs: Foxglove's own client library
// (@foxglove/ws-protocol's FoxgloveClient) over `new WebSocket(url, ["foxglove.sdk.v1"])`,
// messages decoded by @foxglove/rosmsg + @foxglove/rosmsg2-serialization over the schemas
// the relay advertised. Reads one JSON request on stdin, writes one JSON answer on stdout.
//   {"mode": "session", "url", "publish": [twist, ...]}: every channel, one decoded message
//     of each, the parameters, and the answers to publishing `cmd_vel` (CDR and JSON) and
//     to refused requests.
//   {"mode": "refused", "url", "origin"?, "subprotocol"?}: the HTTP status of the upgrade (101
//     and the subprotocol chosen when it is not refused).
//   {"mode": "subprotocols", "url", "offers": [[subprotocol, ...], ...]}: for each client
//     version (0.8.0, and 0.7.2 through its npm alias) and each list offered in that order,
//     the subprotocol the relay chose, whether serverInfo came, and what the client threw.
//   {"mode": "stall", "url", "stall_ms"}: subscribes to every channel, then stops reading
//     (a busy event loop) for stall_ms, then reads on until the relay closes or 2 s pass.
// Each wait is bounded; a failure answers {"error": text}.
"use strict";
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader, MessageWriter } = require("@foxglove/rosmsg2-serialization");
const WebSocket = require("ws");
const CLIENTS = {
  "0.8.0": require("@foxglove/ws-protocol").FoxgloveClient,
  "0.7.2": require("ws-protocol-0.7.2").FoxgloveClient,
};

const SUBPROTOCOL = "foxglove.sdk.v1";
const WAIT_MS = 20000;

// A decoded value as JSON: bigints as numbers, long arrays as their length and head.
function plain(value) {
  if (typeof value === "bigint") return Number(value);
  if (ArrayBuffer.isView(value) || Array.isArray(value)) {
    const items = Array.from(value, plain);
    return items.length > 16 ? { length: items.length, head: items.slice(0, 8) } : items;
  }
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  return value;
}

function within(ms, what, promise) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms)),
  ]);
}

function connect(url, options) {
  const ws = new WebSocket(url, [SUBPROTOCOL], options);
  const client = new FoxgloveClient({ ws });
  const events = { statuses: [], parameterValues: [], closed: null, errors: [] };
  client.on("status", (s) => events.statuses.push(s));
  client.on("parameterValues", (p) => events.parameterValues.push(p));
  client.on("error", (e) => events.errors.push(String(e)));
  client.on("close", (e) => (events.closed = { code: e.code, reason: String(e.reason ?? "") }));
  const channels = new Promise((resolve) => client.on("advertise", resolve));
  const serverInfo = new Promise((resolve) => client.on("serverInfo", resolve));
  return { ws, client, events, channels, serverInfo };
}

function until(test, what) {
  return within(
    WAIT_MS,
    what,
    new Promise((resolve) => {
      const poll = () => (test() ? resolve() : setTimeout(poll, 20));
      poll();
    }),
  );
}

async function session(request) {
  const { ws, client, events, channels: advertised, serverInfo: info } = connect(request.url);
  const serverInfo = await within(WAIT_MS, "serverInfo", info);
  const channels = await within(WAIT_MS, "advertise", advertised);
  const decoders = new Map();
  const messages = {};
  const bySubscription = new Map();
  client.on("message", ({ subscriptionId, data }) => {
    const channel = bySubscription.get(subscriptionId);
    if (!channel || messages[channel.topic] !== undefined) return;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    try {
      messages[channel.topic] =
        channel.encoding === "cdr"
          ? plain(decoders.get(channel.id).readMessage(bytes))
          : JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      messages[channel.topic] = { error: String(e) };
    }
  });
  for (const channel of channels) {
    if (channel.encoding === "cdr") {
      decoders.set(channel.id, new MessageReader(parse(channel.schema, { ros2: true })));
    }
    bySubscription.set(client.subscribe(channel.id), channel);
  }
  client.getParameters([], "all");
  await until(() => events.parameterValues.length > 0, "parameterValues");
  client.setParameters([{ name: "camera.fps", value: 1 }], "set");
  await until(() => events.parameterValues.length > 1, "parameterValues after setParameters");

  // cmd_vel in CDR (written over the Twist schema from @foxglove/rosmsg's own parse), and
  // in JSON; then a topic the relay refuses, and a message on a channel never advertised.
  const twist = parse(request.twist_schema, { ros2: true });
  const cdr = client.advertise({
    topic: "/cmd_vel",
    encoding: "cdr",
    schemaName: "geometry_msgs/msg/Twist",
  });
  const json = client.advertise({
    topic: "cmd_vel",
    encoding: "json",
    schemaName: "geometry_msgs/msg/Twist",
  });
  const [first, ...rest] = request.publish;
  client.sendMessage(cdr, new MessageWriter(twist).writeMessage(first));
  for (const t of rest) client.sendMessage(json, new TextEncoder().encode(JSON.stringify(t)));
  const statusesBefore = events.statuses.length;
  client.advertise({ topic: "/odom", encoding: "cdr", schemaName: "nav_msgs/msg/Odometry" });
  client.sendMessage(99, new Uint8Array([0, 1, 0, 0]));
  await until(() => events.statuses.length >= statusesBefore + 2, "statuses of the refusals");
  // Every channel, `/cmd_vel` too (the relay's output of the commands just published).
  await until(() => Object.keys(messages).length === channels.length, "a message on every channel");
  const protocol = ws.protocol;
  client.close();
  return {
    protocol,
    serverInfo,
    channels: channels.map(({ id, topic, encoding, schemaName, schemaEncoding }) => ({
      id,
      topic,
      encoding,
      schemaName,
      schemaEncoding,
    })),
    messages,
    parameterValues: events.parameterValues,
    statuses: events.statuses.map(({ level, message, id }) => ({ level, message, id })),
    errors: events.errors,
  };
}

// The HTTP status of an upgrade the relay refuses (`ws` reports the response).
function refused(request) {
  const options = request.origin ? { origin: request.origin } : {};
  const ws = new WebSocket(request.url, [request.subprotocol ?? SUBPROTOCOL], options);
  return within(
    WAIT_MS,
    "the relay's answer",
    new Promise((resolve) => {
      ws.on("unexpected-response", (_req, res) => {
        resolve({ status: res.statusCode });
        res.destroy();
      });
      ws.on("open", () => {
        resolve({ status: 101, protocol: ws.protocol });
        ws.close();
      });
      ws.on("error", (e) => resolve({ error: String(e) }));
    }),
  );
}

// One connection offering `offered` with FoxgloveClient `version`: the subprotocol the
// relay chose, and what the client made of it, once serverInfo came.
function offer(url, version, offered) {
  const result = { version, offered, protocol: null, serverInfo: false, error: null };
  // 0.7's client throws from the socket's open handler when it dislikes the subprotocol.
  let onThrow;
  return within(
    WAIT_MS,
    `serverInfo with ${version} offering ${offered}`,
    new Promise((resolve) => {
      const ws = new WebSocket(url, offered);
      onThrow = (e) => (result.error = String(e && e.message ? e.message : e));
      process.on("uncaughtException", onThrow);
      const client = new CLIENTS[version]({ ws });
      client.on("error", (e) => (result.error = String(e)));
      client.on("serverInfo", () => {
        result.serverInfo = true;
        result.protocol = ws.protocol;
        client.close();
        resolve(result);
      });
    }),
  ).finally(() => process.removeListener("uncaughtException", onThrow));
}

async function subprotocols(request) {
  const results = [];
  for (const version of Object.keys(CLIENTS)) {
    for (const offered of request.offers) results.push(await offer(request.url, version, offered));
  }
  return { results };
}

async function stall(request) {
  const { client, events, channels: advertised } = connect(request.url);
  const channels = await within(WAIT_MS, "advertise", advertised);
  let received = 0;
  client.on("message", () => (received += 1));
  for (const channel of channels) client.subscribe(channel.id);
  await until(() => received > 0, "a first message");
  // Stop reading: nothing runs in this process for stall_ms, so the socket is not read.
  const end = Date.now() + request.stall_ms;
  while (Date.now() < end) {
    // busy: the event loop reads nothing
  }
  await new Promise((resolve) => setTimeout(resolve, 2000));
  client.close();
  return { received, closed: events.closed };
}

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const request = JSON.parse(input);
  let answer;
  try {
    const modes = { session, refused, subprotocols, stall };
    answer = await modes[request.mode](request);
  } catch (e) {
    answer = { error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(answer));
  process.exit(0);
});
