import { describe, expect, it } from "vitest";
import { readFields, wholeNumber, wholeNumberList } from "./parse";

describe("number fields", () => {
  it("refuses text instead of sending NaN (null: the setting removed)", () => {
    expect(wholeNumber("fifty").ok).toBe(false);
    expect(wholeNumber("lots").ok).toBe(false);
    expect(wholeNumber("1.5").ok).toBe(false);
    expect(wholeNumber("-3").ok).toBe(false);
    expect(wholeNumber(" 50 ")).toEqual({ ok: true, value: 50 });
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
