// Two versions of a topic's schema side by side, line by line. The line diff is jsdiff's (`diff`: the common
// JavaScript text diff, no dependencies, 8 kB minified for diffLines), loaded with the Schema tab only.
import { diffLines } from "diff";

export type DiffCell = { line: number; text: string; change: "same" | "removed" | "added" };
/** One row of a side-by-side view: the older version's line on the left, the newer's on the right; a line only
 * one side has leaves the other empty. */
export type DiffRow = { left: DiffCell | null; right: DiffCell | null };

/** Two texts line by line (jsdiff's diffLines), side by side: a run of removed lines faces the added lines that
 * replace it. */
export function sideBySide(older: string, newer: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let left = 0;
  let right = 0;
  let removed: string[] = [];
  const flush = (added: string[]) => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) {
      const l = removed[i];
      const r = added[i];
      rows.push({
        left: l === undefined ? null : { line: ++left, text: l, change: "removed" },
        right: r === undefined ? null : { line: ++right, text: r, change: "added" },
      });
    }
    removed = [];
  };
  for (const part of diffLines(older, newer)) {
    const lines = part.value.replace(/\n$/, "").split("\n");
    if (part.removed) {
      removed.push(...lines);
    } else if (part.added) {
      flush(lines);
    } else {
      flush([]);
      for (const text of lines) {
        rows.push({
          left: { line: ++left, text, change: "same" },
          right: { line: ++right, text, change: "same" },
        });
      }
    }
  }
  flush([]);
  return rows;
}

/** How many lines two versions differ by, for the view's summary. */
export function countChanges(rows: DiffRow[]): { removed: number; added: number } {
  return {
    removed: rows.filter((r) => r.left?.change === "removed").length,
    added: rows.filter((r) => r.right?.change === "added").length,
  };
}
