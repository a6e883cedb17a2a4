// Payloads that carry their own send time and shape, so a consumer can measure enqueue-to-delivery latency and
// check the round trip without knowing what was sent.
import encoding from "k6/encoding";

const PAD = "x".repeat(4096);

/** A base64 payload of about `bytes` bytes: {s: send time in ms, n: sequence, p: padding}. */
export function makePayload(sequence, bytes = 256) {
  const pad = PAD.slice(0, Math.max(0, bytes - 48));
  return encoding.b64encode(JSON.stringify({ s: Date.now(), n: sequence, p: pad }));
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
