// Load: producers at a constant arrival rate and long-polling consumers that ack what they get, for DURATION, with
// the SLOs as thresholds; the drain at the end proves nothing was lost.
//   MODE=single|batch  RATE=500 (messages/s)  BATCH=100  DURATION=60s  CONSUMERS=4  COUNT=100 (per dequeue)
//   PAYLOAD_BYTES=256  P99_ENQUEUE_MS=20 (single; batch: P99_BATCH_MS=100)  P99_DELIVERY_MS=50
import { number, text } from "./lib/config.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds, latencyThresholds } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";
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
    produce: arrivalScenario("produce", iterations, DURATION),
    consume: { executor: "constant-vus", exec: "consumeLoop", vus: CONSUMERS, duration: DURATION },
    drain: drainScenario(DURATION, "120s"),
  },
  thresholds: {
    ...baseThresholds(),
    ...(MODE === "batch"
      ? latencyThresholds({ enqueue_batch: number("P99_BATCH_MS", 100) })
      : latencyThresholds({ enqueue: number("P99_ENQUEUE_MS", 20) })),
    "delivery_latency{scenario:consume}": [`p(99)<${number("P99_DELIVERY_MS", 50)}`],
  },
  ...COMMON_OPTIONS,
};

export function produce(data) {
  if (MODE === "batch") produceBatch(data.tenant, TOPIC, BATCH, BYTES);
  else produceOne(data.tenant, TOPIC, BYTES);
}

export function consumeLoop(data) {
  consume(data.tenant, TOPIC, COUNT, 2);
}

export const { setup, finish, teardown } = oneTenant(TOPIC);

export const handleSummary = summaryHandler(`load-${MODE}`);
