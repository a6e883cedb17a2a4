// A schedule's cron as the form shows it while it is typed: its next runs in its time zone, and a sentence saying
// what it means. The server (cronsim, Debian cron's rules) decides when a schedule fires; this is its preview.
//
// Next runs: croner (no dependencies, 10 kB gzipped, 5 or 6 fields with seconds first, IANA zones through Intl).
// Not cron-parser: it needs Luxon (over 20 kB gzipped more), and it puts a daily 02:30 on the night the clocks jump
// from 02:00 to 03:00 at 03:30, where the server fires at 03:00. With `fixedTimeRule: "no-wildcard"` croner follows
// the server's rule for a 5-field cron: one whose minute and hour have no wildcard (`30 2`, `15 2,3`) fires at the
// jump when its time does not exist and once when it happens twice; `*/30 * * * *` keeps its pace through both.
// Descriptions: cronstrue (no dependencies, 7 kB gzipped for English alone), which reads 6 fields as seconds first.
import { Cron } from "croner";
import cronstrue from "cronstrue";
import type { Parsed } from "./parse";

/** The server's first check, in its words: 5 fields, or 6 with seconds first. The fields, one space apart. */
export function cronFields(expression: string): Parsed<string> {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (fields.length === 5 || fields.length === 6) return { ok: true, value: fields.join(" ") };
  return {
    ok: false,
    error: `5 fields (minute hour day month weekday), or 6 with seconds first; got ${fields.length}`,
  };
}

/** Whether this browser knows `zone` as a time zone (the server asks its own IANA database, and decides). */
export function isTimeZone(zone: string): boolean {
  if (!zone.trim()) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The IANA zones this browser knows, UTC first (Chromium leaves UTC out of its list). */
export function timeZones(): string[] {
  const listed = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  return ["UTC", ...listed.filter((z) => z !== "UTC")];
}

/** The next `count` runs of `expression` in `zone` after `after`, or why there are none. An expression whose
 * time never comes (`0 0 30 2 *`) is an error too. */
export function nextRuns(expression: string, zone: string, after: Date, count = 5): Parsed<Date[]> {
  const fields = cronFields(expression);
  if (!fields.ok) return fields;
  if (!isTimeZone(zone)) return { ok: false, error: `${JSON.stringify(zone)} is not a time zone` };
  let runs: Date[];
  try {
    const cron = new Cron(fields.value, {
      timezone: zone,
      mode: "5-or-6-parts",
      fixedTimeRule: "no-wildcard",
      paused: true,
    });
    runs = cron.nextRuns(count, after);
  } catch (e) {
    return { ok: false, error: withoutPrefix(e instanceof Error ? e.message : String(e)) };
  }
  if (runs.length === 0) return { ok: false, error: "no time ever matches it" };
  return { ok: true, value: runs };
}

/** "At 02:30", "Every 10 seconds"; null when cronstrue cannot read it. */
export function describeCron(expression: string): string | null {
  const fields = cronFields(expression);
  if (!fields.ok) return null;
  try {
    return cronstrue.toString(fields.value, {
      use24HourTimeFormat: true,
      throwExceptionOnParseError: true,
    });
  } catch {
    return null;
  }
}

/** A time as the wall clock of `zone` shows it: "2026-11-26 02:30:00 Europe/Berlin" (the console's own times are
 * UTC; this says what a schedule's zone makes of them). */
export function formatInZone(value: string | Date, zone: string): string {
  const date = typeof value === "string" ? new Date(value) : value;
  if (Number.isNaN(date.getTime()) || !isTimeZone(zone)) return "–";
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${zone}`;
}

/** croner says "CronPattern: Invalid value for minute: 61"; the field already says it is about the cron. */
function withoutPrefix(message: string): string {
  return message.replace(/^CronPattern:\s*/, "");
}
