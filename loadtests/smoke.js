// Smoke: seconds of every path at a low rate (single and batch enqueues, long-polling consumers, single and batch
// acks), with the SLOs as thresholds. CI runs it against a real server; `make loadtest` against `make run`.
//   RATE=20 (single enqueues/s)  DURATION=10s
import exec from "k6/execution";
import { ack, ackBatch, dequeue, enqueue, enqueueBatch } from "./lib/api.js";
import { number, runId, text } from "./lib/config.js";
import { drain } from "./lib/drain.js";
import { makePayload } from "./lib/payload.js";
import { baseThresholds, latencyThresholds, TREND_STATS } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";
import { createTenant, deleteTenant, tenantCaller, waitReady } from "./lib/tenants.js";

const RATE = number("RATE", 20);
const DURATION = text("DURATION", "10s");
const TOPIC = "smoke";

export const options = {
  scenarios: {
    produce: {
      executor: "constant-arrival-rate",
      exec: "produce",
      rate: RATE,
      timeUnit: "1s",
      duration: DURATION,
      preAllocatedVUs: 4,
      maxVUs: 20,
    },
    produce_batch: {
      executor: "constant-arrival-rate",
      exec: "produceBatch",
      rate: 2,
      timeUnit: "1s",
      duration: DURATION,
      preAllocatedVUs: 2,
      maxVUs: 5,
    },
    consume: { executor: "constant-vus", exec: "consume", vus: 2, duration: DURATION },
    drain: {
      executor: "per-vu-iterations",
      exec: "finish",
      vus: 1,
      iterations: 1,
      startTime: DURATION,
      maxDuration: "60s",
    },
  },
  thresholds: {
    ...baseThresholds(),
    ...latencyThresholds({ enqueue: 100, enqueue_batch: 250, dequeue_wait: 1500, ack: 100, ack_batch: 250 }),
    delivery_latency: ["p(99)<2000"],
  },
  summaryTrendStats: TREND_STATS,
  setupTimeout: "120s",
  teardownTimeout: "60s",
};

export function setup() {
  waitReady();
  return { tenant: createTenant(runId()) };
}

export function produce(data) {
  enqueue(tenantCaller(data.tenant), TOPIC, makePayload(exec.scenario.iterationInTest));
}

export function produceBatch(data) {
  const payloads = Array.from({ length: 10 }, (_, i) => makePayload(i));
  enqueueBatch(tenantCaller(data.tenant), TOPIC, payloads);
}

export function consume(data) {
  const who = tenantCaller(data.tenant);
  const messages = dequeue(who, TOPIC, 10, 1);
  if (messages.length === 1) ack(who, messages[0]);
  else ackBatch(who, messages);
}

export function finish(data) {
  drain(tenantCaller(data.tenant), TOPIC);
}

export function teardown(data) {
  deleteTenant(data.tenant.slug);
}

export const handleSummary = summaryHandler("smoke");
