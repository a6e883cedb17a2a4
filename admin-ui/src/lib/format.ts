// How the console shows payloads, times and numbers.

export type PayloadView = { kind: "json" | "text" | "hex"; text: string };

/** A payload (base64 on the wire) as pretty JSON when it parses, text when it is UTF-8, hex otherwise. */
export function showPayload(base64: string): PayloadView {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0"));
    const lines: string[] = [];
    for (let i = 0; i < hex.length; i += 16) lines.push(hex.slice(i, i + 16).join(" "));
    return { kind: "hex", text: lines.join("\n") };
  }
  try {
    return { kind: "json", text: JSON.stringify(JSON.parse(text), null, 2) };
  } catch {
    return { kind: "text", text };
  }
}

/** Text or JSON typed in a form, as the base64 the API takes. */
export function toBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

export function formatCount(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(n >= 10_000_000 ? 0 : 1)}M`;
  if (n >= 10_000) return `${Math.round(n / 1000)}k`;
  return n.toLocaleString("en-US");
}

/** A limited topic's (or consumer group's) messages in flight against its `max_inflight`: "3 / 5", exact (a limit
 * is at most 1,000,000). More than the limit can show for a while after it is lowered: leases taken stay. */
export function formatInFlight(processing: number, limit: number): string {
  return `${processing.toLocaleString("en-US")} / ${limit.toLocaleString("en-US")}`;
}

export function formatRate(perSecond: number): string {
  if (perSecond === 0) return "0/s";
  if (perSecond < 1) return `${(perSecond * 60).toFixed(1)}/min`;
  return `${perSecond >= 100 ? Math.round(perSecond) : perSecond.toFixed(1)}/s`;
}

export function formatAge(seconds: number): string {
  if (seconds <= 0) return "–";
  if (seconds < 60) return `${Math.round(seconds)}s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)}h`;
  return `${(seconds / 86400).toFixed(1)}d`;
}

/** An RFC 3339 time as local date and time with seconds, or a dash. */
/** Every time the console shows, in one form and one zone: "2026-11-25 04:10:03 UTC" (the API's clock is UTC). */
export function formatTime(value: string | null | undefined): string {
  if (!value) return "–";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}
