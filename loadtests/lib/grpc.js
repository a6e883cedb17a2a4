// queue-ti's gRPC service (queue.QueueService, api/queue_ti/queue.proto) as the load tests call it: a bearer token
// from POST /api/auth/login, renewed by POST /api/auth/refresh before it expires, sent as `authorization` metadata
// over a plaintext connection, one per VU. Each call is tagged with its endpoint, checked (status code and message
// shape) and counted in grpc_req_failed; deliveries feed the same metrics as the REST calls' (api.js), tagged
// via:grpc so that a threshold can tell them from the REST drain's.
import { check } from "k6";
import encoding from "k6/encoding";
import http from "k6/http";
import { Rate } from "k6/metrics";
import grpc from "k6/net/grpc";
import { countAcked, countEnqueued, delivered, deliveryLatency, roundTrip } from "./api.js";
import { BASE_URL, GRPC_ADDRESS } from "./config.js";
import { clock, readPayload } from "./payload.js";

const client = new grpc.Client();
// Import paths resolve from the entry script's folder (loadtests/), not this module's. queue.proto imports
// google/protobuf/timestamp.proto, one of the well-known types k6 bundles: no path of its own is needed.
client.load(["../api/queue_ti"], "queue.proto");

const SERVICE = "queue.QueueService";
const VIA = { via: "grpc" };
/** gRPC calls answered with a status their caller did not expect (k6 has no such rate for gRPC of its own). */
export const grpcFailed = new Rate("grpc_req_failed");

// This VU's connection and bearer token (`expires`: the token's exp, in ms).
let connected = false;
let session = null;

function expiry(token) {
  const claims = JSON.parse(encoding.b64decode(token.split(".")[1], "rawurl", "s"));
  return claims.exp * 1000;
}

function tokenCall(path, body, headers, what) {
  const r = http.post(`${BASE_URL}${path}`, body, { headers, tags: { phase: "auth" } });
  if (!check(r, { [`${what} 200 with a token`]: (x) => x.status === 200 && typeof x.json("token") === "string" })) {
    throw new Error(`${what}: ${r.status} ${r.body}`);
  }
  return r.json("token");
}

/** A bearer token for `tenant`'s user (setup() logs in once; the VUs share the token). */
export function login(tenant) {
  const body = JSON.stringify({ username: tenant.username, password: tenant.password });
  return tokenCall("/api/auth/login", body, { "Content-Type": "application/json" }, "login");
}

/** The token to send now: setup()'s, or a refreshed one within a minute of its expiry (a run past 15 minutes). */
function bearer(data) {
  if (session === null) session = { token: data.token, expires: expiry(data.token) };
  if (session.expires - Date.now() < 60_000) {
    const token = tokenCall("/api/auth/refresh", null, { Authorization: `Bearer ${session.token}` }, "refresh");
    session = { token, expires: expiry(token) };
  }
  return session.token;
}

function tagsOf(data, endpoint) {
  return { tenant: data.tenant.tags.tenant || data.tenant.slug, endpoint, ...VIA };
}

/** One unary call of `method`; a status outside `expected` counts in grpc_req_failed. */
function invoke(data, method, request, endpoint, expected = [grpc.StatusOK]) {
  if (!connected) {
    client.connect(GRPC_ADDRESS, { plaintext: true, timeout: "10s" });
    connected = true;
  }
  const tags = tagsOf(data, endpoint);
  const r = client.invoke(`${SERVICE}/${method}`, request, {
    metadata: { authorization: `Bearer ${bearer(data)}` },
    tags,
    timeout: "30s",
  });
  grpcFailed.add(!expected.includes(r.status), tags);
  return r;
}

/** Enqueue one message with metadata `{n: <sequence>}`; returns its id or null. */
export function enqueue(data, topic, payload, sequence) {
  const request = { topic, payload, metadata: { n: String(sequence), source: "k6" } };
  const r = invoke(data, "Enqueue", request, "enqueue");
  const ok = check(
    r,
    { "Enqueue OK with an id": (x) => x.status === grpc.StatusOK && typeof x.message.id === "string" },
    tagsOf(data, "enqueue"),
  );
  if (ok) countEnqueued(1, tagsOf(data, "enqueue"));
  return ok ? r.message.id : null;
}

/** Records a delivered message: enqueue-to-delivery latency, and the round trip (payload and metadata intact). */
function received(data, message, now) {
  const tags = tagsOf(data, "delivery");
  const payload = readPayload(message.payload);
  const metadata = message.metadata || {};
  roundTrip.add(payload !== null && metadata.n === String(payload.n) && metadata.source === "k6", tags);
  if (payload !== null) deliveryLatency.add(now - payload.s, tags);
  delivered.add(1, tags);
}

/** BatchDequeue up to `count` (it never waits: an empty topic answers an empty list at once). */
export function batchDequeue(data, topic, count, visibility = 30) {
  const request = { topic, count, visibility_timeout_seconds: visibility };
  const r = invoke(data, "BatchDequeue", request, "batch_dequeue");
  const ok = check(
    r,
    {
      "BatchDequeue OK with a list": (x) => x.status === grpc.StatusOK && Array.isArray(x.message.messages),
    },
    tagsOf(data, "batch_dequeue"),
  );
  if (!ok) return [];
  const now = clock();
  for (const m of r.message.messages) received(data, m, now);
  return r.message.messages;
}

/** Dequeue one message, or null when none is available (NOT_FOUND, expected). */
export function dequeue(data, topic, visibility = 30) {
  const request = { topic, visibility_timeout_seconds: visibility };
  const r = invoke(data, "Dequeue", request, "dequeue", [grpc.StatusOK, grpc.StatusNotFound]);
  const ok = check(
    r,
    {
      "Dequeue OK with a message, or NOT_FOUND": (x) =>
        (x.status === grpc.StatusOK && typeof x.message.id === "string") || x.status === grpc.StatusNotFound,
    },
    tagsOf(data, "dequeue"),
  );
  if (!ok || r.status !== grpc.StatusOK) return null;
  received(data, r.message, clock());
  return r.message;
}

/** Ack the caller's lease of one message. */
export function ack(data, message) {
  const r = invoke(data, "Ack", { id: message.id }, "ack");
  if (check(r, { "Ack OK": (x) => x.status === grpc.StatusOK }, tagsOf(data, "ack")))
    countAcked(1, tagsOf(data, "ack"));
}

/** gRPC latency bounds per endpoint (ms), as thresholds on grpc_req_duration, e.g. {enqueue: 20}. */
export function grpcLatencyThresholds(bounds) {
  const out = {};
  for (const [endpoint, ms] of Object.entries(bounds)) out[`grpc_req_duration{endpoint:${endpoint}}`] = [`p(99)<${ms}`];
  return out;
}
