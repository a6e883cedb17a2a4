// The end of a run: consume what is left, then check that every message enqueued was delivered and acked
// (`nothing_lost`, a Rate with a threshold of 100%).
import { Rate } from "k6/metrics";
import { ackBatch, dequeue, waiting } from "./api.js";

export const nothingLost = new Rate("nothing_lost");

/** Dequeues and acks `topic` until a long poll finds it empty, then records whether any message is left. */
export function drain(who, topic, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const messages = dequeue(who, topic, 100, 1);
    if (messages.length === 0) break;
    ackBatch(who, messages);
  }
  nothingLost.add(waiting(who) === 0, who.tags);
}
