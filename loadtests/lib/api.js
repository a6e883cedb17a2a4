// The Skiplock calls the load tests make, each tagged with its endpoint (thresholds are per endpoint) and checked
// (status and body shape), and the custom metrics they feed.
import { check, sleep } from "k6";
import encoding from "k6/encoding";
import http from "k6/http";
import { Counter, Rate, Trend } from "k6/metrics";
import { BASE_URL } from "./config.js";
import { clock, readPayload } from "./payload.js";

/** Enqueue-to-delivery time, from the send time inside each payload to its dequeue (ms). */
export const deliveryLatency = new Trend("delivery_latency", true);
export const enqueued = new Counter("messages_enqueued");
export const delivered = new Counter("messages_delivered");
export const acked = new Counter("messages_acked");
/** Acks still owed, by count: each message stored adds the acks it owes (one per consumer group reading its topic,
 * see `acksPerMessage`; else one), each ack the server confirms takes one off. A message is acked once (a second ack
 * of it is refused), so `count==0` at the end of a run means every message enqueued was acked, by every group: none
 * lost, none acked twice, whatever else is left in the topic. */
export const unacked = new Counter("messages_unacked");
let acksOwed = 1;

/** Sets the acks each message enqueued from this VU owes (the consumer groups on its topic); call it in the init
 * context, where every VU runs it. */
export function acksPerMessage(n) {
  acksOwed = n;
}

/** `n` messages stored. */
export function countEnqueued(n, tags) {
  enqueued.add(n, tags);
  unacked.add(n * acksOwed, tags);
}

/** `n` acks confirmed. */
export function countAcked(n, tags) {
  acked.add(n, tags);
  unacked.add(-n, tags);
}
/** Each delivered payload decoded intact (what was sent is what came back). */
export const roundTrip = new Rate("payload_round_trip");
/** Enqueues answered 429 (queue_full, rate_limited, quota): back-pressure, counted apart from failures. */
export const backPressure = new Counter("enqueue_back_pressure");

export function basicAuth(username, password) {
  return `Basic ${encoding.b64encode(`${username}:${password}`)}`;
}

/** A caller: its Authorization header (and X-Tenant for a platform admin), plus extra tags for its metrics. */
export function caller(username, password, tenant = null, tags = {}) {
  const headers = { Authorization: basicAuth(username, password), "Content-Type": "application/json" };
  if (tenant) headers["X-Tenant"] = tenant;
  return { headers, tags };
}

// `name` is the route template: k6 would otherwise tag each URL with a message id as a time series of its own.
function params(who, endpoint, expected, name) {
  return {
    headers: who.headers,
    tags: { ...who.tags, endpoint, name },
    responseCallback: http.expectedStatuses(...expected),
    timeout: "30s",
  };
}

/** A 429 the scenario provokes: counted as back-pressure; with `backOff`, the caller then waits about its
 * Retry-After (0.5 to 1.5 times it: jitter, so that producers refused together do not all come back together), as a
 * client library does. The server's rate limits are meant to slow producers down, not to be spun against. */
function pushedBack(r, who, count, backOff) {
  backPressure.add(count, who.tags);
  if (backOff) sleep((Number(r.headers["Retry-After"]) || 1) * (0.5 + Math.random()));
}

function post(who, path, body, endpoint, expected, name = path) {
  return http.post(`${BASE_URL}${path}`, JSON.stringify(body), params(who, endpoint, expected, name));
}

/** One message; `allow429`: back-pressure is expected here (counted, not failed). Returns the id or null. */
export function enqueue(who, topic, payload, { allow429 = false, backOff = false, key = undefined } = {}) {
  const expected = allow429 ? [201, 429] : [201];
  const r = post(who, "/api/messages", { topic, payload, key }, "enqueue", expected);
  if (r.status === 429 && allow429) {
    pushedBack(r, who, 1, backOff);
    return null;
  }
  const ok = check(
    r,
    { "enqueue 201 with an id": (x) => x.status === 201 && typeof x.json("id") === "string" },
    {
      ...who.tags,
      endpoint: "enqueue",
    },
  );
  if (ok) countEnqueued(1, who.tags);
  return ok ? r.json("id") : null;
}

/** A batch into one topic; returns the number stored (0 on back-pressure or failure). */
export function enqueueBatch(who, topic, payloads, { allow429 = false, backOff = false } = {}) {
  const expected = allow429 ? [201, 429] : [201];
  const body = { topic, messages: payloads.map((payload) => ({ payload })) };
  const r = post(who, "/api/messages/batch", body, "enqueue_batch", expected);
  if (r.status === 429 && allow429) {
    pushedBack(r, who, payloads.length, backOff);
    return 0;
  }
  const ok = check(
    r,
    {
      "batch 201 with an id per message": (x) => x.status === 201 && x.json("ids").length === payloads.length,
    },
    { ...who.tags, endpoint: "enqueue_batch" },
  );
  if (ok) countEnqueued(payloads.length, who.tags);
  return ok ? payloads.length : 0;
}

/** Dequeue up to `count` (long polling `waitSeconds`), as `group` when given (a consumer group); records delivery
 * latency and the round trip. */
export function dequeue(who, topic, count = 1, waitSeconds = 0, visibility = 30, group = undefined) {
  const body = {
    topic,
    count,
    wait_seconds: waitSeconds,
    visibility_timeout_seconds: visibility,
    consumer_group: group,
  };
  const r = post(who, "/api/messages/dequeue", body, waitSeconds > 0 ? "dequeue_wait" : "dequeue", [200]);
  const ok = check(
    r,
    { "dequeue 200 with messages": (x) => x.status === 200 && Array.isArray(x.json("messages")) },
    {
      ...who.tags,
      endpoint: "dequeue",
    },
  );
  if (!ok) return [];
  const now = clock();
  const messages = r.json("messages");
  for (const m of messages) {
    const payload = readPayload(m.payload);
    roundTrip.add(payload !== null && typeof m.receipt === "string", who.tags);
    if (payload !== null) deliveryLatency.add(now - payload.s, who.tags);
  }
  delivered.add(messages.length, who.tags);
  return messages;
}

export function ack(who, message, group = undefined) {
  const r = post(
    who,
    `/api/messages/${message.id}/ack`,
    { receipt: message.receipt, consumer_group: group },
    "ack",
    [204],
    "/api/messages/{id}/ack",
  );
  if (check(r, { "ack 204": (x) => x.status === 204 }, { ...who.tags, endpoint: "ack" })) countAcked(1, who.tags);
}

export function ackBatch(who, messages, group = undefined) {
  if (messages.length === 0) return;
  const body = { acks: messages.map((m) => ({ id: m.id, receipt: m.receipt, consumer_group: group })) };
  const r = post(who, "/api/messages/ack", body, "ack_batch", [200]);
  check(
    r,
    {
      "batch ack 200, all acked": (x) => x.status === 200 && x.json("acked") === messages.length,
    },
    { ...who.tags, endpoint: "ack_batch" },
  );
  // What the server acked (a lease that ran out is not: its message comes back and is acked later).
  if (r.status === 200) countAcked(r.json("acked"), who.tags);
}

/** Waiting (pending + processing) messages of `topic`, from GET /api/topics: on a topic with consumer groups, the
 * messages some group still owes. */
export function waiting(who, topic) {
  const r = http.get(`${BASE_URL}/api/topics`, { headers: who.headers, tags: { ...who.tags, endpoint: "topics" } });
  check(r, { "topics 200": (x) => x.status === 200 }, { ...who.tags, endpoint: "topics" });
  const found = r.json("items").find((t) => t.topic === topic);
  return found ? found.pending + found.processing : 0;
}

/** A consumer group's deliveries still owed (pending + processing), from GET /api/topics/{topic}/consumer-groups. */
export function owed(who, topic, group) {
  const r = http.get(`${BASE_URL}/api/topics/${topic}/consumer-groups`, {
    headers: who.headers,
    tags: { ...who.tags, endpoint: "consumer_groups", name: "/api/topics/{topic}/consumer-groups" },
  });
  check(r, { "consumer groups 200": (x) => x.status === 200 }, { ...who.tags, endpoint: "consumer_groups" });
  const found = r.json("groups").find((g) => g.consumer_group === group);
  return found ? found.pending + found.processing : 0;
}
