// One message: its calls and cache key.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { keys } from "./keys";

export const messageQuery = (id: string) =>
  queryOptions({
    queryKey: keys.topics.message(id),
    queryFn: () => unwrap(api.GET("/api/messages/{message_id}", { params: { path: { message_id: id } } })),
  });
