// Users and their grants: their calls and cache keys.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { keys } from "./keys";

export const usersQuery = () =>
  queryOptions({
    queryKey: keys.users.all(),
    queryFn: () => unwrap(api.GET("/api/users", { params: { query: { limit: 200 } } })),
  });

export const grantsQuery = (userId: string) =>
  queryOptions({
    queryKey: keys.users.grants(userId),
    queryFn: () => unwrap(api.GET("/api/users/{user_id}/grants", { params: { path: { user_id: userId } } })),
  });
