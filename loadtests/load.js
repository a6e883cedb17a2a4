// Load: producers at a constant arrival rate and long-polling consumers that ack what they get, for DURATION, with
// the SLOs as thresholds; the drain at the end proves nothing was lost.
//   MODE=single|batch  RATE=500 (messages/s)  BATCH=100  DURATION=60s  CONSUMERS=4  COUNT=100 (per dequeue)
//   PAYLOAD_BYTES=256  P99_ENQUEUE_MS=20 (single; batch: P99_BATCH_MS=100)  P99_DELIVERY_MS=50
import { number, runId, text } from "./lib/config.js";
import { drain } from "./lib/drain.js";
import { baseThresholds, latencyThresholds, TREND_STATS } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";
import { createTenant, deleteTenant, tenantCaller, waitReady } from "./lib/tenants.js";
import { consume, produceBatch, produceOne } from "./lib/workload.js";

const MODE = text("MODE", "single");
const RATE = number("RATE", 500);
const BATCH = number("BATCH", 100);
const DURATION = text("DURATION", "60s");
const CONSUMERS = number("CONSUMERS", 4);
const COUNT = number("COUNT", 100);
const BYTES = number("PAYLOAD_BYTES", 256);
const TOPIC = "load";
const iterations = MODE === "batch" ? RATE / BATCH : RATE;

export const options = {
  scenarios: {
    produce: {
      executor: "constant-arrival-rate",
      exec: "produce",
      rate: iterations,
      timeUnit: "1s",
      duration: DURATION,
      preAllocatedVUs: Math.max(10, Math.ceil(iterations / 10)),
      maxVUs: Math.max(20, Math.ceil(iterations / 5)),
    },
    consume: { executor: "constant-vus", exec: "consumeLoop", vus: CONSUMERS, duration: DURATION },
    drain: {
      executor: "per-vu-iterations",
      exec: "finish",
      vus: 1,
      iterations: 1,
      startTime: DURATION,
      maxDuration: "120s",
    },
  },
  thresholds: {
    ...baseThresholds(),
    ...(MODE === "batch"
      ? latencyThresholds({ enqueue_batch: number("P99_BATCH_MS", 100) })
      : latencyThresholds({ enqueue: number("P99_ENQUEUE_MS", 20) })),
    "delivery_latency{scenario:consume}": [`p(99)<${number("P99_DELIVERY_MS", 50)}`],
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
  if (MODE === "batch") produceBatch(data.tenant, TOPIC, BATCH, BYTES);
  else produceOne(data.tenant, TOPIC, BYTES);
}

export function consumeLoop(data) {
  consume(data.tenant, TOPIC, COUNT, 2);
}

export function finish(data) {
  drain(tenantCaller(data.tenant), TOPIC);
}

export function teardown(data) {
  deleteTenant(data.tenant.slug);
}

export const handleSummary = summaryHandler(`load-${MODE}`);
