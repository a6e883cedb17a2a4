// Payloads that carry their own send time and shape, so a consumer can measure enqueue-to-delivery latency and
// check the round trip without knowing what was sent.
import encoding from "k6/encoding";
import exec from "k6/execution";

const PAD = "x".repeat(4096);

/** Milliseconds since this k6 process began its test run, to the microsecond, the same clock for all its VUs.
 * k6 has no `performance.now()`, and `Date.now()` counts whole milliseconds: a p99 of 4 ms could be anything from
 * 3.0 to 4.99, too coarse to compare two latencies of a few milliseconds. A payload is therefore read by the k6
 * process that wrote it (every script produces and consumes its own tenant's messages). */
export function clock() {
  return exec.instance.currentTestRunDuration;
}

/** A base64 payload of about `bytes` bytes: {s: send time on `clock()`, n: sequence, p: padding}. */
export function makePayload(sequence, bytes = 256) {
  const pad = PAD.slice(0, Math.max(0, bytes - 48));
  return encoding.b64encode(JSON.stringify({ s: clock(), n: sequence, p: pad }));
}

/** The decoded payload, or null when it is not one of ours intact (a failed round trip). */
export function readPayload(b64) {
  try {
    const body = JSON.parse(encoding.b64decode(b64, "std", "s"));
    if (typeof body.s !== "number" || typeof body.n !== "number" || typeof body.p !== "string") return null;
    if (body.p !== "x".repeat(body.p.length)) return null;
    return body;
  } catch (_) {
    return null;
  }
}
