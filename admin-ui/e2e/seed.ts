// The tenants, users and messages the end-to-end tests work on, made through the API as an operator would.
import { type APIRequestContext, request } from "@playwright/test";

export const baseURL = process.env.SKIPLOCK_URL ?? "http://127.0.0.1:8080";
export const admin = {
  username: process.env.SKIPLOCK_ADMIN_USERNAME ?? "admin",
  password: process.env.SKIPLOCK_ADMIN_PASSWORD ?? "skiplock-admin",
};
export const PASSWORD = "e2e-password-123";

/** What the setup made; passed to the tests through the environment. */
export interface Seed {
  tenant: string;
  doomed: string;
  owner: string;
  viewer: string;
}

export function seed(): Seed {
  const raw = process.env.SKIPLOCK_E2E_SEED;
  if (!raw) throw new Error("no seed: run through playwright.config.ts (its global setup makes one)");
  return JSON.parse(raw) as Seed;
}

export async function adminApi(tenant?: string): Promise<APIRequestContext> {
  return request.newContext({
    baseURL,
    httpCredentials: { ...admin, send: "always" },
    extraHTTPHeaders: tenant ? { "X-Tenant": tenant } : {},
  });
}

async function ok<T>(response: Promise<import("@playwright/test").APIResponse>): Promise<T> {
  const r = await response;
  if (!r.ok()) throw new Error(`${r.url()}: ${r.status()} ${await r.text()}`);
  return (r.status() === 204 ? null : await r.json()) as T;
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** A tenant with topics in every state: orders (120 live, keys and metadata), its DLQ, failed payments,
 * billing (which the read-only member may not see); a tenant admin and a member with `read` on `orders.*`. */
export async function makeSeed(): Promise<Seed> {
  const run = Date.now().toString(36);
  const s: Seed = {
    tenant: `e2e-${run}`,
    doomed: `e2e-${run}-old`,
    owner: `owner-${run}`,
    viewer: `viewer-${run}`,
  };
  const platform = await adminApi();
  await ok(platform.post("/api/tenants", { data: { slug: s.tenant, name: "E2E Shop" } }));
  await ok(platform.post("/api/tenants", { data: { slug: s.doomed, name: "Old shop" } }));
  const api = await adminApi(s.tenant);
  const owner = await ok<{ username: string }>(
    api.post("/api/users", { data: { username: s.owner, password: PASSWORD, role: "tenant_admin" } }),
  );
  const viewer = await ok<{ id: string; username: string }>(
    api.post("/api/users", { data: { username: s.viewer, password: PASSWORD, role: "member" } }),
  );
  s.owner = owner.username;
  s.viewer = viewer.username;
  await ok(
    api.post(`/api/users/${viewer.id}/grants`, { data: { action: "read", topic_pattern: "orders.*" } }),
  );

  await ok(api.put("/api/topic-configs/orders", { data: { max_retries: 0 } }));
  await ok(api.put("/api/topic-configs/payments", { data: { max_retries: 0, dlq_enabled: false } }));
  const orders = Array.from({ length: 120 }, (_, i) => ({
    payload: b64(JSON.stringify({ order: i + 1, total: (i + 1) * 10 })),
    key: i < 5 ? `order-${i + 1}` : undefined,
    metadata: { region: i % 2 ? "us" : "eu" },
  }));
  await ok(api.post("/api/messages/batch", { data: { topic: "orders", messages: orders } }));
  await ok(
    api.post("/api/messages/batch", {
      data: {
        topic: "payments",
        messages: Array.from({ length: 6 }, (_, i) => ({ payload: b64(`pay ${i}`) })),
      },
    }),
  );
  await ok(
    api.post("/api/messages/batch", {
      data: { topic: "billing", messages: [{ payload: b64("\u0000\u0001binary") }] },
    }),
  );
  // Dead letters: three orders nacked past their retries; failed payments (no DLQ).
  for (const [topic, count] of [
    ["orders", 3],
    ["payments", 6],
  ] as const) {
    const taken = await ok<{ messages: { id: string }[] }>(
      api.post("/api/messages/dequeue", { data: { topic, count } }),
    );
    for (const m of taken.messages) {
      await ok(api.post(`/api/messages/${m.id}/nack`, { data: { error: "card declined" } }));
    }
  }
  const old = await adminApi(s.doomed);
  await ok(old.post("/api/messages", { data: { topic: "legacy", payload: b64("left behind") } }));
  await Promise.all([platform.dispose(), api.dispose(), old.dispose()]);
  return s;
}

export async function dropSeed(s: Seed): Promise<void> {
  const platform = await adminApi();
  for (const slug of [s.tenant, s.doomed]) await platform.delete(`/api/tenants/${slug}?force=true`);
  await platform.put("/api/admin/delete-reaper/schedule", { data: { schedule: "" } });
  await platform.dispose();
}
