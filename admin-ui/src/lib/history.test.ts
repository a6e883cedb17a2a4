// @vitest-environment jsdom
// (it imports the API client, which reads window.location when loaded)
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import {
  afterReplay,
  countEntries,
  describeCount,
  describeRange,
  describeTarget,
  parseTime,
  readRange,
  readReplay,
  replayBody,
  replayTargets,
  timeInput,
} from "./history";

describe("parseTime", () => {
  it("reads a time as the tables show it, in UTC, and RFC 3339 with its zone", () => {
    expect(parseTime("2026-11-25 04:10:03 UTC")).toEqual({ ok: true, value: "2026-11-25T04:10:03Z" });
    expect(parseTime(" 2026-11-25 04:10 ")).toEqual({ ok: true, value: "2026-11-25T04:10:00Z" });
    expect(parseTime("2026-11-25")).toEqual({ ok: true, value: "2026-11-25T00:00:00Z" });
    expect(parseTime("2026-11-25T04:10:03.123456Z")).toEqual({
      ok: true,
      value: "2026-11-25T04:10:03.123456Z",
    });
    expect(parseTime("2026-11-25T04:10:03+0200")).toEqual({ ok: true, value: "2026-11-25T04:10:03+02:00" });
  });

  it("shows a time for editing in the tables' form, and reads it back exactly", () => {
    expect(timeInput("2026-11-25T04:10:03.123456Z")).toBe("2026-11-25 04:10:03.123456 UTC");
    for (const value of ["2026-11-25T04:10:03.123456Z", "2026-11-25T04:10:03+02:00"])
      expect(parseTime(timeInput(value))).toEqual({ ok: true, value });
  });

  it("reads a form's range: empty fields left out, a bad time an error at its field", () => {
    const form = new FormData();
    form.set("from_time", "2026-11-25 04:10");
    form.set("to_time", "soon");
    form.set("key", "");
    expect(readRange(form)).toEqual({
      range: { from_time: "2026-11-25T04:10:00Z" },
      errors: { to_time: expect.stringMatching(/^"soon" is not a time/) },
    });
  });

  it("refuses what is not a time instead of sending it", () => {
    expect(parseTime("yesterday").ok).toBe(false);
    expect(parseTime("2026-02-30").ok).toBe(false);
    expect(parseTime("2026-13-01").ok).toBe(false);
    expect(parseTime("2026-11-25 24:00").ok).toBe(false);
  });
});

describe("countEntries", () => {
  const pages = (sizes: number[]) => async (cursor: string | null) => {
    const n = cursor === null ? 0 : Number(cursor);
    return {
      items: Array.from({ length: sizes[n] ?? 0 }),
      next_cursor: n + 1 < sizes.length ? String(n + 1) : null,
    };
  };

  it("pages to the end of the range", async () => {
    expect(await countEntries(pages([1000, 1000, 12]), 10_000)).toEqual({ count: 2012, more: false });
    expect(await countEntries(pages([0]), 10_000)).toEqual({ count: 0, more: false });
  });

  it("stops at the cap and says there are more", async () => {
    const read: (string | null)[] = [];
    const many = pages(Array.from({ length: 50 }, () => 1000));
    const counted = await countEntries(async (cursor) => {
      read.push(cursor);
      return many(cursor);
    }, 10_000);
    expect(counted).toEqual({ count: 10_000, more: true });
    expect(read).toHaveLength(10);
    expect(describeCount(counted)).toBe("more than 10,000 entries");
    expect(describeCount({ count: 1, more: false })).toBe("1 entry");
  });
});

describe("a replay's course", () => {
  const range = { from_time: "2026-11-25T00:00:00Z", to_time: "2026-11-26T00:00:00Z", key: "k" };
  const replay = { range, group: null };

  it("adds what each call replayed, and goes on from resume_from after a refusal midway", () => {
    const full = new ApiError(429, "queue_full", "the topic is full", "r1", {
      replayed: 300,
      resume_from: "2026-11-25T10:00:00.123456Z",
    });
    const refused = afterReplay(0, replay, { error: full });
    expect(refused).toMatchObject({
      phase: "refused",
      replayed: 300,
      next: { range: { from_time: "2026-11-25T10:00:00.123456Z", to_time: range.to_time, key: "k" } },
    });
    expect(afterReplay(refused.replayed, replay, { replayed: 200 })).toEqual({
      phase: "done",
      replayed: 500,
    });
  });

  it("retries the same range after a refusal that replayed nothing, and fails on anything else", () => {
    const limited = new ApiError(429, "rate_limited", "slow down", "r2", null, 3);
    expect(afterReplay(5, replay, { error: limited })).toMatchObject({
      phase: "refused",
      replayed: 5,
      next: replay,
    });
    const notReplayable = new ApiError(409, "not_replayable", "not replayable", "r3");
    expect(afterReplay(0, replay, { error: notReplayable })).toMatchObject({ phase: "failed", replayed: 0 });
    const noGroup = new ApiError(404, "not_found", "no consumer group billing", "r4");
    expect(afterReplay(0, { range, group: "billing" }, { error: noGroup })).toMatchObject({
      phase: "failed",
    });
  });

  it("names a range in words", () => {
    expect(describeRange(range)).toBe(
      "acked from 2026-11-25 00:00:00 UTC to 2026-11-26 00:00:00 UTC, with key “k”",
    );
    expect(describeRange({})).toBe("acked at any time");
    expect(describeRange({ to_time: "2026-11-26T00:00:00Z" })).toBe("acked before 2026-11-26 00:00:00 UTC");
  });
});

describe("a replay to one consumer group", () => {
  const form = (fields: Record<string, string>) => {
    const data = new FormData();
    for (const [name, value] of Object.entries(fields)) data.set(name, value);
    return data;
  };

  it("reads the target from the form: every group unless one is chosen", () => {
    const from_time = "2026-11-25 04:10";
    expect(readReplay(form({ from_time, key: "" }))).toEqual({
      replay: { range: { from_time: "2026-11-25T04:10:00Z" }, group: null },
      errors: {},
    });
    expect(readReplay(form({ target: "every", consumer_group: "billing" })).replay.group).toBeNull();
    expect(readReplay(form({ target: "group", consumer_group: "billing" })).replay).toEqual({
      range: {},
      group: "billing",
    });
    expect(readReplay(form({ to_time: "soon", target: "group", consumer_group: "billing" })).errors).toEqual({
      to_time: expect.stringMatching(/^"soon" is not a time/),
    });
  });

  it("carries consumer_group in every call, the ones after a refusal included", () => {
    const toBilling = { range: { to_time: "2026-11-26T00:00:00Z" }, group: "billing" };
    expect(replayBody(toBilling)).toEqual({ to_time: "2026-11-26T00:00:00Z", consumer_group: "billing" });
    expect(replayBody({ range: { key: "k" }, group: null })).toEqual({ key: "k" });

    const full = new ApiError(429, "queue_full", "the topic is full", "r1", {
      replayed: 2,
      resume_from: "2026-11-25T10:00:00.123456Z",
    });
    const refused = afterReplay(0, toBilling, { error: full });
    if (refused.phase !== "refused") throw new Error(`expected a refusal, got ${refused.phase}`);
    expect(replayBody(refused.next)).toEqual({
      from_time: "2026-11-25T10:00:00.123456Z",
      to_time: "2026-11-26T00:00:00Z",
      consumer_group: "billing",
    });
    // A refusal that names no resume_from (a rate limit before the first entry): the same call again, same group.
    const limited = new ApiError(429, "rate_limited", "slow down", "r2", null, 3);
    const again = afterReplay(2, toBilling, { error: limited });
    if (again.phase !== "refused") throw new Error(`expected a refusal, got ${again.phase}`);
    expect(replayBody(again.next)).toEqual(replayBody(toBilling));
  });

  it("names the target", () => {
    expect(describeTarget(null)).toBe("to every consumer group");
    expect(describeTarget("billing")).toBe("to consumer group billing only");
  });

  it("waits for the groups, and says when they could not be loaded instead of leaving the choice out", () => {
    const query = { data: undefined, error: null, failureReason: null, errorUpdateCount: 0 };
    expect(replayTargets(query)).toEqual({ state: "loading" });
    const down = new ApiError(503, "unavailable", "Postgres is not answering", "r3");
    // The first load's retries: still loading, however its attempts went.
    expect(replayTargets({ ...query, failureReason: down })).toEqual({ state: "loading" });
    const failed = { ...query, error: down, failureReason: down, errorUpdateCount: 1 };
    expect(replayTargets(failed)).toEqual({ state: "failed", error: down });
    // Asked again (the query drops its error while it fetches without data): still failed, not loading again.
    expect(replayTargets({ ...failed, error: null, failureReason: null })).toEqual({
      state: "failed",
      error: null,
    });
    expect(replayTargets({ ...failed, error: null })).toEqual({ state: "failed", error: down });

    const groups = { groups: [{ consumer_group: "billing" }, { consumer_group: "shipping" }] };
    const known = { state: "known", groups: ["billing", "shipping"] };
    expect(replayTargets({ ...query, data: groups })).toEqual(known);
    expect(replayTargets({ ...query, data: { groups: [] } })).toEqual({ state: "known", groups: [] });
    // A refresh that failed after the list loaded: the list is still the topic's (the Consumer groups section
    // says the refresh failed).
    expect(replayTargets({ ...failed, data: groups })).toEqual(known);
  });
});
