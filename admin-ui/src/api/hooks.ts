// Queries shared by several pages, refreshed at the viewer's live interval.
import { useQuery } from "@tanstack/react-query";
import { refreshInterval, useRefreshSeconds } from "../lib/settings";
import { type SeriesRange, seriesQuery, tenantSeriesQuery, topicsQuery } from "./topics";

export type { SeriesRange };

export function useLiveInterval(): number | false {
  return refreshInterval(useRefreshSeconds()[0]);
}

export function useTopics() {
  return useQuery({ ...topicsQuery(), refetchInterval: useLiveInterval() });
}

/** Each range: its button's label, and how a title names it ("orders, last hour"). */
export const SERIES_RANGES: { range: SeriesRange; label: string; span: string }[] = [
  { range: "1h", label: "1 hour", span: "last hour" },
  { range: "24h", label: "24 hours", span: "last 24 hours" },
  { range: "7d", label: "7 days", span: "last 7 days" },
];

export function useSeries(topic: string, enabled = true, range: SeriesRange = "1h") {
  return useQuery({ ...seriesQuery(topic, range), refetchInterval: useLiveInterval(), enabled });
}

/** The tenant's figures, every topic summed (its dashboard). */
export function useTenantSeries(range: SeriesRange) {
  return useQuery({ ...tenantSeriesQuery(range), refetchInterval: useLiveInterval() });
}
