// Users and their grants: their calls and cache keys.
import { queryOptions } from "@tanstack/react-query";
import { api, type Schemas, unwrap } from "./client";
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

export const createUser = (body: Schemas["UserCreateBody"]) => unwrap(api.POST("/api/users", { body }));

export const updateUser = (id: string, body: Schemas["UserUpdateBody"]) =>
  unwrap(api.PATCH("/api/users/{user_id}", { params: { path: { user_id: id } }, body }));

export const deleteUser = (id: string) =>
  unwrap(api.DELETE("/api/users/{user_id}", { params: { path: { user_id: id } } }));

export const addGrant = (userId: string, body: Schemas["GrantBody"]) =>
  unwrap(api.POST("/api/users/{user_id}/grants", { params: { path: { user_id: userId } }, body }));

export const removeGrant = (userId: string, grantId: string) =>
  unwrap(
    api.DELETE("/api/users/{user_id}/grants/{grant_id}", {
      params: { path: { user_id: userId, grant_id: grantId } },
    }),
  );
