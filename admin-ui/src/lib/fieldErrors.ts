// The API names the field a validation error is about (`... - at `$.max_retries``): place it at that field.
import { ApiError } from "../api/client";

export function fieldErrors(error: unknown): Record<string, string> {
  if (!(error instanceof ApiError) || error.status !== 400) return {};
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
