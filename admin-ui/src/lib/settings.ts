// The viewer's own choices, kept in this browser: live refresh interval and, for platform admins, the tenant.
import { useSyncExternalStore } from "react";

type Listener = () => void;
const listeners = new Set<Listener>();

function read(key: string, fallback: string): string {
  try {
    return localStorage.getItem(`skiplock.${key}`) ?? fallback;
  } catch {
    return fallback;
  }
}

function write(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(`skiplock.${key}`);
    else localStorage.setItem(`skiplock.${key}`, value);
  } catch {
    // private mode: the choice lasts for this page only
  }
  for (const l of listeners) l();
}

function subscribe(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Seconds between live refreshes; 0 = paused. */
export const REFRESH_CHOICES = [0, 2, 5, 10, 30] as const;

export function useRefreshSeconds(): [number, (seconds: number) => void] {
  const value = useSyncExternalStore(subscribe, () => read("refresh", "5"));
  return [Number(value), (s: number) => write("refresh", String(s))];
}

export function refreshInterval(seconds: number): number | false {
  return seconds > 0 ? seconds * 1000 : false;
}

export function storedTenant(): string | null {
  const v = read("tenant", "");
  return v || null;
}

export function storeTenant(slug: string | null): void {
  write("tenant", slug);
}

/** Tighter table rows, for operators who scan many messages at once. */
export function useDenseTables(): [boolean, (on: boolean) => void] {
  const value = useSyncExternalStore(subscribe, () => read("dense", "0"));
  return [value === "1", (on: boolean) => write("dense", on ? "1" : "0")];
}
