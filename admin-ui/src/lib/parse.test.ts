import { describe, expect, it } from "vitest";
import { readFields, wholeNumber, wholeNumberIn, wholeNumberList } from "./parse";

describe("number fields", () => {
  it("refuses text instead of sending NaN (null: the setting removed)", () => {
    expect(wholeNumber("fifty").ok).toBe(false);
    expect(wholeNumber("lots").ok).toBe(false);
    expect(wholeNumber("1.5").ok).toBe(false);
    expect(wholeNumber("-3").ok).toBe(false);
    expect(wholeNumber(" 50 ")).toEqual({ ok: true, value: 50 });
  });

  it("keeps a bounded number within its bounds, both included", () => {
    const inflight = wholeNumberIn(1, 1_000_000);
    expect(inflight("1")).toEqual({ ok: true, value: 1 });
    expect(inflight("1000000")).toEqual({ ok: true, value: 1_000_000 });
    expect(inflight("0")).toEqual({ ok: false, error: "0 is out of range: 1 to 1,000,000" });
    expect(inflight("1000001")).toEqual({ ok: false, error: "1,000,001 is out of range: 1 to 1,000,000" });
    expect(inflight("five").ok).toBe(false);
  });

  it("refuses a stray comma in a list instead of reading it as 0", () => {
    expect(wholeNumberList("1, 5, 30,").ok).toBe(false);
    expect(wholeNumberList("1,,5").ok).toBe(false);
    expect(wholeNumberList("1, 5, 30")).toEqual({ ok: true, value: [1, 5, 30] });
  });

  it("reads a form: empty fields are left out, bad ones are errors", () => {
    const form = new FormData();
    form.set("a", "12");
    form.set("b", "");
    form.set("c", "x");
    const { values, errors } = readFields(form, { a: wholeNumber, b: wholeNumber, c: wholeNumber });
    expect(values).toEqual({ a: 12 });
    expect(Object.keys(errors)).toEqual(["c"]);
  });
});
