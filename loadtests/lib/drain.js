// The end of a run: consume what is left, then check that every message enqueued was delivered and acked
// (`nothing_lost`, a Rate with a threshold of 100%).
import { sleep } from "k6";
import { Rate } from "k6/metrics";
import { ackBatch, dequeue, owed, waiting } from "./api.js";

export const nothingLost = new Rate("nothing_lost");

/** Dequeues and acks `topic` (`count` at a time; as each of `groups` in turn, if given) until it has no message
 * waiting, or `seconds` pass; then records
 * whether any is left. It starts after the other scenarios' last iterations (their graceful stop); messages a
 * stopped consumer had leased come back when their lease (30 s) runs out, so `seconds` should exceed that. */
export function drain(who, topic, seconds = 60, count = 100, groups = []) {
  const deadline = Date.now() + seconds * 1000;
  sleep(2);
  for (const group of groups.length > 0 ? groups : [undefined]) {
    for (;;) {
      const messages = dequeue(who, topic, count, 1, 30, group);
      if (messages.length > 0) {
        ackBatch(who, messages, group);
        continue;
      }
      const left = group === undefined ? waiting(who, topic) : owed(who, topic, group);
      if (left === 0 || Date.now() > deadline) break;
      sleep(1);
    }
  }
  // A topic's message goes once every group acked it: none waiting means every group received and acked each one.
  nothingLost.add(waiting(who, topic) === 0, who.tags);
}
