// @vitest-environment jsdom
// (it imports the API client, which reads window.location when loaded)
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { toBase64 } from "./format";
import {
  bodyOf,
  draftOf,
  filterSchedules,
  NAME_PATTERN,
  NEW_SCHEDULE,
  type Schedule,
  scheduleFormErrors,
  toggledBody,
} from "./schedules";

const stored: Schedule = {
  name: "nightly-report",
  topic: "reports",
  cron: "30 2 * * *",
  timezone: "Europe/Berlin",
  payload: toBase64('{"kind":"report"}'),
  key: null,
  metadata: { team: "finance" },
  priority: 5,
  enabled: true,
  next_run_at: "2026-11-26T01:30:00.000Z",
  last_run_at: null,
  last_error: null,
};

describe("the form's draft and the body it sends", () => {
  it("starts from a stored schedule, its JSON payload indented", () => {
    const draft = draftOf(stored);
    expect(draft.payload.kind).toBe("json");
    expect(draft.payload.text).toBe('{\n  "kind": "report"\n}');
    expect(draft.metadata).toBe('{\n  "team": "finance"\n}');
    expect(draft.priority).toBe("5");
  });

  it("sends an untouched payload as it was stored, not as it is shown", () => {
    const sent = bodyOf(draftOf(stored));
    expect(sent).toEqual({
      ok: true,
      body: {
        topic: "reports",
        cron: "30 2 * * *",
        timezone: "Europe/Berlin",
        payload: stored.payload,
        key: null,
        metadata: { team: "finance" },
        priority: 5,
        enabled: true,
      },
    });
  });

  it("keeps a binary payload it cannot show unless another is typed", () => {
    const binary = { ...stored, payload: btoa("\u0000\u0001\u00ff") };
    const draft = draftOf(binary);
    expect(draft.payload).toMatchObject({ kind: "text", text: "", original: { binary: true } });
    const kept = bodyOf(draft);
    expect(kept.ok && kept.body.payload).toBe(binary.payload);
    const replaced = bodyOf({ ...draft, payload: { ...draft.payload, text: "hello" } });
    expect(replaced.ok && replaced.body.payload).toBe(toBase64("hello"));
  });

  it("sends a new schedule's fields, empty key and metadata as none", () => {
    const sent = bodyOf({
      ...NEW_SCHEDULE,
      name: "tick",
      topic: " reports ",
      cron: " */10 * * * * * ",
      timezone: "",
      payload: { kind: "text", text: "ping", original: null },
    });
    expect(sent).toEqual({
      ok: true,
      body: {
        topic: "reports",
        cron: "*/10 * * * * *",
        timezone: "UTC",
        payload: toBase64("ping"),
        key: null,
        metadata: null,
        priority: 0,
        enabled: true,
      },
    });
  });

  it("refuses what cannot be sent, at its field", () => {
    const sent = bodyOf({
      ...NEW_SCHEDULE,
      payload: { kind: "json", text: "{oops", original: null },
      metadata: "[1, 2]",
      priority: "high",
    });
    expect(sent.ok).toBe(false);
    if (sent.ok) return;
    expect(sent.errors.payload).toMatch(/^Not JSON: /);
    expect(sent.errors.metadata).toMatch(/JSON object/);
    expect(sent.errors.priority).toBe('"high" is not a priority: a whole number from 0 to 9');
    expect(bodyOf({ ...NEW_SCHEDULE, priority: "10" }).ok).toBe(false);
    expect(bodyOf({ ...NEW_SCHEDULE, metadata: "{nope" }).ok).toBe(false);
  });
});

it("turns a schedule on or off and changes nothing else", () => {
  expect(toggledBody(stored, false)).toEqual({
    topic: "reports",
    cron: "30 2 * * *",
    timezone: "Europe/Berlin",
    payload: stored.payload,
    key: null,
    metadata: { team: "finance" },
    priority: 5,
    enabled: false,
  });
});

it("filters by name or topic", () => {
  const other = { ...stored, name: "hourly", topic: "pings" };
  expect(filterSchedules([stored, other], "PING")).toEqual([other]);
  expect(filterSchedules([stored, other], "report")).toEqual([stored]);
  expect(filterSchedules([stored, other], " ")).toHaveLength(2);
});

it("accepts the names the server does", () => {
  const name = new RegExp(`^(?:${NAME_PATTERN})$`, "v");
  expect(name.test("nightly-report.v2_x")).toBe(true);
  expect(name.test("-nightly")).toBe(false);
  expect(name.test("a/b")).toBe(false);
});

describe("the server's refusals at their field", () => {
  const refusal = (message: string, code = "invalid_request", status = 400) =>
    new ApiError(status, code, message, "r1");

  it("places the cron and the zone, which the API names", () => {
    expect(scheduleFormErrors(refusal("cron: Bad minute in '61 * * * *'"))).toEqual({
      cron: "cron: Bad minute in '61 * * * *'",
    });
    expect(scheduleFormErrors(refusal("timezone: 'Mars/Olympus' is not an IANA time zone"))).toEqual({
      timezone: "timezone: 'Mars/Olympus' is not an IANA time zone",
    });
  });

  it("places sentences that start with their field, and refusals by their code", () => {
    expect(scheduleFormErrors(refusal("a schedule's name must match ^[A-Za-z0-9]…$"))).toEqual({
      name: "a schedule's name must match ^[A-Za-z0-9]…$",
    });
    expect(scheduleFormErrors(refusal("topic must match ^[A-Za-z0-9]…$"))).toHaveProperty("topic");
    expect(scheduleFormErrors(refusal("key must be 1 to 512 characters"))).toHaveProperty("key");
    expect(
      scheduleFormErrors(refusal("'orders.dlq' is a dead-letter topic", "reserved_topic")),
    ).toHaveProperty("topic");
    expect(scheduleFormErrors(refusal("payload is 2 bytes", "payload_too_large", 413))).toHaveProperty(
      "payload",
    );
  });

  it("leaves the rest to the form's error", () => {
    expect(scheduleFormErrors(refusal("forbidden", "forbidden", 403))).toEqual({});
    expect(scheduleFormErrors(refusal("something else entirely"))).toEqual({});
    expect(scheduleFormErrors(new Error("boom"))).toEqual({});
  });
});
