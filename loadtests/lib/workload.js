// The producer and consumer iterations the scenarios share. A caller comes from setup()'s data in each VU.
import exec from "k6/execution";
import { ack, ackBatch, dequeue, enqueue, enqueueBatch } from "./api.js";
import { makePayload } from "./payload.js";
import { tenantCaller } from "./tenants.js";

/** One single enqueue into `topic`. */
export function produceOne(tenant, topic, bytes, options = {}) {
  enqueue(tenantCaller(tenant), topic, makePayload(exec.scenario.iterationInTest, bytes), options);
}

/** One batch of `size` into `topic`. */
export function produceBatch(tenant, topic, size, bytes, options = {}) {
  const base = exec.scenario.iterationInTest * size;
  const payloads = Array.from({ length: size }, (_, i) => makePayload(base + i, bytes));
  return enqueueBatch(tenantCaller(tenant), topic, payloads, options);
}

/** One long-polling dequeue of up to `count`, then its acks (one call for several). */
export function consume(tenant, topic, count, waitSeconds = 2) {
  const who = tenantCaller(tenant);
  const messages = dequeue(who, topic, count, waitSeconds);
  if (messages.length === 1) ack(who, messages[0]);
  else ackBatch(who, messages);
  return messages.length;
}
