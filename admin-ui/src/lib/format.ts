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

/** A count, exact ("11,482"): a draining backlog is watched one message at a time. */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** "1 message", "2 messages": a count with its noun, singular or plural (`plural` when not noun + "s"). */
export function countOf(n: number, noun: string, plural = `${noun}s`): string {
  return `${formatCount(n)} ${n === 1 ? noun : plural}`;
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

/** An age in its two largest units: "45s", "12m", "2h 5m", "7d", "7d 3h". */
export function formatAge(seconds: number): string {
  if (seconds <= 0) return "–";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  const units: [number, string][] =
    s < 86400
      ? [
          [3600, "h"],
          [60, "m"],
        ]
      : [
          [86400, "d"],
          [3600, "h"],
        ];
  const [[big, bigName], [small, smallName]] = units as [[number, string], [number, string]];
  const whole = Math.floor(s / big);
  const rest = Math.round((s - whole * big) / small);
  if (rest * small >= big) return `${whole + 1}${bigName}`;
  return rest ? `${whole}${bigName} ${rest}${smallName}` : `${whole}${bigName}`;
}

/** Every time the console shows, in one form and one zone: "2026-11-25 04:10:03 UTC" (the API's clock is UTC). */
export function formatTime(value: string | null | undefined): string {
  if (!value) return "–";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** An RFC 3339 time as the server gave it, to its last digit (a resume point to the microsecond), in the form of
 * `formatTime`: "2026-11-25 04:10:03.123456 UTC". */
export function formatPreciseTime(value: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|[+-]00:00)$/.exec(value);
  return m ? `${m[1]} ${m[2]} UTC` : value;
}
