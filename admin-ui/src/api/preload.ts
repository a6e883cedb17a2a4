// Route loaders: each route warms the cache with the queries its page renders, so the page opens with its data
// and hovering a link (the router preloads on intent) fetches it ahead. Pages read the same query options.
//
// A loader fetches only once the shell knows who is signed in and, for a platform admin, which tenant is being
// looked at (keys and the X-Tenant header name it): on a first visit the shell is still deciding, and the page's
// own queries fetch once it has. A loader never fails a navigation: a refusal shows on the page, from its query.
import type {
  FetchInfiniteQueryOptions,
  FetchQueryOptions,
  QueryClient,
  QueryKey,
} from "@tanstack/react-query";
import { currentTenant, type Schemas } from "./client";
import { keys } from "./keys";

/** Whose data a route shows: a tenant's (the signed-in user's, or the one a platform admin chose), or the
 * platform's (tenants, maintenance). */
export type Scope = "tenant" | "platform";

export function ready(queryClient: QueryClient, scope: Scope): boolean {
  const me = queryClient.getQueryData<Schemas["MeView"]>(keys.me());
  if (!me) return false;
  const platform = me.role === "platform_admin";
  return scope === "platform" ? platform : !platform || currentTenant() !== null;
}

/** What a loader may fetch: a query, or an infinite query's first page. Either only when the cache has no data
 * for it yet: what it has is kept fresh by the page's own queries (live refresh), and fetching an infinite query
 * again would fetch every page loaded. */
export interface Warm {
  query<T, K extends QueryKey>(options: FetchQueryOptions<T, Error, T, K>): Promise<void>;
  pages<T, K extends QueryKey, P>(options: FetchInfiniteQueryOptions<T, Error, T, K, P>): Promise<void>;
}

/** Run a route's prefetches when the console is ready for them; resolves when they have settled. */
export async function preload(
  queryClient: QueryClient,
  scope: Scope,
  fetches: (warm: Warm) => Promise<void>[],
): Promise<void> {
  if (!ready(queryClient, scope)) return;
  const warm: Warm = {
    query: (options) => queryClient.prefetchQuery({ ...options, staleTime: Number.POSITIVE_INFINITY }),
    pages: (options) =>
      queryClient.prefetchInfiniteQuery({ ...options, staleTime: Number.POSITIVE_INFINITY }),
  };
  await Promise.allSettled(fetches(warm));
}
