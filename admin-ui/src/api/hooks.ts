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

export function useSeries(topic: string, enabled = true) {
  return useQuery({
    queryKey: keys.topics.series(topic, 60),
    queryFn: () =>
      unwrap(api.GET("/api/topics/{topic}/series", { params: { path: { topic }, query: { minutes: 60 } } })),
    refetchInterval: useLiveInterval(),
    enabled,
  });
}
