// The audit trail: its call and cache key, newest first by cursor.
import { infiniteQueryOptions } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { keys } from "./keys";

export type AuditFilter = { action?: string; actor?: string; topic?: string };

export const auditQuery = (filter: AuditFilter) =>
  infiniteQueryOptions({
    queryKey: keys.audit(filter),
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET("/api/audit", {
          params: { query: { ...filter, cursor: pageParam ?? undefined, limit: 50 } },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
