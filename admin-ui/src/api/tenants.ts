// Tenants (platform admins): their calls and cache keys.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "./client";
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
