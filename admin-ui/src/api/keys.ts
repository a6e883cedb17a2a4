// One query-key factory per resource: every key starts with the tenant it was fetched for.
import { currentTenant } from "./client";

const t = () => currentTenant() ?? "-";

export const keys = {
  me: () => ["me"] as const,
  topics: {
    all: () => [t(), "topics"] as const,
    list: () => [t(), "topics", "list"] as const,
    series: (topic: string, range: string) => [t(), "topics", "series", topic, range] as const,
    messages: (topic: string, filter: object) => [t(), "topics", "messages", topic, filter] as const,
    message: (id: string) => [t(), "topics", "message", id] as const,
    story: (id: string) => [t(), "topics", "message", id, "story"] as const,
    messageIn: (topic: string, id: string) => [t(), "topics", "messages", topic, "id", id] as const,
    config: (topic: string) => [t(), "topics", "config", topic] as const,
    groups: (topic: string) => [t(), "topics", "groups", topic] as const,
    consumers: (topic: string) => [t(), "topics", "consumers", topic] as const,
    errorClasses: (topic: string) => [t(), "topics", "error-classes", topic] as const,
    log: (topic: string) => [t(), "topics", "log", topic] as const,
    logPages: (topic: string, filter: object) => [t(), "topics", "log", topic, filter] as const,
  },
  schemas: {
    all: () => [t(), "topic-schemas"] as const,
    /** A topic's schema: the version in force (null), or one version. */
    one: (topic: string, version: number | null) => [t(), "topic-schemas", topic, version] as const,
  },
  schedules: { all: () => [t(), "schedules"] as const },
  tenantSeries: (range: string) => [t(), "series", range] as const,
  audit: (filter: object) => [t(), "audit", filter] as const,
  bulkJobs: { all: () => [t(), "bulk-jobs"] as const, one: (id: string) => [t(), "bulk-jobs", id] as const },
  tenants: { all: () => ["tenants"] as const, switcher: () => ["tenants", "switcher"] as const },
  users: {
    all: () => [t(), "users"] as const,
    grants: (userId: string) => [t(), "users", userId, "grants"] as const,
  },
  maintenance: {
    all: () => ["maintenance"] as const,
    preview: (schedule: string) => ["maintenance", "preview", schedule] as const,
  },
};
