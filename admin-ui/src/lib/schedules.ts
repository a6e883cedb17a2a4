// A schedule (periodic message) in the console: the form's draft and the body a save sends, the body that turns
// one on or off, the page's filter, and the API's refusals placed at their field. Its cron: lib/cron.ts.
import { ApiError } from "../api/client";
import type { Schedule, ScheduleBody } from "../api/schedules";
import { fieldErrors } from "./fieldErrors";
import { showPayload, toBase64 } from "./format";
import type { Parsed } from "./parse";

export type { Schedule, ScheduleBody };

/** A schedule's name, as the server checks it (a topic's pattern). */
export const NAME_PATTERN = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,199}";

/** What the form holds, as typed. */
export interface ScheduleDraft {
  name: string;
  topic: string;
  cron: string;
  timezone: string;
  payload: PayloadDraft;
  key: string;
  /** A JSON object, or empty for none. */
  metadata: string;
  priority: string;
  enabled: boolean;
}

/** The payload as the form edits it. `original` is the stored payload (base64), sent again as it was while the
 * text is the one the form started with: its JSON shown indented, or a binary payload the form cannot show as
 * text, is not rewritten by a save that did not touch it. */
export interface PayloadDraft {
  kind: "json" | "text";
  text: string;
  original: { base64: string; text: string; binary: boolean } | null;
}

export const NEW_SCHEDULE: ScheduleDraft = {
  name: "",
  topic: "",
  cron: "",
  timezone: "UTC",
  payload: { kind: "json", text: "{}", original: null },
  key: "",
  metadata: "",
  priority: "0",
  enabled: true,
};

/** The form's draft of a stored schedule. */
export function draftOf(s: Schedule): ScheduleDraft {
  const shown = showPayload(s.payload);
  const binary = shown.kind === "hex";
  const text = binary ? "" : shown.text;
  return {
    name: s.name,
    topic: s.topic,
    cron: s.cron,
    timezone: s.timezone,
    payload: {
      kind: shown.kind === "json" ? "json" : "text",
      text,
      original: { base64: s.payload, text, binary },
    },
    key: s.key ?? "",
    metadata: s.metadata == null ? "" : JSON.stringify(s.metadata, null, 2),
    priority: String(s.priority),
    enabled: s.enabled,
  };
}

export type DraftErrors = Partial<Record<"payload" | "metadata" | "priority", string>>;

/** The body a save sends, or the fields that cannot be sent as typed (the server checks the rest: the cron, the
 * zone, the name, the topic). */
export function bodyOf(
  draft: ScheduleDraft,
): { ok: true; body: ScheduleBody } | { ok: false; errors: DraftErrors } {
  const errors: DraftErrors = {};
  const payload = payloadOf(draft.payload);
  if (!payload.ok) errors.payload = payload.error;
  const metadata = metadataOf(draft.metadata);
  if (!metadata.ok) errors.metadata = metadata.error;
  const priority = priorityOf(draft.priority);
  if (!priority.ok) errors.priority = priority.error;
  if (!payload.ok || !metadata.ok || !priority.ok) return { ok: false, errors };
  return {
    ok: true,
    body: {
      topic: draft.topic.trim(),
      cron: draft.cron.trim(),
      timezone: draft.timezone.trim() || "UTC",
      payload: payload.value,
      key: draft.key === "" ? null : draft.key,
      metadata: metadata.value,
      priority: priority.value,
      enabled: draft.enabled,
    },
  };
}

function payloadOf(p: PayloadDraft): Parsed<string> {
  if (p.original && p.text === p.original.text) return { ok: true, value: p.original.base64 };
  if (p.kind === "json") {
    try {
      JSON.parse(p.text);
    } catch (e) {
      return { ok: false, error: `Not JSON: ${(e as Error).message}` };
    }
  }
  return { ok: true, value: toBase64(p.text) };
}

function metadataOf(text: string): Parsed<Record<string, unknown> | null> {
  if (text.trim() === "") return { ok: true, value: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `Not JSON: ${(e as Error).message}` };
  }
  if (!isObject(value)) return { ok: false, error: 'Metadata is a JSON object, e.g. {"kind": "report"}' };
  return { ok: true, value };
}

function priorityOf(text: string): Parsed<number> {
  const t = text.trim();
  if (t === "") return { ok: true, value: 0 };
  if (!/^\d$/.test(t)) return { ok: false, error: `"${t}" is not a priority: a whole number from 0 to 9` };
  return { ok: true, value: Number(t) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The body that turns a schedule on or off and changes nothing else (the API has no partial update). */
export function toggledBody(s: Schedule, enabled: boolean): ScheduleBody {
  return {
    topic: s.topic,
    cron: s.cron,
    timezone: s.timezone,
    payload: s.payload,
    key: s.key,
    metadata: isObject(s.metadata) ? s.metadata : null,
    priority: s.priority,
    enabled,
  };
}

/** The schedules whose name or topic contains `filter` (case ignored). */
export function filterSchedules(items: Schedule[], filter: string): Schedule[] {
  const needle = filter.trim().toLowerCase();
  if (!needle) return items;
  return items.filter((s) => s.name.toLowerCase().includes(needle) || s.topic.toLowerCase().includes(needle));
}

const FIELDS = ["name", "topic", "cron", "timezone", "payload", "key", "metadata", "priority"] as const;
const NAMED = new RegExp(`^(?:a schedule's )?(${FIELDS.join("|")})\\b`);

/** A refused save's message by field: the API names the cron and the zone (`cron: ...`, `timezone: ...`), and
 * says the others in a sentence that starts with the field ("topic must match ...", "a schedule's name must
 * ..."); a dead-letter topic and a payload over the limit are refused by their own codes. */
export function scheduleFormErrors(error: unknown): Record<string, string> {
  const placed = fieldErrors(error, { reserved_topic: "topic", payload_too_large: "payload" });
  if (Object.keys(placed).length > 0 || !(error instanceof ApiError) || error.status !== 400) return placed;
  const field = NAMED.exec(error.message)?.[1];
  return field ? { [field]: error.message } : {};
}
