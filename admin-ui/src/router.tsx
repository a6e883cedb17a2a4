// The console's routes. Pages fetch through the query hooks; the shell handles sign-in and the tenant.
import type { QueryClient } from "@tanstack/react-query";
import { createRootRouteWithContext, createRoute, createRouter } from "@tanstack/react-router";
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
  /** The message whose drawer is open: a link to it. */
  message?: string;
  /** The chart's range (the last hour when absent). */
  range?: "24h" | "7d";
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
const overview = createRoute({ getParentRoute: () => root, path: "/", component: OverviewPage });
const STATUSES = ["pending", "delayed", "processing", "failed", "expired"] as const;
const topic = createRoute({
  getParentRoute: () => root,
  path: "/topics/$topic",
  component: TopicPage,
  validateSearch: (s: Record<string, unknown>): TopicSearch => ({
    status: STATUSES.find((x) => x === s.status),
    key: typeof s.key === "string" && s.key ? s.key : undefined,
    metadata: typeof s.metadata === "string" && s.metadata ? s.metadata : undefined,
    id: typeof s.id === "string" && s.id ? s.id : undefined,
    message: typeof s.message === "string" && s.message ? s.message : undefined,
    range: s.range === "24h" || s.range === "7d" ? s.range : undefined,
  }),
});
const topicConfig = createRoute({
  getParentRoute: () => root,
  path: "/topics/$topic/config",
  component: TopicConfigPage,
});
export interface AuditSearch {
  action?: string;
  actor?: string;
  topic?: string;
}
const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);
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
});
const tenants = createRoute({
  getParentRoute: () => root,
  path: "/tenants",
  component: () => (
    <RequireRole role={platformAdmins} title="Tenants">
      <TenantsPage />
    </RequireRole>
  ),
});
const users = createRoute({
  getParentRoute: () => root,
  path: "/users",
  component: () => (
    <RequireRole role={tenantAdmins} title="Users">
      <UsersPage />
    </RequireRole>
  ),
});
const maintenance = createRoute({
  getParentRoute: () => root,
  path: "/maintenance",
  component: () => (
    <RequireRole role={platformAdmins} title="Maintenance">
      <MaintenancePage />
    </RequireRole>
  ),
});

const routeTree = root.addChildren([login, overview, topic, topicConfig, audit, tenants, users, maintenance]);

export function createAppRouter(queryClient: QueryClient) {
  return createRouter({ routeTree, context: { queryClient }, defaultPreload: "intent" });
}

declare module "@tanstack/react-router" {
  interface Register {
    router: ReturnType<typeof createAppRouter>;
  }
}
