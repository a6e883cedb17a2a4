// Tenants (platform admins): their calls and cache keys.
import { queryOptions } from "@tanstack/react-query";
import { api, type Schemas, unwrap } from "./client";
import { keys } from "./keys";

export const tenantsQuery = () =>
  queryOptions({
    queryKey: keys.tenants.all(),
    queryFn: () => unwrap(api.GET("/api/tenants", { params: { query: { limit: 200 } } })),
  });

/** The header's tenant switcher: the same list, cached on its own (it must not be sent an X-Tenant). */
export const tenantSwitcherQuery = () =>
  queryOptions({
    queryKey: keys.tenants.switcher(),
    queryFn: () => unwrap(api.GET("/api/tenants", { params: { query: { limit: 200 } } })),
  });

export const createTenant = (body: Schemas["TenantCreateBody"]) => unwrap(api.POST("/api/tenants", { body }));

export const updateTenant = (slug: string, body: Schemas["TenantUpdateBody"]) =>
  unwrap(api.PATCH("/api/tenants/{slug}", { params: { path: { slug } }, body }));

/** `force`: delete a tenant that still holds messages, with them. */
export const deleteTenant = (slug: string, force: boolean) =>
  unwrap(api.DELETE("/api/tenants/{slug}", { params: { path: { slug }, query: { force } } }));
