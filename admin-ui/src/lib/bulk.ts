// Bulk actions on a topic's messages: what the API is sent, and what the operator is told.
import type { Schemas } from "../api/client";

export type BulkAction = "retry" | "requeue" | "delete";
type BulkResult = Schemas["BulkResultView"];

/** "Retry: 12 done, 38 skipped — 38 × invalid_request (message is pending: …)". */
export function describeBulk(action: BulkAction, results: BulkResult[]): string {
  const done = results.reduce((n, r) => n + r.done, 0);
  const skipped = results.reduce((n, r) => n + r.skipped, 0);
  const reasons = new Map<string, number>();
  for (const r of results)
    for (const f of r.failures)
      reasons.set(`${f.code} (${f.error})`, (reasons.get(`${f.code} (${f.error})`) ?? 0) + 1);
  const why = [...reasons].map(([reason, n]) => `${n.toLocaleString("en-US")} × ${reason}`).join("; ");
  const verb = action.charAt(0).toUpperCase() + action.slice(1);
  return `${verb}: ${done.toLocaleString("en-US")} done, ${skipped.toLocaleString("en-US")} skipped${why ? ` — ${why}` : ""}.`;
}

type Filter = { status?: string; key?: string; metadata?: string; consumer_group?: string };

/** A bulk job's filter as the API takes it: the metadata filter is a JSON object, not the text typed. */
export function jobFilter(filter: Filter): Schemas["BulkJobBody"]["filter"] {
  let metadata: Record<string, unknown> | undefined;
  if (filter.metadata) {
    try {
      metadata = JSON.parse(filter.metadata) as Record<string, unknown>;
    } catch {
      throw new Error(`The metadata filter is not JSON: ${filter.metadata}`);
    }
  }
  const out: Record<string, unknown> = {
    status: filter.status,
    key: filter.key,
    metadata,
    consumer_group: filter.consumer_group,
  };
  return Object.fromEntries(
    Object.entries(out).filter(([, v]) => v !== undefined),
  ) as Schemas["BulkJobBody"]["filter"];
}

/** "status failed, key “k”, metadata containing {"region":"eu"}, consumer group “billing”". */
export function describeFilter(filter: Filter): string {
  const parts = [];
  if (filter.status) parts.push(`status ${filter.status}`);
  if (filter.key) parts.push(`key “${filter.key}”`);
  if (filter.metadata) parts.push(`metadata containing ${filter.metadata}`);
  if (filter.consumer_group) parts.push(`consumer group “${filter.consumer_group}”`);
  return parts.join(", ");
}
