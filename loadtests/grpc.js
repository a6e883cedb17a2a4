// gRPC: queue-ti's service (queue.QueueService, api/queue_ti/queue.proto) in the smoke's shape. setup() makes the
// test's tenant and logs its tenant_admin in over HTTP (POST /api/auth/login) for a bearer token; producers Enqueue
// single messages with metadata at a constant arrival rate; CONSUMERS VUs BatchDequeue up to COUNT and Ack each; one
// more VU Dequeues and Acks singly (NOT_FOUND on an empty topic). BatchDequeue and Dequeue never wait, so a consumer
// that found nothing pauses IDLE_MS. Thresholds: the calls' status codes (grpc_req_failed, checks), their p99s, the
// enqueue-to-delivery p99, and nothing lost (the REST drain takes what the consumers left). CI runs it for seconds
// against a real server; `make loadtest-grpc` against `make run`.
//   RATE=50 (enqueues/s)  DURATION=20s  CONSUMERS=2  COUNT=10  PAYLOAD_BYTES=256  IDLE_MS=20
//   P99_ENQUEUE_MS=100  P99_DEQUEUE_MS=100  P99_ACK_MS=100  P99_DELIVERY_MS=2000
import { sleep } from "k6";
import exec from "k6/execution";
import { number, text } from "./lib/config.js";
import { ack, batchDequeue, dequeue, grpcLatencyThresholds, login, enqueue as rpcEnqueue } from "./lib/grpc.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { makePayload } from "./lib/payload.js";
import { baseThresholds } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";

const RATE = number("RATE", 50);
const DURATION = text("DURATION", "20s");
const CONSUMERS = number("CONSUMERS", 2);
const COUNT = number("COUNT", 10);
const PAYLOAD_BYTES = number("PAYLOAD_BYTES", 256);
const IDLE = number("IDLE_MS", 20) / 1000;
const P99_DEQUEUE_MS = number("P99_DEQUEUE_MS", 100);
const TOPIC = "grpc";

export const options = {
  scenarios: {
    produce: arrivalScenario("produce", RATE, DURATION),
    consume: { executor: "constant-vus", exec: "consumeBatch", vus: CONSUMERS, duration: DURATION },
    consume_single: { executor: "constant-vus", exec: "consumeOne", vus: 1, duration: DURATION },
    drain: drainScenario(DURATION, "60s"),
  },
  thresholds: {
    ...baseThresholds(),
    grpc_req_failed: ["rate<0.001"],
    ...grpcLatencyThresholds({
      enqueue: number("P99_ENQUEUE_MS", 100),
      batch_dequeue: P99_DEQUEUE_MS,
      dequeue: P99_DEQUEUE_MS,
      ack: number("P99_ACK_MS", 100),
    }),
    delivery_latency: [`p(99)<${number("P99_DELIVERY_MS", 2000)}`],
    // The consumers' work went over gRPC, not only the REST drain's.
    "messages_delivered{via:grpc}": ["count>0"],
    "messages_acked{via:grpc}": ["count>0"],
  },
  ...COMMON_OPTIONS,
};

export function produce(data) {
  const sequence = exec.scenario.iterationInTest;
  rpcEnqueue(data, TOPIC, makePayload(sequence, PAYLOAD_BYTES), sequence);
}

export function consumeBatch(data) {
  const messages = batchDequeue(data, TOPIC, COUNT);
  for (const m of messages) ack(data, m);
  if (messages.length === 0) sleep(IDLE);
}

export function consumeOne(data) {
  const message = dequeue(data, TOPIC);
  if (message === null) sleep(IDLE);
  else ack(data, message);
}

const lifecycle = oneTenant(TOPIC);

export function setup() {
  const data = lifecycle.setup();
  return { ...data, token: login(data.tenant) };
}

export const { finish, teardown } = lifecycle;

export const handleSummary = summaryHandler("grpc");
