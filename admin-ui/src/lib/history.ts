// A replayable topic's message log in the console: the times its filters take, how many entries a range holds,
// how a range and a replay's target are named, and how a replay goes on after the server refused it midway.
import { ApiError, type Schemas } from "../api/client";
import { formatTime } from "./format";
import type { Parsed } from "./parse";

/** A range of the log: entries acked in [from_time, to_time), with `key` when given (RFC 3339 times). */
export type LogRange = { from_time?: string; to_time?: string; key?: string };

const TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?$/i;

/** A time typed in a filter as the RFC 3339 the API takes. The console shows times in UTC, so a time without a
 * zone is UTC: "2026-11-25 04:10:03" (as the tables show it, " UTC" included or not), "2026-11-25" (midnight),
 * or RFC 3339 with its zone. Fractions of a second are kept as typed: the log's `acked_at` has microseconds. */
export function parseTime(raw: string): Parsed<string> {
  const text = raw.trim();
  const m = TIME.exec(text);
  const bad: Parsed<string> = {
    ok: false,
    error: `"${text}" is not a time: write it as 2026-11-25 04:10:03 (UTC) or in RFC 3339`,
  };
  if (!m) return bad;
  const [, y, mo, d, h = "00", mi = "00", s = "00", fraction = "", zone = "Z"] = m;
  const days = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate(); // day 0 of the next month: the last
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > days) return bad;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return bad;
  const offset = /^(z|utc)$/i.test(zone)
    ? "Z"
    : zone.includes(":")
      ? zone
      : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  return { ok: true, value: `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction}${offset}` };
}

/** A range from a form's `from_time`, `to_time` and `key` fields: empty ones left out, a time that does not parse
 * an error at its field. */
export function readRange(form: FormData): { range: LogRange; errors: Record<string, string> } {
  const range: LogRange = {};
  const errors: Record<string, string> = {};
  for (const name of ["from_time", "to_time"] as const) {
    const raw = String(form.get(name) ?? "").trim();
    if (!raw) continue;
    const parsed = parseTime(raw);
    if (parsed.ok) range[name] = parsed.value;
    else errors[name] = parsed.error;
  }
  const key = String(form.get("key") ?? "");
  if (key) range.key = key;
  return { range, errors };
}

/** A replay as the console runs it: a range of the log, and the consumer group its new messages are owed to (null:
 * every group of the topic, as any enqueue; a topic without groups has only this). */
export type Replay = { range: LogRange; group: string | null };

/** Where the replay form can send a replay, as far as it knows the topic's consumer groups: still loading (it waits
 * before counting), not loaded (a replay would go to every group, the only target without the list: the form says
 * so; `error` is null while they are asked again), or the list (empty: the topic has none, no choice to make). */
export type ReplayTargets =
  | { state: "loading" }
  | { state: "failed"; error: unknown }
  | { state: "known"; groups: string[] };

/** The replay targets from the consumer groups' query. A list once loaded is kept when a later refresh fails; once
 * loading failed, asking again (live refresh, focus, "load again") stays "failed" instead of waiting again: the
 * query drops its error when it fetches without data, and the form would flip to waiting at every refresh. */
export function replayTargets(query: {
  data?: { groups: { consumer_group: string }[] } | undefined;
  error: unknown;
  /** The failure of the fetch in progress, before its retries are spent. */
  failureReason: unknown;
  errorUpdateCount: number;
}): ReplayTargets {
  if (query.data) return { state: "known", groups: query.data.groups.map((g) => g.consumer_group) };
  if (query.error) return { state: "failed", error: query.error };
  if (query.errorUpdateCount > 0) return { state: "failed", error: query.failureReason ?? null };
  return { state: "loading" };
}

/** A replay form's range and target: `target` "group" sends the replay to the group its `consumer_group` select
 * names; anything else (or no such field: the topic has no groups) to every group. */
export function readReplay(form: FormData): { replay: Replay; errors: Record<string, string> } {
  const { range, errors } = readRange(form);
  const group = form.get("target") === "group" ? String(form.get("consumer_group") ?? "") : "";
  return { replay: { range, group: group || null }, errors };
}

/** The body of one replay call: the range, and `consumer_group` when the replay goes to one group. */
export function replayBody({ range, group }: Replay): Schemas["ReplayBody"] {
  return group === null ? { ...range } : { ...range, consumer_group: group };
}

/** "to every consumer group", "to consumer group billing only". */
export function describeTarget(group: string | null): string {
  return group === null ? "to every consumer group" : `to consumer group ${group} only`;
}

/** A time the API took, as a field shows it for editing: in the tables' form, fractions of a second kept, so that
 * `parseTime` reads it back as it was. */
export function timeInput(value: string): string {
  return value.endsWith("Z") ? `${value.slice(0, -1).replace("T", " ")} UTC` : value;
}

/** How many entries a range holds, counted by paging the log (`page` fetches one page after `cursor`) up to `cap`:
 * beyond it, `more` says so instead of reading on. */
export async function countEntries(
  page: (cursor: string | null) => Promise<{ items: unknown[]; next_cursor: string | null }>,
  cap: number,
): Promise<{ count: number; more: boolean }> {
  let count = 0;
  let cursor: string | null = null;
  for (;;) {
    const answer = await page(cursor);
    count += answer.items.length;
    if (!answer.next_cursor) return { count, more: false };
    if (count >= cap) return { count, more: true };
    cursor = answer.next_cursor;
  }
}

/** "1 entry", "1,204 entries", "more than 10,000 entries". */
export function describeCount({ count, more }: { count: number; more: boolean }): string {
  const n = count.toLocaleString("en-US");
  if (more) return `more than ${n} entries`;
  return count === 1 ? "1 entry" : `${n} entries`;
}

/** "acked from 2026-11-25 04:10:03 UTC to 2026-11-25 05:00:00 UTC, with key “k”", or "every entry". */
export function describeRange(range: LogRange): string {
  const from = range.from_time ? formatTime(range.from_time) : null;
  const to = range.to_time ? formatTime(range.to_time) : null;
  const when =
    from && to
      ? `acked from ${from} to ${to}`
      : from
        ? `acked from ${from} on`
        : to
          ? `acked before ${to}`
          : "acked at any time";
  return range.key ? `${when}, with key “${range.key}”` : when;
}

/** A replay's course: running, refused midway (a limit; it can go on with `next`, to the same target), done, or
 * failed. `replayed` counts every call's entries so far. */
export type ReplayRun =
  | { phase: "running"; replayed: number }
  | { phase: "refused"; replayed: number; next: Replay; error: ApiError }
  | { phase: "done"; replayed: number }
  | { phase: "failed"; replayed: number; error: unknown };

/** The run after one call of `replay` answered (`replayed`) or failed (`error`). A 429 is a refusal midway: its
 * details say how many this call replayed and the `acked_at` to resume from, given back as `from_time` (the group,
 * if any, kept: going on must not send the rest to every group). */
export function afterReplay(
  soFar: number,
  replay: Replay,
  outcome: { replayed: number } | { error: unknown },
): ReplayRun {
  if ("replayed" in outcome) return { phase: "done", replayed: soFar + outcome.replayed };
  const { error } = outcome;
  if (!(error instanceof ApiError) || error.status !== 429)
    return { phase: "failed", replayed: soFar, error };
  const details = (error.details ?? {}) as { replayed?: unknown; resume_from?: unknown };
  const replayed = typeof details.replayed === "number" ? details.replayed : 0;
  // A refusal before the first entry (a rate limit) may carry no details: the same range again.
  const next =
    typeof details.resume_from === "string"
      ? { ...replay, range: { ...replay.range, from_time: details.resume_from } }
      : replay;
  return { phase: "refused", replayed: soFar + replayed, next, error };
}
