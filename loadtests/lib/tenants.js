// What a test needs before it starts and removes when it ends, through the API only (never SQL): the server
// ready, a tenant of its own, a user in it.
import { check, sleep } from "k6";
import http from "k6/http";
import { caller } from "./api.js";
import { ADMIN_PASSWORD, ADMIN_USER, BASE_URL } from "./config.js";

const admin = () => caller(ADMIN_USER, ADMIN_PASSWORD, null, { phase: "setup" });

/** Waits up to `seconds` for GET /readyz to answer 200. */
export function waitReady(seconds = 60) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const r = http.get(`${BASE_URL}/readyz`, {
      tags: { phase: "setup" },
      responseCallback: http.expectedStatuses(200, 503),
    });
    if (r.status === 200) return;
    sleep(0.5);
  }
  throw new Error(`${BASE_URL}/readyz did not answer 200 within ${seconds}s`);
}

function must(r, what) {
  if (!check(r, { [`setup: ${what}`]: (x) => x.status >= 200 && x.status < 300 }, { phase: "setup" })) {
    throw new Error(`${what}: ${r.status} ${r.body}`);
  }
  return r;
}

/** A new tenant (`quotas` as the API takes them) with a tenant_admin user; returns its caller. */
export function createTenant(slug, quotas = null, tags = {}) {
  const who = admin();
  must(
    http.post(`${BASE_URL}/api/tenants`, JSON.stringify({ slug, name: `load test ${slug}`, quotas }), {
      headers: who.headers,
      tags: who.tags,
    }),
    `create tenant ${slug}`,
  );
  const password = `${slug}-pw-${Math.random().toString(36).slice(2)}`;
  const user = must(
    http.post(`${BASE_URL}/api/users`, JSON.stringify({ username: "loadtest", password, role: "tenant_admin" }), {
      headers: { ...who.headers, "X-Tenant": slug },
      tags: who.tags,
    }),
    `create a user in ${slug}`,
  );
  const tenant = { slug, username: user.json("username"), password, tags };
  // The first request with a new password pays for its argon2 check (about 170 ms): here, not in the measurements.
  const who2 = caller(tenant.username, tenant.password);
  must(http.get(`${BASE_URL}/api/topics`, { headers: who2.headers, tags: { phase: "setup" } }), `sign in to ${slug}`);
  return tenant;
}

/** The tenant's caller for the test's requests (built in each VU from setup()'s data). */
export function tenantCaller(tenant) {
  return caller(tenant.username, tenant.password, null, { tenant: tenant.tags.tenant || tenant.slug, ...tenant.tags });
}

/** Deletes the tenant and everything in it. */
export function deleteTenant(slug) {
  const who = admin();
  must(
    http.del(`${BASE_URL}/api/tenants/${slug}?force=true`, null, { headers: who.headers, tags: who.tags }),
    `delete tenant ${slug}`,
  );
}
