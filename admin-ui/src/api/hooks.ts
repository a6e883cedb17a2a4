// Queries shared by several pages.
import { useQuery } from "@tanstack/react-query";
import { refreshInterval, useRefreshSeconds } from "../lib/settings";
import { api, unwrap } from "./client";
import { keys } from "./keys";

export function useLiveInterval(): number | false {
  return refreshInterval(useRefreshSeconds()[0]);
}

export function useTopics() {
  return useQuery({
    queryKey: keys.topics.list(),
    queryFn: () => unwrap(api.GET("/api/topics")),
    refetchInterval: useLiveInterval(),
  });
}

export type SeriesRange = "1h" | "24h" | "7d";
/** Each range: its button's label, and how a title names it ("orders, last hour"). */
export const SERIES_RANGES: { range: SeriesRange; label: string; span: string }[] = [
  { range: "1h", label: "1 hour", span: "last hour" },
  { range: "24h", label: "24 hours", span: "last 24 hours" },
  { range: "7d", label: "7 days", span: "last 7 days" },
];

export function useSeries(topic: string, enabled = true, range: SeriesRange = "1h") {
  return useQuery({
    queryKey: keys.topics.series(topic, range),
    queryFn: () =>
      unwrap(api.GET("/api/topics/{topic}/series", { params: { path: { topic }, query: { range } } })),
    refetchInterval: useLiveInterval(),
    enabled,
  });
}

/** The tenant's figures, every topic summed (its dashboard). */
export function useTenantSeries(range: SeriesRange) {
  return useQuery({
    queryKey: keys.tenantSeries(range),
    queryFn: () => unwrap(api.GET("/api/series", { params: { query: { range } } })),
    refetchInterval: useLiveInterval(),
  });
}
