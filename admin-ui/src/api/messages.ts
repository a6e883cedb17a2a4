// One message: its calls and cache key.
import { queryOptions } from "@tanstack/react-query";
import { ApiError, api, type Schemas, unwrap } from "./client";
import { keys } from "./keys";

export const messageQuery = (id: string) =>
  queryOptions({
    queryKey: keys.topics.message(id),
    queryFn: () => unwrap(api.GET("/api/messages/{message_id}", { params: { path: { message_id: id } } })),
  });

export type MessageStory = Schemas["MessageStoryView"];
export type StoryEvent = Schemas["StoryEventView"];

/** A message's whole story (`GET /api/messages/{id}/story`); `topic` says where to look for one no longer stored.
 * None when nothing is known of it. */
export const storyQuery = (id: string, topic?: string) =>
  queryOptions({
    queryKey: keys.topics.story(id),
    queryFn: async () => {
      try {
        return await unwrap(
          api.GET("/api/messages/{message_id}/story", {
            params: { path: { message_id: id }, query: topic ? { topic } : {} },
          }),
        );
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }
    },
  });

export type EnqueueBody = Schemas["EnqueueBody"];

export const enqueue = (body: EnqueueBody) => unwrap(api.POST("/api/messages", { body }));

/** What the drawer may do to one message. */
export type MessageAction = "retry" | "requeue" | "delete";

export function actOnMessage(id: string, action: MessageAction) {
  const path = { params: { path: { message_id: id } } };
  if (action === "delete") return unwrap(api.DELETE("/api/messages/{message_id}", path));
  if (action === "retry") return unwrap(api.POST("/api/messages/{message_id}/retry", path));
  return unwrap(api.POST("/api/messages/{message_id}/requeue", path));
}
