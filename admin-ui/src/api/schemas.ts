// Topic schemas: a topic's schema in force and its earlier versions; tenant admins replace and delete them.
// Components use these options and calls, never a key or a request of their own.
import { queryOptions } from "@tanstack/react-query";
import { ApiError, api, type Schemas, unwrap } from "./client";
import { keys } from "./keys";

export type TopicSchema = Schemas["SchemaView"];
export type SchemaBody = Schemas["SchemaBody"];

/** A topic's schema: the version in force (no `version`), or one version; null when the topic has none. */
export const topicSchemaQuery = (topic: string, version?: number) =>
  queryOptions({
    queryKey: keys.schemas.one(topic, version ?? null),
    queryFn: async (): Promise<TopicSchema | null> => {
      try {
        return await unwrap(
          api.GET("/api/topic-schemas/{topic}", { params: { path: { topic }, query: { version } } }),
        );
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }
    },
  });

/** Adds the next version (1 for a topic without a schema); `compatibility: "backward"` refuses one that would
 * refuse messages the version in force accepts (409 incompatible_schema). */
export const putTopicSchema = (topic: string, body: SchemaBody) =>
  unwrap(api.PUT("/api/topic-schemas/{topic}", { params: { path: { topic } }, body }));

/** Every version goes; enqueues into the topic are no longer checked. */
export const deleteTopicSchema = (topic: string) =>
  unwrap(api.DELETE("/api/topic-schemas/{topic}", { params: { path: { topic } } }));
