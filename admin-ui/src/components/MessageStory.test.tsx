import { describe, expect, it } from "vitest";
import type { StoryEvent } from "../api/messages";
import { what } from "./MessageStory";

const event = (e: Partial<StoryEvent>): StoryEvent => ({
  at: null,
  kind: "enqueued",
  consumer_group: null,
  topic: null,
  attempt: null,
  outcome: null,
  ended_at: null,
  by: null,
  error: null,
  message_id: null,
  note: null,
  ...e,
});

describe("what", () => {
  it("tells each event in words", () => {
    expect(what(event({ kind: "attempt", attempt: 2, outcome: "dead_lettered" }))).toBe(
      "Attempt 2: dead lettered",
    );
    expect(what(event({ kind: "dead_lettered", topic: "orders.dlq" }))).toBe("Dead-lettered to orders.dlq");
    expect(what(event({ kind: "enqueued", topic: "orders" }))).toBe("Enqueued to orders");
    expect(what(event({ kind: "requeued", topic: "orders" }))).toBe("Requeued to orders");
    expect(what(event({ kind: "acked" }))).toBe("Acked");
    expect(what(event({ kind: "replayed" }))).toBe("Replayed");
  });
});
