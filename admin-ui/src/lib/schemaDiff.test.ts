import { describe, expect, it } from "vitest";
import { countChanges, sideBySide } from "./schemaDiff";

describe("sideBySide", () => {
  it("puts the lines both versions have on both sides, and a replaced line beside its replacement", () => {
    const older = "{\n  a: 1,\n  b: 2\n}";
    const newer = "{\n  a: 1,\n  b: 3,\n  c: 4\n}";
    const rows = sideBySide(older, newer);
    expect(rows).toEqual([
      { left: { line: 1, text: "{", change: "same" }, right: { line: 1, text: "{", change: "same" } },
      {
        left: { line: 2, text: "  a: 1,", change: "same" },
        right: { line: 2, text: "  a: 1,", change: "same" },
      },
      {
        left: { line: 3, text: "  b: 2", change: "removed" },
        right: { line: 3, text: "  b: 3,", change: "added" },
      },
      { left: null, right: { line: 4, text: "  c: 4", change: "added" } },
      { left: { line: 4, text: "}", change: "same" }, right: { line: 5, text: "}", change: "same" } },
    ]);
    expect(countChanges(rows)).toEqual({ removed: 1, added: 2 });
  });

  it("shows lines only the older version has, and two equal versions without a change", () => {
    const rows = sideBySide("a\nb\nc", "a\nc");
    expect(rows[1]).toEqual({ left: { line: 2, text: "b", change: "removed" }, right: null });
    expect(rows[2]).toEqual({
      left: { line: 3, text: "c", change: "same" },
      right: { line: 2, text: "c", change: "same" },
    });
    expect(countChanges(sideBySide("x\ny", "x\ny"))).toEqual({ removed: 0, added: 0 });
  });
});
