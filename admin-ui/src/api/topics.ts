// Topics: the calls and cache keys of everything about a tenant's topics, in one place. Components use these
// options (`useQuery(topicConfigQuery(topic))`) and never write a key or a call themselves.
import { infiniteQueryOptions, queryOptions } from "@tanstack/react-query";
import { ApiError, api, type Schemas, unwrap } from "./client";
import { keys } from "./keys";

export type SeriesRange = "1h" | "24h" | "7d";

export const topicsQuery = () =>
  queryOptions({ queryKey: keys.topics.list(), queryFn: () => unwrap(api.GET("/api/topics")) });

export const seriesQuery = (topic: string, range: SeriesRange) =>
  queryOptions({
    queryKey: keys.topics.series(topic, range),
    queryFn: () =>
      unwrap(api.GET("/api/topics/{topic}/series", { params: { path: { topic }, query: { range } } })),
  });

export const tenantSeriesQuery = (range: SeriesRange) =>
  queryOptions({
    queryKey: keys.tenantSeries(range),
    queryFn: () => unwrap(api.GET("/api/series", { params: { query: { range } } })),
  });

export type MessageFilter = {
  status?: "pending" | "delayed" | "processing" | "failed" | "expired";
  key?: string;
  metadata?: string;
  /** In a dead-letter topic: the dead letters of this consumer group. */
  consumer_group?: string;
  /** The list from its end: finished messages oldest first, then live ones from the last to be delivered. */
  reverse?: boolean;
};

/** The filter of a topic page's URL (`from=end`: the list from its other end). */
export function messageFilter(search: MessageFilter & { from?: "end" }): MessageFilter {
  return {
    status: search.status,
    key: search.key,
    metadata: search.metadata,
    consumer_group: search.consumer_group,
    reverse: search.from === "end" || undefined,
  };
}

/** A topic's messages by keyset, 50 a page, as the console pages them. */
export const topicMessagesQuery = (topic: string, filter: MessageFilter) =>
  infiniteQueryOptions({
    queryKey: keys.topics.messages(topic, filter),
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET("/api/topics/{topic}/messages", {
          params: {
            path: { topic },
            query: {
              ...filter,
              reverse: filter.reverse || undefined,
              cursor: pageParam ?? undefined,
              limit: 50,
            },
          },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });

/** The id filter of a topic's page: one message by its id, or null when there is none in this topic. */
export const topicMessageQuery = (topic: string, id: string) =>
  queryOptions({
    queryKey: keys.topics.messageIn(topic, id),
    queryFn: async () => {
      try {
        const m = await unwrap(
          api.GET("/api/messages/{message_id}", { params: { path: { message_id: id } } }),
        );
        return m.topic === topic ? m : null;
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }
    },
  });

export const topicConfigQuery = (topic: string) =>
  queryOptions({
    queryKey: keys.topics.config(topic),
    queryFn: () => unwrap(api.GET("/api/topics/{topic}/config", { params: { path: { topic } } })),
  });

/** A topic's consumer groups, each with what it still owes (pending, processing), its dead letters and its lag. */
export const consumerGroupsQuery = (topic: string) =>
  queryOptions({
    queryKey: keys.topics.groups(topic),
    queryFn: () => unwrap(api.GET("/api/topics/{topic}/consumer-groups", { params: { path: { topic } } })),
  });

/** Who holds the topic's messages now (`GET /api/topics/{topic}/consumers`). */
export const consumersQuery = (topic: string) =>
  queryOptions({
    queryKey: keys.topics.consumers(topic),
    queryFn: () => unwrap(api.GET("/api/topics/{topic}/consumers", { params: { path: { topic } } })),
  });

/** The topic's failed messages (a DLQ's dead letters too) by error class (`GET /api/topics/{topic}/error-classes`). */
export const errorClassesQuery = (topic: string) =>
  queryOptions({
    queryKey: keys.topics.errorClasses(topic),
    queryFn: () => unwrap(api.GET("/api/topics/{topic}/error-classes", { params: { path: { topic } } })),
  });

/** A replayable topic's message log: what `from_time`, `to_time` and `key` select (RFC 3339 times). */
export type LogFilter = { from_time?: string; to_time?: string; key?: string };

/** The History tab's filter, from the topic page's URL. */
export function logFilter(search: { log_from?: string; log_to?: string; log_key?: string }): LogFilter {
  return { from_time: search.log_from, to_time: search.log_to, key: search.log_key };
}

/** One page of the message log, oldest first by `acked_at` (`limit` 1..1000). */
export const fetchLogPage = (topic: string, filter: LogFilter, cursor: string | null, limit: number) =>
  unwrap(
    api.GET("/api/topics/{topic}/message-log", {
      params: { path: { topic }, query: { ...filter, cursor: cursor ?? undefined, limit } },
    }),
  );

/** The message log as the History tab pages it: 50 at a time by keyset. */
export const messageLogQuery = (topic: string, filter: LogFilter) =>
  infiniteQueryOptions({
    queryKey: keys.topics.logPages(topic, filter),
    queryFn: ({ pageParam }) => fetchLogPage(topic, filter, pageParam, 50),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });

export const bulkJobsQuery = () =>
  queryOptions({ queryKey: keys.bulkJobs.all(), queryFn: () => unwrap(api.GET("/api/bulk-jobs")) });

export const bulkJobQuery = (id: string) =>
  queryOptions({
    queryKey: keys.bulkJobs.one(id),
    queryFn: () => unwrap(api.GET("/api/bulk-jobs/{job_id}", { params: { path: { job_id: id } } })),
  });

// --- changes ------------------------------------------------------------------------------------------------------

export const putTopicConfig = (topic: string, body: Schemas["TopicConfig"]) =>
  unwrap(api.PUT("/api/topic-configs/{topic}", { params: { path: { topic } }, body }));

export const resetTopicConfig = (topic: string) =>
  unwrap(api.DELETE("/api/topic-configs/{topic}", { params: { path: { topic } } }));

export const setPaused = (topic: string, paused: boolean) =>
  unwrap(
    api.POST(paused ? "/api/topics/{topic}/pause" : "/api/topics/{topic}/resume", {
      params: { path: { topic } },
    }),
  );

export const createConsumerGroup = (topic: string, body: Schemas["ConsumerGroupBody"]) =>
  unwrap(api.POST("/api/topics/{topic}/consumer-groups", { params: { path: { topic } }, body }));

export const deleteConsumerGroup = (topic: string, group: string) =>
  unwrap(api.DELETE("/api/topics/{topic}/consumer-groups/{group}", { params: { path: { topic, group } } }));

export type BulkAction = "retry" | "requeue" | "delete";

/** One bulk action on chosen messages (at most the API's limit of ids). */
export const bulkOnIds = (topic: string, action: BulkAction, ids: string[]) =>
  unwrap(
    api.POST("/api/topics/{topic}/messages/bulk", { params: { path: { topic } }, body: { action, ids } }),
  );

/** A bulk action on every message a filter matches, run by the server as a job. */
export const startBulkJob = (
  topic: string,
  action: BulkAction,
  filter: Schemas["BulkJobBody"]["filter"],
  ratePerSecond: number | null = null,
) =>
  unwrap(
    api.POST("/api/topics/{topic}/bulk-jobs", {
      params: { path: { topic } },
      body: { action, filter, rate_per_second: ratePerSecond },
    }),
  );

export const cancelBulkJob = (id: string) =>
  unwrap(api.DELETE("/api/bulk-jobs/{job_id}", { params: { path: { job_id: id } } }));

/** Purge a topic's messages of one status, or all (`statuses` absent). */
export const purgeTopic = (topic: string, statuses?: Schemas["PurgeBody"]["statuses"]) =>
  unwrap(
    api.POST("/api/topics/{topic}/purge", {
      params: { path: { topic } },
      body: statuses ? { statuses } : {},
    }),
  );

/** Enqueue the logged messages of a range again, as new messages; refused midway: a 429 ApiError whose details
 * say how many went and where to resume (lib/history.ts reads it). */
export const replayLog = (topic: string, body: Schemas["ReplayBody"]) =>
  unwrap(api.POST("/api/topics/{topic}/replay", { params: { path: { topic } }, body }));

/** Remove the log's entries acked before `before` (RFC 3339). */
export const trimLog = (topic: string, before: string) =>
  unwrap(api.DELETE("/api/topics/{topic}/message-log", { params: { path: { topic }, query: { before } } }));

export const deleteByKey = (topic: string, key: string) =>
  unwrap(api.DELETE("/api/topics/{topic}/messages/by-key/{key}", { params: { path: { topic, key } } }));
