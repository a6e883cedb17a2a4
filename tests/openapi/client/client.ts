// A client written against the types generated from docs/openapi.json: if the document loses precision (a status
// that becomes a plain string, a page without its item type, an operation without its body), this stops compiling.
import createClient from "openapi-fetch";
import type { components, operations, paths } from "./generated/skiplock";

type Schemas = components["schemas"];
type MessageStatus = Schemas["MessageView"]["status"];
type Role = Schemas["MeView"]["role"];

const api = createClient<paths>({ baseUrl: "http://127.0.0.1:8080" });

function describeStatus(status: MessageStatus): string {
  switch (status) {
    case "pending":
    case "processing":
    case "failed":
    case "expired":
      return status;
    default: {
      const unknown: never = status;
      return unknown;
    }
  }
}

function describeOutcome(outcome: Schemas["NackView"]["outcome"]): string {
  switch (outcome) {
    case "retry":
    case "dlq":
    case "failed":
      return outcome;
    default: {
      const unknown: never = outcome;
      return unknown;
    }
  }
}

function isAdmin(role: Role): boolean {
  return role === "platform_admin" || role === "tenant_admin";
}

function errorCode(error: Schemas["Error"]): string {
  return `${error.code}: ${error.error}`;
}

export async function roundTrip(): Promise<string[]> {
  const seen: string[] = [];
  const enqueued = await api.POST("/api/messages", {
    body: { topic: "orders", payload: "eyJhIjoxfQ==", key: "order-1", priority: 5 },
  });
  if (enqueued.error) return [errorCode(enqueued.error)];
  const id: string = enqueued.data.id;

  const leased = await api.POST("/api/messages/dequeue", { body: { topic: "orders", count: 10, wait_seconds: 5 } });
  for (const message of leased.data?.messages ?? []) {
    seen.push(describeStatus(message.status), message.receipt ?? "", String(message.retry_count));
  }
  const acks: Schemas["BatchAckBody"]["acks"] = [{ id, receipt: null }];
  const acked = await api.POST("/api/messages/ack", { body: { acks } });
  for (const failure of acked.data?.failed ?? []) {
    const code: "message_not_found" | "lease_lost" = failure.code;
    seen.push(code);
  }
  const nacked = await api.POST("/api/messages/{message_id}/nack", {
    params: { path: { message_id: id } },
    body: { error: "payment service down" },
  });
  if (nacked.data) seen.push(describeOutcome(nacked.data.outcome));

  const page = await api.GET("/api/messages", { params: { query: { topic: "orders", status: "failed", limit: 50 } } });
  if (page.data) seen.push(String(page.data.total), ...page.data.items.map((m) => m.id));

  const tenants = await api.GET("/api/tenants", { params: { query: { limit: 10, offset: 0 } } });
  for (const tenant of tenants.data?.items ?? []) {
    const status: "active" | "suspended" = tenant.status;
    seen.push(tenant.slug, status, String(tenant.quotas.max_messages ?? "unlimited"));
  }
  const me = await api.GET("/api/auth/me");
  if (me.data && isAdmin(me.data.role)) seen.push(me.data.username);

  const grant: operations["createGrant"]["requestBody"] = {
    content: { "application/json": { action: "consume", topic_pattern: "orders.*" } },
  };
  seen.push(grant.content["application/json"].action);
  const config = await api.PUT("/api/topic-configs/{topic}", {
    params: { path: { topic: "orders" } },
    body: { max_depth: 10_000, retry_backoff_seconds: [1, 5, 30] },
  });
  if (config.data) seen.push(String(config.data.max_depth ?? "default"));
  return seen;
}
