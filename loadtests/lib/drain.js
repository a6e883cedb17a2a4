// The end of a run: consume what is left, then check that every message enqueued was delivered and acked
// (`nothing_lost`, a Rate with a threshold of 100%).
import { sleep } from "k6";
import { Rate } from "k6/metrics";
import { ackBatch, dequeue, waiting } from "./api.js";

export const nothingLost = new Rate("nothing_lost");

/** Dequeues and acks `topic` (`count` at a time) until it has no message waiting, or `seconds` pass; then records
 * whether any is left. It starts after the other scenarios' last iterations (their graceful stop); messages a
 * stopped consumer had leased come back when their lease (30 s) runs out, so `seconds` should exceed that. */
export function drain(who, topic, seconds = 60, count = 100) {
  const deadline = Date.now() + seconds * 1000;
  sleep(2);
  for (;;) {
    const messages = dequeue(who, topic, count, 1);
    if (messages.length > 0) {
      ackBatch(who, messages);
      continue;
    }
    if (waiting(who, topic) === 0 || Date.now() > deadline) break;
    sleep(1);
  }
  nothingLost.add(waiting(who, topic) === 0, who.tags);
}
