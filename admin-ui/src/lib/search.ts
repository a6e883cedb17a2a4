// The search parameters of the console's URLs, read from what the router parsed: anything unknown or malformed is
// dropped, never trusted (a hand-edited URL cannot reach a page with a value its filters do not expect).

export interface TopicSearch {
  status?: "pending" | "delayed" | "processing" | "failed" | "expired";
  key?: string;
  metadata?: string;
  id?: string;
  /** In a dead-letter topic: the dead letters of this consumer group (a group's row links here). */
  consumer_group?: string;
  /** The message whose drawer is open: a link to it. */
  message?: string;
  /** The chart's range (the last hour when absent). */
  range?: "24h" | "7d";
  /** "end": the list from its other end (newest pending, oldest failed); the start when absent. */
  from?: "end";
  /** "history": the History tab (the topic's message log); "schema": the Schema tab; its messages when absent. */
  view?: "history" | "schema";
  /** The History tab's filter: entries acked from `log_from`, before `log_to` (RFC 3339), with key `log_key`. */
  log_from?: string;
  log_to?: string;
  log_key?: string;
  /** The Schema tab's version shown (the one in force when absent) and the one it is compared with. */
  schema_version?: number;
  schema_compare?: number;
}

const STATUSES = ["pending", "delayed", "processing", "failed", "expired"] as const;
/** A non-empty string from the URL. */
export const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);
/** A whole number of at least 1 from the URL (the router reads `?schema_version=2` as the number 2). */
const positive = (v: unknown) => {
  const n = typeof v === "string" ? Number(v) : v;
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
};

/** A value typed as text: the router reads `?key=123` as the number 123 and `?key=true` as true (it parses each
 * value as JSON first), and a key is text whatever it looks like. */
const typed = (v: unknown) =>
  typeof v === "number" || typeof v === "boolean" ? String(v) : typeof v === "string" && v ? v : undefined;
/** A metadata filter as the JSON text the API takes: a hand-written `?metadata={"region":"eu"}` reaches the router
 * parsed (an object), and is the same filter. */
const jsonObject = (v: unknown) =>
  typeof v === "string" && v
    ? v
    : v && typeof v === "object" && !Array.isArray(v)
      ? JSON.stringify(v)
      : undefined;

/** The topic page's search: its filters, tab, chart range and open drawer. */
export const topicSearch = (s: Record<string, unknown>): TopicSearch => ({
  status: STATUSES.find((x) => x === s.status),
  key: typed(s.key),
  metadata: jsonObject(s.metadata),
  id: typeof s.id === "string" && s.id ? s.id : undefined,
  consumer_group: typeof s.consumer_group === "string" && s.consumer_group ? s.consumer_group : undefined,
  message: typeof s.message === "string" && s.message ? s.message : undefined,
  range: s.range === "24h" || s.range === "7d" ? s.range : undefined,
  from: s.from === "end" ? "end" : undefined,
  view: s.view === "history" || s.view === "schema" ? s.view : undefined,
  log_from: text(s.log_from),
  log_to: text(s.log_to),
  log_key: typed(s.log_key),
  schema_version: positive(s.schema_version),
  schema_compare: positive(s.schema_compare),
});
