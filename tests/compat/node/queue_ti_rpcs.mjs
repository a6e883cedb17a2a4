// Every RPC of queue-ti's gRPC service (queue.QueueService) from Node's generic gRPC client: @grpc/grpc-js with the
// proto loaded at run time by @grpc/proto-loader from Skiplock's api/queue_ti/queue.proto, as grpcurl would use it
// (queue-ti's own Node client, @queue-ti/client, is not on npm). It logs in over HTTP for a bearer token, then:
// a forged token refused (UNAUTHENTICATED); Enqueue with metadata and a key; Dequeue, Nack, Dequeue again (one
// retry), Ack; Dequeue and Ack on nothing (NOT_FOUND); BatchDequeue of three, acked one by one, then of none;
// Subscribe, woken by an Enqueue, then Ack; invalid requests (INVALID_ARGUMENT).
//
// Environment: SKIPLOCK_URL (http://host:port), SKIPLOCK_GRPC_ADDRESS (host:port), SKIPLOCK_USERNAME and
// SKIPLOCK_PASSWORD (a tenant_admin, or a user with produce and consume grants on TOPIC), TOPIC (node-compat),
// PROTO (the proto file; default: the repository's). Prints a line per step and, last, one JSON line
// {"topic": ..., "acked": [ids]}; exits 0 when every step held, 1 otherwise.
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROTO = process.env.PROTO || path.resolve(HERE, "../../../api/queue_ti/queue.proto");
const BASE_URL = (process.env.SKIPLOCK_URL || "http://127.0.0.1:8080").replace(/\/$/, "");
const ADDRESS = process.env.SKIPLOCK_GRPC_ADDRESS || "127.0.0.1:50051";
const TOPIC = process.env.TOPIC || "node-compat";
const CALL_SECONDS = 15;

const { status } = grpc;
// keepCase: the proto's own field names; defaults: unset scalars read as their zero values, as in the proto3 spec.
const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: String, defaults: true, oneofs: true });
const { QueueService } = grpc.loadPackageDefinition(definition).queue;

function bearer(token) {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  return metadata;
}

function deadline() {
  return { deadline: Date.now() + CALL_SECONDS * 1000 };
}

/** A unary call as a promise: its response, or the grpc error (with `code`). */
function unary(client, method, request, metadata) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, deadline(), (error, response) => (error ? reject(error) : resolve(response)));
  });
}

/** A unary call that must fail with `code`; returns the error. */
async function refused(client, method, request, metadata, code) {
  try {
    await unary(client, method, request, metadata);
  } catch (error) {
    assert.equal(error.code, code, `${method}: expected status ${code}, got ${error.code} (${error.details})`);
    return error;
  }
  throw new assert.AssertionError({ message: `${method} succeeded; expected status ${code}` });
}

async function login() {
  const username = process.env.SKIPLOCK_USERNAME;
  const password = process.env.SKIPLOCK_PASSWORD;
  assert.ok(username && password, "SKIPLOCK_USERNAME and SKIPLOCK_PASSWORD are required");
  const r = await fetch(`${BASE_URL}/api/auth/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ username, password }),
  });
  const body = await r.text();
  assert.equal(r.status, 200, `login: ${r.status} ${body}`);
  const { token } = JSON.parse(body);
  assert.equal(typeof token, "string");
  return token;
}

function step(text) {
  console.log(`ok - ${text}`);
}

function checkTimestamp(ts) {
  assert.ok(ts && Number(ts.seconds) > 0, "created_at is set");
  const age = Date.now() / 1000 - Number(ts.seconds);
  assert.ok(age > -60 && age < 600, `created_at is recent (${age} s ago)`);
}

/** A Subscribe stream on TOPIC and the first message it delivers; `publish` runs once the stream is opened. The
 * caller cancels the stream (CANCELLED is then its expected end). */
function firstSubscribed(client, metadata, publish) {
  const stream = client.Subscribe({ topic: TOPIC, visibility_timeout_seconds: 30 }, metadata);
  const first = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`Subscribe delivered nothing in ${CALL_SECONDS} s`)),
      CALL_SECONDS * 1000,
    );
    stream.once("data", (message) => {
      clearTimeout(timer);
      resolve(message);
    });
    stream.on("error", (error) => {
      clearTimeout(timer);
      reject(error); // after the first message (the cancel): ignored, the promise is settled
    });
    // Soon after the stream opened, so that it most likely waits for it (a message already there is leased too).
    setTimeout(() => publish().catch(reject), 300);
  });
  return { stream, first };
}

async function main() {
  const token = await login();
  step("POST /api/auth/login answered a bearer token");
  const client = new QueueService(ADDRESS, grpc.credentials.createInsecure());
  const auth = bearer(token);
  const acked = [];
  try {
    const forged = await refused(
      client,
      "Enqueue",
      { topic: TOPIC, payload: Buffer.from("x") },
      bearer("forged"),
      status.UNAUTHENTICATED,
    );
    assert.deepEqual(forged.metadata.get("skiplock-code"), ["unauthorized"]);
    step("a forged token: UNAUTHENTICATED, skiplock-code unauthorized");

    // Enqueue, Dequeue, Nack, Dequeue (the retry), Ack.
    const payload = Buffer.from("hello from node");
    const metadata = { source: "node", step: "single" };
    const { id } = await unary(client, "Enqueue", { topic: TOPIC, payload, metadata, key: "node-key" }, auth);
    assert.match(id, /^[0-9a-f-]{36}$/);
    step(`Enqueue with metadata and a key: ${id}`);
    const leased = await unary(client, "Dequeue", { topic: TOPIC, visibility_timeout_seconds: 30 }, auth);
    assert.equal(leased.id, id);
    assert.equal(leased.topic, TOPIC);
    assert.deepEqual(Buffer.from(leased.payload), payload);
    assert.deepEqual({ ...leased.metadata }, metadata);
    assert.equal(leased.key, "node-key");
    assert.equal(leased.retry_count, 0);
    assert.ok(leased.max_retries >= 1, `max_retries ${leased.max_retries}`);
    checkTimestamp(leased.created_at);
    step("Dequeue: the message, its payload, metadata, key, created_at and retry count");
    await unary(client, "Nack", { id, error: "node says no" }, auth);
    const retried = await unary(client, "Dequeue", { topic: TOPIC }, auth);
    assert.equal(retried.id, id);
    assert.equal(retried.retry_count, 1);
    step("Nack, then Dequeue: the same message, retry_count 1");
    await unary(client, "Ack", { id }, auth);
    acked.push(id);
    step("Ack");
    await refused(client, "Dequeue", { topic: TOPIC }, auth, status.NOT_FOUND);
    await refused(client, "Ack", { id }, auth, status.NOT_FOUND);
    step("Dequeue of an empty topic and a second Ack: NOT_FOUND");

    // BatchDequeue of three, Ack each, then BatchDequeue of none.
    const batch = [];
    for (let n = 0; n < 3; n += 1) {
      const request = { topic: TOPIC, payload: Buffer.from(`batch-${n}`), metadata: { step: "batch", n: String(n) } };
      batch.push((await unary(client, "Enqueue", request, auth)).id);
    }
    const { messages } = await unary(client, "BatchDequeue", { topic: TOPIC, count: 10 }, auth);
    assert.deepEqual(messages.map((m) => m.id).sort(), [...batch].sort());
    for (const m of messages) {
      assert.equal(Buffer.from(m.payload).toString(), `batch-${m.metadata.n}`);
      checkTimestamp(m.created_at);
      await unary(client, "Ack", { id: m.id }, auth);
      acked.push(m.id);
    }
    step("BatchDequeue of three, each acked");
    const none = await unary(client, "BatchDequeue", { topic: TOPIC, count: 10 }, auth);
    assert.deepEqual(none.messages, []);
    await refused(client, "BatchDequeue", { topic: TOPIC, count: 0 }, auth, status.INVALID_ARGUMENT);
    step("BatchDequeue of an empty topic: no message; of count 0: INVALID_ARGUMENT");

    // Subscribe, woken by an Enqueue made while the stream waits.
    let published = null;
    const publish = async () => {
      const request = { topic: TOPIC, payload: Buffer.from("streamed"), metadata: { step: "subscribe" } };
      published = (await unary(client, "Enqueue", request, auth)).id;
    };
    const { stream, first } = firstSubscribed(client, auth, publish);
    try {
      const streamed = await first;
      assert.equal(streamed.id, published);
      assert.equal(Buffer.from(streamed.payload).toString(), "streamed");
      assert.deepEqual({ ...streamed.metadata }, { step: "subscribe" });
      assert.equal(streamed.retry_count, 0);
      checkTimestamp(streamed.created_at);
      await unary(client, "Ack", { id: streamed.id }, auth);
      acked.push(streamed.id);
    } finally {
      stream.cancel();
    }
    step("Subscribe: the message enqueued while the stream waited, then Ack");

    await refused(client, "Enqueue", { topic: "", payload: Buffer.from("x") }, auth, status.INVALID_ARGUMENT);
    step("Enqueue without a topic: INVALID_ARGUMENT");
  } finally {
    client.close();
  }
  console.log(JSON.stringify({ topic: TOPIC, acked }));
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(`not ok - ${error.stack || error}`);
    process.exit(1);
  },
);
