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
import { AuditPage } from "./pages/Audit";
import { LoginPage } from "./pages/Login";
import { MaintenancePage } from "./pages/Maintenance";
import { OverviewPage } from "./pages/Overview";
import { TenantsPage } from "./pages/Tenants";
import { TopicPage } from "./pages/Topic";
import { TopicConfigPage } from "./pages/TopicConfig";
import { UsersPage } from "./pages/Users";

const root = createRootRouteWithContext<{ queryClient: QueryClient }>()({ component: Shell });

export interface LoginSearch {
  redirect?: string;
  expired?: boolean;
}

export interface TopicSearch {
  status?: "pending" | "delayed" | "processing" | "failed" | "expired";
  key?: string;
  metadata?: string;
  id?: string;
  /** In a dead-letter topic: the dead letters of this consumer group (a group's row links here). */
  consumer_group?: string;
  /** The message whose drawer is open: a link to it. */
  message?: string;
  /** The chart's range (the last hour when absent). */
  range?: "24h" | "7d";
  /** "end": the list from its other end (newest pending, oldest failed); the start when absent. */
  from?: "end";
  /** "history": the History tab (the topic's message log); "schema": the Schema tab; its messages when absent. */
  view?: "history" | "schema";
  /** The History tab's filter: entries acked from `log_from`, before `log_to` (RFC 3339), with key `log_key`. */
  log_from?: string;
  log_to?: string;
  log_key?: string;
  /** The Schema tab's version shown (the one in force when absent) and the one it is compared with. */
  schema_version?: number;
  schema_compare?: number;
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
const overview = createRoute({
  getParentRoute: () => root,
  path: "/",
  component: OverviewPage,
  loader: ({ context }) =>
    preload(context.queryClient, "tenant", (q) => [q.query(topicsQuery()), q.query(tenantSeriesQuery("1h"))]),
});
const STATUSES = ["pending", "delayed", "processing", "failed", "expired"] as const;
const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);
/** A whole number of at least 1 from the URL (the router reads `?schema_version=2` as the number 2). */
const positive = (v: unknown) => {
  const n = typeof v === "string" ? Number(v) : v;
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
};
const topic = createRoute({
  getParentRoute: () => root,
  path: "/topics/$topic",
  component: TopicPage,
  validateSearch: (s: Record<string, unknown>): TopicSearch => ({
    status: STATUSES.find((x) => x === s.status),
    key: typeof s.key === "string" && s.key ? s.key : undefined,
    metadata: typeof s.metadata === "string" && s.metadata ? s.metadata : undefined,
    id: typeof s.id === "string" && s.id ? s.id : undefined,
    consumer_group: typeof s.consumer_group === "string" && s.consumer_group ? s.consumer_group : undefined,
    message: typeof s.message === "string" && s.message ? s.message : undefined,
    range: s.range === "24h" || s.range === "7d" ? s.range : undefined,
    from: s.from === "end" ? "end" : undefined,
    view: s.view === "history" || s.view === "schema" ? s.view : undefined,
    log_from: text(s.log_from),
    log_to: text(s.log_to),
    log_key: text(s.log_key),
    schema_version: positive(s.schema_version),
    schema_compare: positive(s.schema_compare),
  }),
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
