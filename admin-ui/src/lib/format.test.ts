import { describe, expect, it } from "vitest";
import {
  countOf,
  formatAge,
  formatCount,
  formatInFlight,
  formatPreciseTime,
  formatRate,
  formatTime,
  showPayload,
  toBase64,
} from "./format";

describe("showPayload", () => {
  it("pretty-prints JSON", () => {
    expect(showPayload(toBase64('{"a":1,"b":[2]}'))).toEqual({
      kind: "json",
      text: '{\n  "a": 1,\n  "b": [\n    2\n  ]\n}',
    });
  });
  it("shows UTF-8 text as text", () => {
    expect(showPayload(toBase64("héllo wörld"))).toEqual({ kind: "text", text: "héllo wörld" });
  });
  it("shows other bytes as hex, 16 to a line", () => {
    const bytes = btoa(String.fromCharCode(...Array.from({ length: 18 }, (_, i) => 0xf0 + (i % 16))));
    const view = showPayload(bytes);
    expect(view.kind).toBe("hex");
    expect(view.text.split("\n")).toHaveLength(2);
    expect(view.text.startsWith("f0 f1 f2")).toBe(true);
  });
});

describe("numbers", () => {
  it("shows counts exactly, rates and ages in two units", () => {
    expect(formatTime("2026-11-25T04:10:03.123Z")).toBe("2026-11-25 04:10:03 UTC");
    expect(formatTime(null)).toBe("–");
    expect(formatCount(999)).toBe("999");
    expect(formatCount(12_345)).toBe("12,345"); // exact: a draining backlog moves by ones
    expect(formatCount(1_500_000)).toBe("1,500,000");
    expect(countOf(1, "message")).toBe("1 message");
    expect(countOf(12_000, "message")).toBe("12,000 messages");
    expect(countOf(0, "entry", "entries")).toBe("0 entries");
    expect(formatRate(0)).toBe("0/s");
    expect(formatRate(0.5)).toBe("30.0/min");
    expect(formatRate(250)).toBe("250/s");
    expect(formatAge(0)).toBe("–");
    expect(formatAge(90)).toBe("2m");
    expect(formatAge(7200)).toBe("2h");
    expect(formatAge(7500)).toBe("2h 5m");
    expect(formatAge(7 * 86400)).toBe("7d");
    expect(formatAge(7 * 86400 + 3 * 3600)).toBe("7d 3h");
    expect(formatAge(2 * 86400 - 60)).toBe("2d"); // 1d 23h 59m rounds up, never "1d 24h"
  });
});

describe("formatInFlight", () => {
  it("shows leases in flight against the limit, exactly", () => {
    expect(formatInFlight(3, 5)).toBe("3 / 5");
    expect(formatInFlight(12_345, 1_000_000)).toBe("12,345 / 1,000,000");
    expect(formatInFlight(7, 5)).toBe("7 / 5"); // a lowered limit: the leases taken stay
  });
});

describe("formatPreciseTime", () => {
  it("keeps every digit of the server's time", () => {
    expect(formatPreciseTime("2026-12-07T09:35:12.123456Z")).toBe("2026-12-07 09:35:12.123456 UTC");
    expect(formatPreciseTime("2026-12-07T09:35:12+00:00")).toBe("2026-12-07 09:35:12 UTC");
    expect(formatPreciseTime("not a time")).toBe("not a time");
  });
});
