import { describe, expect, it } from "vitest";
import { cronFields, describeCron, formatInZone, isTimeZone, nextRuns, timeZones } from "./cron";

const iso = (dates: Date[]) => dates.map((d) => d.toISOString().replace(".000", ""));
const runs = (cron: string, zone: string, after: string, count = 5) => {
  const r = nextRuns(cron, zone, new Date(after), count);
  if (!r.ok) throw new Error(r.error);
  return iso(r.value);
};

describe("cronFields", () => {
  it("takes 5 or 6 fields, whatever the spacing", () => {
    expect(cronFields(" 30  2 * * * ")).toEqual({ ok: true, value: "30 2 * * *" });
    expect(cronFields("*/10 * * * * *")).toEqual({ ok: true, value: "*/10 * * * * *" });
  });
  it("says what the server says of other counts", () => {
    expect(cronFields("@daily")).toEqual({
      ok: false,
      error: "5 fields (minute hour day month weekday), or 6 with seconds first; got 1",
    });
    expect(cronFields("* * * * * * *").ok).toBe(false);
    expect(cronFields("").ok).toBe(false);
  });
});

describe("nextRuns", () => {
  it("reads 6 fields with seconds first", () => {
    expect(runs("*/10 * * * * *", "UTC", "2026-11-25T10:00:03Z", 3)).toEqual([
      "2026-11-25T10:00:10Z",
      "2026-11-25T10:00:20Z",
      "2026-11-25T10:00:30Z",
    ]);
  });

  it("computes in the zone and answers in UTC", () => {
    expect(runs("30 2 * * *", "Europe/Berlin", "2026-11-25T12:00:00Z", 2)).toEqual([
      "2026-11-26T01:30:00Z",
      "2026-11-27T01:30:00Z",
    ]);
  });

  it("matches either day field, as cron does when both are given", () => {
    expect(runs("0 0 1 * 1", "UTC", "2026-03-29T00:10:00Z", 3)).toEqual([
      "2026-03-30T00:00:00Z", // a Monday
      "2026-04-01T00:00:00Z", // the 1st
      "2026-04-06T00:00:00Z",
    ]);
  });

  // The server's daylight-saving rule (docs/semantics.md; tests/unit/test_schedules_cron.py pins the same cases).
  it("fires a time the clocks skip at the jump, once", () => {
    // Berlin, 2026-03-29: 02:00 becomes 03:00 (01:00 UTC).
    expect(runs("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-29T01:00:00Z",
      "2026-03-30T00:30:00Z",
    ]);
    expect(runs("15 2,3 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 3)).toEqual([
      "2026-03-29T01:00:00Z",
      "2026-03-29T01:15:00Z",
      "2026-03-30T00:15:00Z",
    ]);
  });

  it("fires a named hour that happens twice once, and a wildcard hour in both", () => {
    // Berlin, 2026-10-25: 03:00 becomes 02:00 again (01:00 UTC).
    expect(runs("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual([
      "2026-10-25T00:30:00Z",
      "2026-10-26T01:30:00Z",
    ]);
    expect(runs("*/30 * * * *", "Europe/Berlin", "2026-10-25T00:10:00Z", 4)).toEqual([
      "2026-10-25T00:30:00Z",
      "2026-10-25T01:00:00Z",
      "2026-10-25T01:30:00Z",
      "2026-10-25T02:00:00Z",
    ]);
  });

  it("says why there are none", () => {
    const bad = nextRuns("61 * * * *", "UTC", new Date());
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/minute/);
    expect(nextRuns("0 0 30 2 *", "UTC", new Date())).toEqual({
      ok: false,
      error: "no time ever matches it",
    });
    expect(nextRuns("* * * * *", "Mars/Olympus", new Date())).toEqual({
      ok: false,
      error: '"Mars/Olympus" is not a time zone',
    });
    expect(nextRuns("* * *", "UTC", new Date()).ok).toBe(false);
  });
});

describe("describeCron", () => {
  it("says a cron in words, 24-hour, seconds first when there are 6 fields", () => {
    expect(describeCron("30 2 * * *")).toBe("At 02:30");
    expect(describeCron("*/10 * * * * *")).toBe("Every 10 seconds");
    expect(describeCron("0 0 * * 5#2")).toBe("At 00:00, on the second Friday of the month");
  });
  it("is null for what it cannot read", () => {
    expect(describeCron("@daily")).toBeNull();
    expect(describeCron("x y z a b")).toBeNull();
  });
});

describe("time zones", () => {
  it("knows IANA zones and lists UTC first", () => {
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
    expect(isTimeZone("")).toBe(false);
    const zones = timeZones();
    expect(zones[0]).toBe("UTC");
    expect(zones).toContain("America/New_York");
    expect(zones.filter((z) => z === "UTC")).toHaveLength(1);
  });
  it("shows a time on the zone's wall clock", () => {
    expect(formatInZone("2026-11-26T01:30:00Z", "Europe/Berlin")).toBe("2026-11-26 02:30:00 Europe/Berlin");
    expect(formatInZone("2026-07-01T00:00:00Z", "America/New_York")).toBe(
      "2026-06-30 20:00:00 America/New_York",
    );
    expect(formatInZone("nonsense", "UTC")).toBe("–");
  });
});
