// The API names the field a validation error is about (`... - at `$.max_retries``): place it at that field.
import { ApiError } from "../api/client";

/** Each field's message from a 400 refusal; `byCode` places other refusals that are about one field, by their
 * contract code (`{group_exists: "consumer_group"}`: a 409 says the name is taken). */
export function fieldErrors(error: unknown, byCode: Record<string, string> = {}): Record<string, string> {
  if (!(error instanceof ApiError)) return {};
  const coded = byCode[error.code];
  if (coded) return { [coded]: error.message };
  if (error.status !== 400) return {};
  const entries = Array.isArray(error.details) ? (error.details as { error?: string; field?: string }[]) : [];
  const messages = entries.length ? entries : [{ error: error.message }];
  const out: Record<string, string> = {};
  for (const entry of messages) {
    const text = entry.error ?? "";
    const match = /at `\$\.([A-Za-z_]+)/.exec(text);
    const field = entry.field ?? match?.[1] ?? (/^([a-z_]+):/.exec(text)?.[1] || null);
    if (field) out[field] = text.replace(/ - at `\$\.[^`]*`/, "");
  }
  return out;
}
