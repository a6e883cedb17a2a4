// The console's routes. Each route's loader warms the cache with what its page shows (api/preload.ts); pages read
// the same query options. The shell handles sign-in and the tenant.
import type { QueryClient } from "@tanstack/react-query";
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
} from "@tanstack/react-router";
import { auditQuery } from "./api/audit";
import { jobsQuery } from "./api/maintenance";
import { preload } from "./api/preload";
import { schedulesQuery } from "./api/schedules";
import { topicSchemaQuery } from "./api/schemas";
import { tenantsQuery } from "./api/tenants";
import {
  consumerGroupsQuery,
  logFilter,
  messageFilter,
  messageLogQuery,
  seriesQuery,
  tenantSeriesQuery,
  topicConfigQuery,
  topicMessageQuery,
  topicMessagesQuery,
  topicsQuery,
} from "./api/topics";
import { usersQuery } from "./api/users";
import { platformAdmins, RequireRole, tenantAdmins } from "./components/RequireRole";
import { Shell } from "./components/Shell";
import { text, topicSearch } from "./lib/search";
import { AuditPage } from "./pages/Audit";
import { LoginPage } from "./pages/Login";
import { MaintenancePage } from "./pages/Maintenance";
import { OVERVIEW_SORTS, OverviewPage, type OverviewSort } from "./pages/Overview";
import { TenantsPage } from "./pages/Tenants";
import { TopicPage } from "./pages/Topic";
import { TopicConfigPage } from "./pages/TopicConfig";
import { UsersPage } from "./pages/Users";

const root = createRootRouteWithContext<{ queryClient: QueryClient }>()({ component: Shell });

export interface LoginSearch {
  redirect?: string;
  expired?: boolean;
}

const login = createRoute({
  getParentRoute: () => root,
  path: "/login",
  component: LoginPage,
  validateSearch: (s: Record<string, unknown>): LoginSearch => ({
    redirect: typeof s.redirect === "string" && s.redirect.startsWith("/") ? s.redirect : undefined,
    expired: s.expired === true || s.expired === "true" ? true : undefined,
  }),
});
export interface OverviewSearch {
  /** The column the topics are sorted by (the name when absent), and `desc` for the other way. */
  sort?: OverviewSort;
  desc?: boolean;
  /** The filter: topics whose name contains it. */
  q?: string;
}
const overview = createRoute({
  getParentRoute: () => root,
  path: "/",
  component: OverviewPage,
  // Kept in the URL, so that Back from a topic finds the list as it was left.
  validateSearch: (s: Record<string, unknown>): OverviewSearch => ({
    sort: OVERVIEW_SORTS.find((k) => k === s.sort && k !== "topic"),
    desc: s.desc === true || s.desc === "true" ? true : undefined,
    q: text(s.q),
  }),
  loader: ({ context }) =>
    preload(context.queryClient, "tenant", (q) => [q.query(topicsQuery()), q.query(tenantSeriesQuery("1h"))]),
});
const topic = createRoute({
  getParentRoute: () => root,
  path: "/topics/$topic",
  component: TopicPage,
  validateSearch: topicSearch,
  // The drawer (`message`) is not a dependency: opening one loads nothing again.
  loaderDeps: ({ search: { message, ...deps } }) => deps,
  loader: ({ context, params: { topic }, deps }) =>
    preload(context.queryClient, "tenant", (q) => [
      q.query(topicsQuery()),
      q.query(seriesQuery(topic, deps.range ?? "1h")),
      ...(deps.view === "history"
        ? [q.query(topicConfigQuery(topic)), q.pages(messageLogQuery(topic, logFilter(deps)))]
        : deps.view === "schema"
          ? [
              q.query(topicSchemaQuery(topic)),
              ...[deps.schema_version, deps.schema_compare].flatMap((v) =>
                v ? [q.query(topicSchemaQuery(topic, v))] : [],
              ),
            ]
          : [
              deps.id
                ? q.query(topicMessageQuery(topic, deps.id))
                : q.pages(topicMessagesQuery(topic, messageFilter(deps))),
            ]),
      ...(topic.endsWith(".dlq") ? [] : [q.query(consumerGroupsQuery(topic))]),
    ]),
});
const topicConfig = createRoute({
  getParentRoute: () => root,
  path: "/topics/$topic/config",
  component: TopicConfigPage,
  loader: ({ context, params: { topic } }) =>
    preload(context.queryClient, "tenant", (q) => [q.query(topicConfigQuery(topic))]),
});
export interface AuditSearch {
  action?: string;
  actor?: string;
  topic?: string;
}
const audit = createRoute({
  getParentRoute: () => root,
  path: "/audit",
  component: () => (
    <RequireRole role={tenantAdmins} title="Audit trail">
      <AuditPage />
    </RequireRole>
  ),
  validateSearch: (s: Record<string, unknown>): AuditSearch => ({
    action: text(s.action),
    actor: text(s.actor),
    topic: text(s.topic),
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context, deps }) => preload(context.queryClient, "tenant", (q) => [q.pages(auditQuery(deps))]),
});
export interface SchedulesSearch {
  /** The list's filter: schedules whose name or topic contains it. */
  q?: string;
  /** The schedule whose form is open (tenant admins); `create`: the form of a new one. */
  edit?: string;
  create?: boolean;
}
const schedules = createRoute({
  getParentRoute: () => root,
  path: "/schedules",
  // Its own chunk: the cron preview (croner) and descriptions (cronstrue) load with the page, not with the console.
  component: lazyRouteComponent(() => import("./pages/Schedules"), "SchedulesPage"),
  validateSearch: (s: Record<string, unknown>): SchedulesSearch => ({
    q: text(s.q),
    edit: text(s.edit),
    create: s.create === true || s.create === "true" ? true : undefined,
  }),
  loader: ({ context }) => preload(context.queryClient, "tenant", (q) => [q.query(schedulesQuery())]),
});
const tenants = createRoute({
  getParentRoute: () => root,
  path: "/tenants",
  loader: ({ context }) => preload(context.queryClient, "platform", (q) => [q.query(tenantsQuery())]),
  component: () => (
    <RequireRole role={platformAdmins} title="Tenants">
      <TenantsPage />
    </RequireRole>
  ),
});
const users = createRoute({
  getParentRoute: () => root,
  path: "/users",
  loader: ({ context }) => preload(context.queryClient, "tenant", (q) => [q.query(usersQuery())]),
  component: () => (
    <RequireRole role={tenantAdmins} title="Users">
      <UsersPage />
    </RequireRole>
  ),
});
const maintenance = createRoute({
  getParentRoute: () => root,
  path: "/maintenance",
  loader: ({ context }) => preload(context.queryClient, "platform", (q) => [q.query(jobsQuery())]),
  component: () => (
    <RequireRole role={platformAdmins} title="Maintenance">
      <MaintenancePage />
    </RequireRole>
  ),
});

const routeTree = root.addChildren([
  login,
  overview,
  topic,
  topicConfig,
  schedules,
  audit,
  tenants,
  users,
  maintenance,
]);

export function createAppRouter(queryClient: QueryClient) {
  return createRouter({ routeTree, context: { queryClient }, defaultPreload: "intent" });
}

declare module "@tanstack/react-router" {
  interface Register {
    router: ReturnType<typeof createAppRouter>;
  }
}
