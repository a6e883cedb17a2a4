// What operators hit (issue 27): each defect as it was reproduced, now refused or shown as it should be.
import { expect, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { admin, adminApi, PASSWORD, seed } from "./seed";

const s = seed();

test("a number field that does not parse is an error at the field, and nothing is saved", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  await api.put("/api/topic-configs/orders", { data: { max_retries: 0, throughput_limit: 50 } });
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/orders/config");
  const form = page.getByRole("form", { name: "Topic configuration" });
  await form.getByLabel("Throughput limit (/s)").fill("fifty");
  await form.getByLabel("Retry backoff (s)").fill("1, 5, 30,");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByRole("alert").filter({ hasText: '"fifty" is not a whole number' })).toBeVisible();
  await expect(form.getByRole("alert").filter({ hasText: "entry 4 is empty" })).toBeVisible();
  await expect(form.getByRole("status")).toHaveCount(0); // no "Saved"
  const stored = await (await api.get("/api/topic-configs/orders")).json();
  expect(stored.throughput_limit).toBe(50);
  expect(stored.retry_backoff_seconds).toBeNull();

  await form.getByLabel("Throughput limit (/s)").fill("60");
  await form.getByLabel("Retry backoff (s)").fill("1, 5, 30");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByRole("status")).toContainText("Saved");
  const saved = await (await api.get("/api/topic-configs/orders")).json();
  expect([saved.throughput_limit, saved.retry_backoff_seconds]).toEqual([60, [1, 5, 30]]);
  await api.put("/api/topic-configs/orders", { data: { max_retries: 0 } });
  await api.dispose();
});

test("a quota that does not parse keeps the quota in force", async ({ page }) => {
  const platform = await adminApi();
  await platform.patch(`/api/tenants/${s.doomed}`, { data: { quotas: { max_topics: 7 } } });
  await signIn(page, admin.username, admin.password);
  await page.goto("/tenants");
  const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: s.doomed }) });
  await row.getByRole("button", { name: "Edit quotas" }).click();
  const quotas = page.getByRole("form", { name: `Quotas of ${s.doomed}` });
  await quotas.getByLabel("Max topics").fill("lots");
  await quotas.getByRole("button", { name: "Save quotas" }).click();
  await expect(quotas.getByRole("alert")).toContainText('"lots" is not a whole number');
  const tenant = await (await platform.get(`/api/tenants/${s.doomed}`)).json();
  expect(tenant.quotas.max_topics).toBe(7);
  await platform.dispose();
});

test("bulk actions: a metadata filter reaches the job as an object, and a selection says what it did", async ({
  page,
}) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/orders");
  const filters = page.getByRole("form", { name: "Filter messages" });
  await filters.getByPlaceholder('{"region": "eu"}').fill('{"region":"eu"}');
  await filters.getByRole("button", { name: "Apply" }).click();
  // the bulk actions follow the filter once the page has taken it in
  await expect(page.getByText("Everything matching the current filter:")).toBeVisible();
  await page.getByRole("button", { name: "Retry all" }).click();
  const confirm = page.getByRole("dialog", { name: /Retry every message matching the filter/ });
  await expect(confirm).toContainText('metadata containing {"region":"eu"}');
  await confirm.getByRole("button", { name: "Retry all" }).click();
  await expect(page.getByRole("status").filter({ hasText: /retry (done|in progress)/ })).toBeVisible();
  await expect(page.getByRole("alert")).toHaveCount(0);
  await page.goto("/"); // the job's card went with the page; its outcome stays listed
  await page.getByRole("link", { name: "orders", exact: true }).click();
  await page.getByText(/Recent bulk jobs on orders \(/).click();
  await expect(page.getByRole("table", { name: "Recent bulk jobs on orders" })).toContainText("retry");

  await page.goto("/topics/orders?status=pending");
  await page
    .getByLabel(/^Select [0-9a-f]{8}/)
    .first()
    .check();
  await page
    .getByLabel(/^Select [0-9a-f]{8}/)
    .nth(1)
    .check();
  await page.getByRole("button", { name: "Retry selected" }).click();
  await page
    .getByRole("dialog", { name: "Retry 2 messages?" })
    .getByRole("button", { name: "Retry" })
    .click();
  await expect(page.getByRole("status").filter({ hasText: "Retry: 0 done, 2 skipped" })).toContainText(
    "2 × invalid_request",
  );
});

test("the overview chart keeps its width", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  const table = page.getByRole("table", { name: /Topics/ });
  await page.getByLabel("Filter topics").fill("orders");
  await table.getByRole("button", { name: "Chart" }).first().click();
  await expect(page.getByRole("img", { name: /orders, last hour/ })).toBeVisible();
  const before = (await table.boundingBox())?.width ?? 0;
  await page.waitForTimeout(2000); // it grew by hundreds of pixels a second, for ever
  const after = (await table.boundingBox())?.width ?? 0;
  expect(Math.abs(after - before)).toBeLessThan(2);
  expect(after).toBeLessThanOrEqual(1280);
});

test("the last tenant admin cannot demote itself; role changes are confirmed", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/users");
  const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: s.owner }) });
  await row.getByLabel(`Role of ${s.owner}`).selectOption("member");
  const dialog = page.getByRole("dialog", { name: `Make ${s.owner} a member?` });
  await expect(dialog).toContainText("This is you");
  await dialog.getByRole("button", { name: "Make member" }).click();
  await expect(dialog.getByRole("alert")).toContainText("last_admin");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(row.getByLabel(`Role of ${s.owner}`)).toHaveValue("tenant_admin");
});

test("a dead-letter topic's configuration is shown, not edited", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/orders.dlq/config");
  await expect(page.getByRole("note")).toContainText("is a dead-letter topic");
  await expect(page.getByLabel("Max retries")).toBeDisabled();
  await expect(page.getByRole("button", { name: "Save" })).toHaveCount(0);
});

test("the drawer: attempts, a link of its own, and no Retry for a pending message", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/orders.dlq");
  const table = page.getByRole("table", { name: "Messages of orders.dlq" });
  await expect(table.locator("tbody tr").first()).toContainText("card declined"); // the last error, previewed
  await expect(table.locator("tbody tr").first()).toContainText('{ "order":'); // the payload, previewed
  await page.getByLabel("Dense rows").check();
  await expect(table).toHaveClass(/dense/);
  await page.getByLabel("Dense rows").uncheck();
  await page
    .getByRole("table", { name: "Messages of orders.dlq" })
    .locator("tbody tr")
    .first()
    .getByRole("button")
    .click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  const attempts = drawer.getByRole("table", { name: /Deliveries of this message/ });
  await expect(attempts.getByRole("row")).toHaveCount(2); // a header, one delivery
  await expect(attempts).toContainText("dead lettered");
  await expect(attempts).toContainText("card declined");
  await expect(attempts).toContainText("admin");
  expect(new URL(page.url()).searchParams.get("message")).toMatch(/^[0-9a-f-]{36}$/);
  await page.reload(); // a pasted link opens the same message
  await expect(page.getByRole("dialog", { name: "Message" })).toBeVisible();
  await expectAccessible(page);
  await screenshot(page, "drawer");

  await page.goto("/topics/orders?status=pending");
  await page
    .getByRole("table", { name: "Messages of orders" })
    .locator("tbody tr")
    .first()
    .getByRole("button")
    .click();
  const pending = page.getByRole("dialog", { name: "Message" });
  await expect(pending.getByText("Not delivered yet.")).toBeVisible();
  await expect(pending.getByRole("button", { name: /Retry|Deliver now/ })).toHaveCount(0);
  await expect(pending.getByText(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/).first()).toBeVisible(); // one format, zone said
});

test("the audit trail and the tenant dashboard", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await expect(page.getByRole("region", { name: "All topics at a glance" })).toBeVisible();
  await page
    .getByRole("region", { name: "All topics at a glance" })
    .getByRole("button", { name: "24 hours" })
    .click();
  await expect(page.getByRole("img", { name: /All topics, last 24 hours/ })).toBeVisible();
  await page.getByRole("link", { name: "Audit" }).click();
  const table = page.getByRole("table", { name: /Audit entries/ });
  await expect(table).toContainText("topic_config.update");
  await expect(table).toContainText("user.create");
  await page.getByLabel("Action").fill("topic_config.");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/action=topic_config/);
  await expect(table.locator("tbody tr code").first()).toHaveText(/^topic_config\./);
  await expect(table.getByText(/^user\./)).toHaveCount(0);
  await expectAccessible(page);
  await screenshot(page, "audit");
});

test("deleting the tenant being looked at leaves the switcher and the pages agreeing", async ({ page }) => {
  const slug = `gone-${Date.now().toString(36)}`;
  const platform = await adminApi();
  await platform.post("/api/tenants", { data: { slug, name: "Gone" } });
  await signIn(page, admin.username, admin.password);
  await page.getByLabel("Tenant", { exact: true }).selectOption(slug);
  await page.goto("/tenants");
  const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: slug }) });
  await row.getByRole("button", { name: "Delete…" }).click();
  await page
    .getByRole("dialog", { name: `Delete tenant ${slug}?` })
    .getByRole("button", { name: "Delete" })
    .click();
  await expect(row).toBeHidden();
  await expect(page.getByLabel("Tenant", { exact: true })).not.toHaveValue(slug);
  await page.goto("/");
  await expect(page.getByRole("heading", { name: "Choose a tenant" })).toBeVisible();
  await platform.dispose();
});

test("paging: the total is shown, and live refresh does not fetch every loaded page again", async ({
  page,
}) => {
  await signIn(page, s.owner, PASSWORD);
  await page.getByLabel("Live refresh").selectOption("2");
  await page.goto("/topics/orders");
  const rows = page.getByRole("table", { name: "Messages of orders" }).locator("tbody tr");
  await expect(rows).toHaveCount(50);
  await expect(page.getByText(/50 shown of \d+ in the topic/)).toBeVisible();
  await page.getByRole("button", { name: "Load more" }).click();
  await expect(rows).toHaveCount(100);
  const fetched: string[] = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/topics/orders/messages")) fetched.push(r.url());
  });
  await page.waitForTimeout(5000); // two and a half refresh intervals
  expect(fetched).toEqual([]); // it re-fetched both pages every 2 s
  await page.getByRole("button", { name: "Back to the first page" }).click();
  await expect(rows).toHaveCount(50);
  await page.getByLabel("Live refresh").selectOption("5");
});

test("a long tenant name fits a phone and leaves the Tenants table's actions in view", async ({ page }) => {
  const slug = `long-${Date.now().toString(36)}-for-the-switcher-that-goes-on-and-on`;
  const platform = await adminApi();
  await platform.post("/api/tenants", {
    data: { slug, name: "A tenant with a very long name indeed, longer than any phone is wide" },
  });
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await signIn(page, admin.username, admin.password);
    await page.getByLabel("Tenant", { exact: true }).selectOption(slug);
    await expect(page.getByRole("heading", { name: "Topics", exact: true })).toBeVisible();
    for (const path of ["/", "/tenants"]) {
      await page.goto(path);
      await expect(page.getByRole("heading").first()).toBeVisible();
      const overflow = await page.evaluate(() => document.scrollingElement?.scrollWidth ?? 0);
      expect(overflow, `${path} at ${width} px`).toBeLessThanOrEqual(width);
    }
    if (width === 1280) {
      const row = page
        .getByRole("row")
        .filter({ has: page.getByRole("rowheader", { name: new RegExp(slug) }) });
      const button = row.getByRole("button", { name: "Delete…" });
      const box = await button.boundingBox();
      expect((box?.x ?? 9999) + (box?.width ?? 0)).toBeLessThanOrEqual(1280); // it was scrolled out of view
    }
    await page.getByLabel("Tenant", { exact: true }).selectOption("");
  }
  await platform.delete(`/api/tenants/${slug}`);
  await platform.dispose();
});

test("jump to newest / oldest: a backlog read from its other end, kept in the URL", async ({ page }) => {
  const api = await adminApi(s.tenant);
  const topic = `backlog-${Date.now().toString(36)}`;
  const messages = Array.from({ length: 60 }, (_, n) => ({
    payload: Buffer.from(`m${n}`).toString("base64"),
  }));
  await api.post("/api/messages/batch", { data: { topic, messages } });
  await api.post("/api/messages", { data: { topic, payload: Buffer.from("the-newest").toString("base64") } });
  await signIn(page, s.owner, PASSWORD);
  await page.goto(`/topics/${topic}?status=pending`);
  const rows = page.getByRole("table", { name: `Messages of ${topic}` }).locator("tbody tr");
  await expect(rows.first()).toContainText("m0");
  await page.getByRole("button", { name: "Newest", exact: true }).click();
  await expect(rows.first()).toContainText("the-newest"); // 61 messages: it was on the second page
  await expect(page).toHaveURL(/from=end/);
  await expect(page.getByText("The last to be delivered first")).toBeVisible();
  await page.reload();
  await expect(rows.first()).toContainText("the-newest");
  await page.getByRole("button", { name: "Next to deliver" }).click();
  await expect(rows.first()).toContainText("m0");
  await api.post(`/api/topics/${topic}/purge`);
  await api.dispose();
});

test("route loaders: pointing at a topic loads its messages before the click", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await expect(page.getByRole("heading", { name: "Topics", exact: true })).toBeVisible();
  const link = page.getByRole("link", { name: "orders", exact: true });
  await expect(link).toBeVisible();
  const loaded = page.waitForRequest((r) => r.url().includes("/api/topics/orders/messages"));
  await link.hover();
  await loaded; // the route's loader, on intent: before, the page fetched only once it rendered
  await link.click();
  await expect(
    page.getByRole("table", { name: "Messages of orders" }).locator("tbody tr").first(),
  ).toBeVisible();
});
