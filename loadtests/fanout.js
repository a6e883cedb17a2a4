// Fan-out: producers at RATE/s into one topic that GROUPS consumer groups consume (three services on one topic),
// CONSUMERS long-polling consumers per group taking BATCH at a time and acking them in one call. Each group receives
// every message: at the end each group is drained, and `nothing_lost` holds only when the topic is empty (a message
// goes once every group acked it), `messages_unacked` only when each message enqueued had GROUPS acks.
// `delivery_latency` is tagged with each group.
//   RATE=100  DURATION=30s  GROUPS=3  CONSUMERS=2 (per group)  BATCH=10
import { check } from "k6";
import http from "k6/http";
import { ackBatch, acksPerMessage, dequeue } from "./lib/api.js";
import { BASE_URL, number, text } from "./lib/config.js";
import { drain } from "./lib/drain.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds, latencyThresholds } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";
import { tenantCaller } from "./lib/tenants.js";
import { produceOne } from "./lib/workload.js";

const RATE = number("RATE", 100);
const DURATION = text("DURATION", "30s");
const GROUPS = Array.from({ length: number("GROUPS", 3) }, (_, i) => `service-${i}`);
const CONSUMERS = number("CONSUMERS", 2);
const BATCH = number("BATCH", 10);
const TOPIC = "fanout";
const seconds = parseInt(DURATION, 10);
// Each message is acked once by each group (`messages_unacked` counts what is owed).
acksPerMessage(GROUPS.length);

const scenarios = {
  produce: arrivalScenario("produce", RATE, DURATION, { startTime: "1s" }),
  drain: drainScenario(`${seconds + 3}s`, "90s"),
};
for (const group of GROUPS) {
  scenarios[`consume_${group}`] = {
    executor: "constant-vus",
    exec: "consumeAsGroup",
    vus: CONSUMERS,
    duration: `${seconds + 2}s`,
    env: { GROUP: group },
    tags: { group },
  };
}

export const options = {
  scenarios,
  thresholds: {
    ...baseThresholds(),
    ...latencyThresholds({ enqueue: 100, dequeue_wait: 1500, ack_batch: 250 }),
    ...Object.fromEntries(GROUPS.map((g) => [`delivery_latency{group:${g}}`, ["p(99)<2000"]])),
  },
  ...COMMON_OPTIONS,
};

const lifecycle = oneTenant(TOPIC);

export function setup() {
  const data = lifecycle.setup();
  const who = tenantCaller(data.tenant);
  for (const group of GROUPS) {
    const r = http.post(`${BASE_URL}/api/topics/${TOPIC}/consumer-groups`, JSON.stringify({ consumer_group: group }), {
      headers: who.headers,
      tags: { phase: "setup" },
    });
    if (!check(r, { "setup: create a consumer group": (x) => x.status === 201 }, { phase: "setup" })) {
      throw new Error(`create consumer group ${group}: ${r.status} ${r.body}`);
    }
  }
  return data;
}

export function produce(data) {
  produceOne(data.tenant, TOPIC, 256);
}

export function consumeAsGroup(data) {
  const who = tenantCaller(data.tenant);
  const group = __ENV.GROUP;
  const messages = dequeue(who, TOPIC, BATCH, 1, 30, group);
  ackBatch(who, messages, group);
}

export function finish(data) {
  drain(tenantCaller(data.tenant), TOPIC, 60, 100, GROUPS);
}

export const { teardown } = lifecycle;

export const handleSummary = summaryHandler("fanout");
