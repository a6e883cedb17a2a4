// A tenant admin runs the tenant's queues: every page and action of the topics, their configs, users and grants.
import { expect, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { adminApi, PASSWORD, seed } from "./seed";

const s = seed();

test.beforeEach(async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
});

test("overview: every topic with its depths, sortable, filterable, charted", async ({ page }) => {
  const table = page.getByRole("table", { name: /Topics/ });
  await expect(table.getByRole("rowheader", { name: "orders", exact: true })).toBeVisible();
  await expect(table.getByRole("rowheader", { name: "payments" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link")).toHaveText([
    "Topics",
    "Schedules",
    "Users",
    "Audit",
  ]);
  const orders = table
    .getByRole("row")
    .filter({ has: page.getByRole("link", { name: "orders", exact: true }) });
  await expect(orders.getByRole("cell").first()).toHaveText("117"); // pending
  await expect(orders.getByRole("cell").nth(5)).toHaveText("3"); // its DLQ
  await expectAccessible(page);
  await screenshot(page, "overview");

  await table.getByRole("button", { name: "Pending", exact: true }).click(); // most pending first
  await expect(table.getByRole("rowheader").first()).toHaveText("orders");
  await page.keyboard.press("/");
  await expect(page.locator("#search")).toBeFocused();
  await page.keyboard.type("pay");
  await expect(table.getByRole("rowheader")).toHaveText(["payments"]);
  await table.getByRole("button", { name: "Chart" }).click();
  await expect(page.getByRole("img", { name: /payments, last hour/ })).toBeVisible();
  await page.getByLabel("Filter topics").fill("");
  await page.getByRole("heading", { name: "Topics", exact: true }).click(); // shortcuts work outside fields
  await page.keyboard.press("?");
  await expect(page.getByRole("dialog", { name: "Keyboard shortcuts" })).toBeVisible();
  await page.keyboard.press("Escape");
  await page.getByLabel("Live refresh").selectOption("0");
  await expect(page.getByLabel("Live refresh")).toHaveValue("0");
});

test("topic: pause and resume, filters, keyset pages and the message drawer", async ({ page }) => {
  await page.getByRole("link", { name: "orders", exact: true }).click();
  await expect(page.getByRole("heading", { name: "orders" })).toBeVisible();
  await expect(page.locator("dl.counts")).toContainText("dead letters3"); // its DLQ, counted and linked
  await expect(page.locator("dl.counts").getByRole("link")).toHaveAttribute("href", "/topics/orders.dlq");
  await page.getByRole("button", { name: "Pause…" }).click();
  const pausing = page.getByRole("dialog", { name: "Pause orders?" });
  await expect(pausing).toContainText("Consumers get nothing from orders until it is resumed");
  await pausing.getByRole("button", { name: "Cancel" }).click();
  await expect(page.getByRole("heading", { name: "orders", exact: true })).toBeVisible(); // not paused
  await page.getByRole("button", { name: "Pause…" }).click();
  await pausing.getByRole("button", { name: "Pause" }).click();
  await expect(page.getByRole("heading", { name: "orders paused" })).toBeVisible();
  await page.getByRole("link", { name: "Topics" }).first().click();
  await expect(page.getByRole("rowheader", { name: "orders paused" })).toBeVisible();
  await page.getByRole("link", { name: "orders", exact: true }).click();
  await page.getByRole("button", { name: "Resume" }).click();
  await expect(page.getByRole("heading", { name: "orders", exact: true })).toBeVisible();

  const rows = page.getByRole("table", { name: "Messages of orders" }).locator("tbody tr");
  await expect(rows).toHaveCount(50);
  await screenshot(page, "topic");
  await page.getByRole("button", { name: "Load more" }).click();
  await expect(rows).toHaveCount(100);
  await expectAccessible(page);

  const filters = page.getByRole("form", { name: "Filter messages" });
  await filters.getByLabel("Key").fill("order-2");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/key=order-2/);
  await expect(rows).toHaveCount(1);
  const id =
    (await rows.first().getByRole("checkbox").getAttribute("aria-label"))?.slice("Select ".length) ?? "";
  await filters.getByLabel("Key").fill("");
  await filters.getByLabel("Id").fill(id);
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(rows).toHaveCount(1);
  await rows.getByRole("button").click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  await expect(drawer.getByText('"order": 2')).toBeVisible(); // pretty JSON
  await expect(drawer.getByText("Payload (JSON)")).toBeVisible();
  await expect(drawer.getByText('"region": "us"')).toBeVisible();
  await expect(drawer.getByText("0 / 0")).toBeVisible(); // retries n / max
  await drawer.getByRole("button", { name: "Copy", exact: true }).click();
  await expect(drawer.getByRole("button", { name: "Copied" })).toBeVisible();
  await expectAccessible(page);
  await screenshot(page, "message");
  await drawer.getByRole("button", { name: "Close" }).click();
  await filters.getByLabel("Id").fill("00000000-0000-0000-0000-000000000000");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByText("Nothing matches this filter.")).toBeVisible();

  await filters.getByLabel("Id").fill("");
  await filters.getByLabel("Metadata").fill('{"region": "us"}');
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(rows.first().getByRole("cell").nth(2)).toBeVisible();
  await expect(rows).toHaveCount(50);
  await filters.getByLabel("Metadata").fill("not json");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByRole("alert")).toContainText("metadata: not JSON");
  await expect(page.getByRole("alert")).toContainText(/invalid_request, request [0-9a-f-]+/);
});

test("topic: enqueue, then act on one message, a selection, and everything matching a filter", async ({
  page,
}) => {
  await page.goto("/topics/payments");
  await page.getByRole("button", { name: "failed" }).click();
  const rows = page.getByRole("table", { name: "Messages of payments" }).locator("tbody tr");
  await expect(rows).toHaveCount(6);
  await rows.first().getByRole("button").click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  await expect(drawer.getByText("card declined").first()).toBeVisible(); // last error
  await expect(drawer.getByText("Payload (text)")).toBeVisible();
  await drawer.getByRole("button", { name: "Retry" }).click();
  await expect(drawer).toBeHidden();
  await expect(rows).toHaveCount(5);

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
  await expect(rows).toHaveCount(3);

  await page.getByRole("button", { name: "Retry all" }).click();
  await page
    .getByRole("dialog", { name: /Retry every message/ })
    .getByRole("button", { name: "Retry all" })
    .click();
  await expect(page.getByRole("status").filter({ hasText: "retry done" })).toContainText("3 done");
  await expect(page.getByText("No messages here")).toBeVisible();

  await page.getByRole("button", { name: "All", exact: true }).click();
  await page.getByRole("button", { name: "Enqueue…" }).click();
  const form = page.getByRole("form", { name: "Enqueue into payments" });
  await form.getByLabel("Payload", { exact: true }).fill("{not json");
  await form.getByRole("button", { name: "Enqueue" }).click();
  await expect(form.getByText(/^Not JSON/)).toBeVisible();
  await form.getByLabel("text").check();
  await form.getByLabel("Payload", { exact: true }).fill("refund 42");
  await form.getByLabel("Key", { exact: true }).fill("refund-42");
  await form.getByRole("button", { name: "Add metadata" }).click();
  await form.getByLabel("Metadata name 1").fill("source");
  await form.getByLabel("Metadata value 1").fill("console");
  await form.getByLabel("Priority (0-9)").fill("7");
  await form.getByRole("button", { name: "Enqueue" }).click();
  await expect(form.getByRole("status")).toContainText("Enqueued");
  await expectAccessible(page);
  await form.getByLabel("Key", { exact: true }).fill("k".repeat(600));
  await form.getByRole("button", { name: "Enqueue" }).click();
  // The API's refusal: at its field, and in full with its request id.
  await expect(form.getByRole("alert").filter({ hasNotText: "request" })).toHaveText(
    "must be at most 512 characters",
  );
  await expect(form.getByRole("alert").filter({ hasText: "request" })).toContainText("invalid_request");
  await form.getByLabel("Key", { exact: true }).fill("");

  const filters = page.getByRole("form", { name: "Filter messages" });
  await filters.getByLabel("Key").fill("refund-42");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText("7");
  await page.getByLabel("Key to delete").fill("refund-42");
  await page.getByRole("button", { name: "Delete by key" }).click();
  await page
    .getByRole("dialog", { name: /Delete the messages with key/ })
    .getByRole("button", { name: "Delete by key" })
    .click();
  await expect(page.getByText("No messages here")).toBeVisible();

  await page.goto("/topics/payments");
  await page.getByLabel("Purge status").selectOption("pending");
  await page.getByRole("button", { name: "Purge…" }).click();
  const purge = page.getByRole("dialog", { name: "Purge 6 pending messages?" });
  await expect(purge).toContainText("deletes 6 pending messages of payments");
  await purge.getByRole("button", { name: "Purge 6" }).click();
  await expect(page.getByText("No messages here")).toBeVisible();
});

test("DLQ: requeue a selection and everything; delete what is left", async ({ page }) => {
  await page.goto("/topics/orders.dlq");
  const rows = page.getByRole("table", { name: "Messages of orders.dlq" }).locator("tbody tr");
  await expect(rows).toHaveCount(3);
  await rows.first().getByRole("button").click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  await expect(drawer.getByText("Original topic")).toBeVisible();
  await drawer.getByRole("button", { name: "Requeue to orders" }).click();
  await expect(rows).toHaveCount(2);
  await page
    .getByLabel(/^Select [0-9a-f]{8}/)
    .first()
    .check();
  await page.getByRole("button", { name: "Delete selected" }).click();
  await page
    .getByRole("dialog", { name: "Delete 1 message?" })
    .getByRole("button", { name: "Delete" })
    .click();
  await expect(rows).toHaveCount(1);
  await page.getByRole("button", { name: "Requeue all" }).click();
  await page
    .getByRole("dialog", { name: /Requeue all \d+ messages? of orders\.dlq/ })
    .getByRole("button", { name: "Requeue all" })
    .click();
  await expect(page.getByRole("status").filter({ hasText: "requeue done" })).toContainText("1 done");
  await expect(page.getByText("No messages here")).toBeVisible();
});

test("topic configuration: values in force, overrides, the API's errors at their field, reset", async ({
  page,
}) => {
  await page.goto("/topics/orders/config");
  const form = page.getByRole("form", { name: "Topic configuration" });
  await expect(form.getByLabel("Max retries")).toHaveValue("0");
  await expect(form.getByText(/In force: 0 \(override; the default is 3\)/)).toBeVisible();
  await expect(form.getByText(/How long a lease lasts\. In force: 30 \(global default\)/)).toBeVisible();
  await expect(form.getByLabel("Visibility timeout (s)")).toHaveAttribute(
    "placeholder",
    "global default: 30",
  );
  await expectAccessible(page);
  await screenshot(page, "config");
  await form.getByLabel("Visibility timeout (s)").fill("0");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByLabel("Visibility timeout (s)")).toHaveAttribute("aria-invalid", "true");
  await expect(form.getByRole("alert")).toBeVisible();
  await form.getByLabel("Visibility timeout (s)").fill("45");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByRole("status")).toContainText("Saved");
  await page.reload();
  await expect(form.getByText(/In force: 45 \(override; the default is 30\)/)).toBeVisible();
  await form.getByRole("button", { name: "Reset to defaults" }).click();
  const resetDialog = page.getByRole("dialog", { name: /Reset orders/ });
  await resetDialog.getByRole("button", { name: "Reset" }).click();
  // the dialog closes once the server confirmed the reset: a reload before that could cancel it
  await expect(resetDialog).toBeHidden();
  await page.reload();
  await expect(
    form.getByText(/Attempts before the DLQ \(or failed\)\. In force: 3 \(global default\)/),
  ).toBeVisible();
  await expect(form.getByRole("button", { name: "Reset to defaults" })).toBeHidden();
});

test("max in flight: set in the form, bounds checked at the field, then in flight N / limit on the topic and its groups", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  const payload = (text: string) => Buffer.from(text).toString("base64");
  const calls = [1, 2, 3, 4, 5].map((i) => ({ payload: payload(`call ${i}`) }));
  expect(
    (await api.post("/api/messages/batch", { data: { topic: "partner-calls", messages: calls } })).ok(),
  ).toBe(true);
  await page.goto("/topics/partner-calls/config");
  const form = page.getByRole("form", { name: "Topic configuration" });
  const field = form.getByLabel("Max in flight");
  await expect(form.getByText(/empty = no limit\. In force: no limit \(global default\)/)).toBeVisible();
  await field.fill("0");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByRole("alert")).toHaveText("0 is out of range: 1 to 1,000,000");
  await expect(field).toHaveAttribute("aria-invalid", "true");
  await expect(form.getByRole("status")).toHaveCount(0); // nothing saved: the topic still has no config
  expect((await api.get("/api/topic-configs/partner-calls")).status()).toBe(404);
  await field.fill("2");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByRole("status")).toContainText("Saved");
  expect((await (await api.get("/api/topic-configs/partner-calls")).json()).max_inflight).toBe(2);
  await page.reload();
  await expect(form.getByText(/In force: 2 \(override; the default is no limit\)/)).toBeVisible();

  // The limit at work: a dequeue of 5 leases 2, and the topic's page says so beside its counts.
  const taken = await (
    await api.post("/api/messages/dequeue", { data: { topic: "partner-calls", count: 5 } })
  ).json();
  expect(taken.messages).toHaveLength(2);
  await page.goto("/topics/partner-calls");
  await expect(page.locator("dl.counts")).toContainText("in flight2 / 2");
  await expectAccessible(page);

  // With consumer groups, the limit is each group's: each group's row says its own, the counts the limit once.
  await api.put("/api/topic-configs/relayed", { data: { max_inflight: 1 } });
  for (const name of ["billing", "shipping"]) {
    await api.post("/api/topics/relayed/consumer-groups", { data: { consumer_group: name } });
  }
  await api.post("/api/messages/batch", { data: { topic: "relayed", messages: calls.slice(0, 3) } });
  const billing = await (
    await api.post("/api/messages/dequeue", {
      data: { topic: "relayed", consumer_group: "billing", count: 3 },
    })
  ).json();
  expect(billing.messages).toHaveLength(1);
  await page.goto("/topics/relayed");
  await expect(page.locator("dl.counts")).toContainText("in flightmax 1 per group");
  const groups = page.getByRole("table", { name: "Consumer groups of relayed" });
  await expect(groups.getByRole("columnheader", { name: "Processing / max" })).toBeVisible();
  const row = (group: string) =>
    groups.getByRole("row").filter({ has: page.getByRole("rowheader", { name: group }) });
  // Cells after the group's name: start, pending, processing, ...
  await expect(row("billing").getByRole("cell").nth(2)).toHaveText("1 / 1");
  await expect(row("shipping").getByRole("cell").nth(2)).toHaveText("0 / 1");
  await expectAccessible(page);
  await api.dispose();
});

test("users and grants: create, role, password, grants, delete, and a refusal shown with its request id", async ({
  page,
}) => {
  await page.getByRole("link", { name: "Users" }).click();
  const create = page.getByRole("form", { name: "Create a user" });
  await create.getByLabel("Username").fill("temp");
  await create.getByLabel("Password").fill("short");
  await create.getByRole("button", { name: "Create" }).click();
  await expect(create.getByRole("alert")).toBeVisible(); // too short, at its field
  await create.getByLabel("Password").fill(PASSWORD);
  await create.getByRole("button", { name: "Create" }).click();
  const name = `temp@${s.tenant}`;
  const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name }) });
  await expect(row).toBeVisible();
  await expectAccessible(page);
  await screenshot(page, "users");

  await create.getByLabel("Username").fill("temp");
  await create.getByLabel("Password").fill(PASSWORD);
  await create.getByRole("button", { name: "Create" }).click();
  await expect(create.getByRole("alert")).toContainText(/request [0-9a-f-]+/); // taken: the API's 409

  await row.getByRole("button", { name: "Grants" }).click();
  const grants = page.getByRole("form", { name: `Add a grant to ${name}` });
  await expect(page.getByText("No grants: this member can do nothing yet.")).toBeVisible();
  await grants.getByLabel("Action").selectOption("consume");
  await grants.getByLabel("Topic pattern").fill("payments");
  await grants.getByRole("button", { name: "Add grant" }).click();
  await expect(page.getByRole("button", { name: "Remove consume on payments" })).toBeVisible();
  await page.getByRole("button", { name: "Remove consume on payments" }).click();
  const removing = page.getByRole("dialog", { name: `Remove consume on payments from ${name}?` });
  await removing.getByRole("button", { name: "Cancel" }).click(); // a removal is confirmed, and can be called off
  await expect(page.getByRole("button", { name: "Remove consume on payments" })).toBeVisible();
  await page.getByRole("button", { name: "Remove consume on payments" }).click();
  await removing.getByRole("button", { name: "Remove grant" }).click();
  await expect(page.getByText("No grants: this member can do nothing yet.")).toBeVisible();
  await grants.getByLabel("Action").selectOption("read");
  await expect(grants.getByLabel("Consumer group")).toBeHidden(); // only a consume grant names one
  await grants.getByLabel("Action").selectOption("consume");
  await grants.getByLabel("Topic pattern").fill("grantees");
  await grants.getByLabel("Consumer group").fill("biling"); // mistyped: no topic of the pattern has it
  await grants.getByRole("button", { name: "Add grant" }).click();
  await expect(grants.getByRole("alert")).toContainText("has a consumer group 'biling'");
  await expect(page.getByText("No grants: this member can do nothing yet.")).toBeVisible();
  const api = await adminApi(s.tenant);
  expect(
    (await api.post("/api/topics/grantees/consumer-groups", { data: { consumer_group: "billing" } })).ok(),
  ).toBe(true);
  await grants.getByLabel("Consumer group").fill("billing");
  await grants.getByRole("button", { name: "Add grant" }).click();
  await expect(page.getByRole("listitem").filter({ hasText: "as billing" })).toHaveText(
    /consume\s*grantees as billing/,
  );
  await expect(grants.getByRole("alert")).toHaveCount(0);
  await page.getByRole("button", { name: "Remove consume on grantees as billing" }).click();
  await page
    .getByRole("dialog", { name: `Remove consume on grantees as billing from ${name}?` })
    .getByRole("button", { name: "Remove grant" })
    .click();
  await expect(page.getByText("No grants: this member can do nothing yet.")).toBeVisible();
  expect((await api.delete("/api/topics/grantees/consumer-groups/billing")).ok()).toBe(true);

  await row.getByLabel(`New password for ${name}`).fill("another-password-456");
  await row.getByRole("button", { name: "Set password" }).click();
  await page
    .getByRole("dialog", { name: `Set a new password for ${name}?` })
    .getByRole("button", { name: "Set password" })
    .click();
  await expect(page.getByRole("status")).toContainText(`New password set for ${name}`);
  await expect(row.getByLabel(`New password for ${name}`)).toHaveValue("");
  await row.getByLabel(`Role of ${name}`).selectOption("tenant_admin");
  await page
    .getByRole("dialog", { name: `Make ${name} a tenant admin?` })
    .getByRole("button", { name: "Make tenant admin" })
    .click();
  await expect(row.getByRole("button", { name: "Grants" })).toBeHidden();
  await row.getByRole("button", { name: "Delete…" }).click();
  await page
    .getByRole("dialog", { name: `Delete ${name}?` })
    .getByRole("button", { name: "Delete" })
    .click();
  await expect(row).toBeHidden();
});

test("consumer groups: create two, what each owes, one group's dead letter requeued to it, delete one", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  await api.put("/api/topic-configs/fanout", { data: { max_retries: 1 } });
  await page.getByLabel("Live refresh").selectOption("2");
  await page.goto("/topics/fanout");
  const section = page.getByRole("region", { name: "Consumer groups", exact: true });
  await expect(section.getByText("No consumer groups")).toBeVisible();
  await expectAccessible(page);

  await section.getByRole("button", { name: "Create a group…" }).click();
  const create = section.getByRole("form", { name: "Create a consumer group on fanout" });
  await create.getByLabel("Group name").fill("bad name!");
  await create.getByRole("button", { name: "Create group" }).click();
  await expect(create.getByRole("alert")).toContainText("must be a consumer group name"); // the API's 400, at its field
  await create.getByLabel("Group name").fill("billing");
  await create.getByRole("button", { name: "Create group" }).click();
  const groups = section.getByRole("table", { name: "Consumer groups of fanout" });
  await expect(groups.getByRole("rowheader", { name: "billing" })).toBeVisible();
  await create.getByLabel("Group name").fill("billing");
  await create.getByRole("button", { name: "Create group" }).click();
  await expect(create.getByRole("alert")).toContainText("already has a consumer group"); // 409 group_exists
  await create.getByLabel("Group name").fill("shipping");
  await create.getByLabel(/^earliest/).check();
  await create.getByRole("button", { name: "Create group" }).click();
  await expect(groups.getByRole("rowheader")).toHaveText(["billing", "shipping"]);
  await expectAccessible(page);

  const payload = (text: string) => Buffer.from(text).toString("base64");
  const parcels = [1, 2, 3].map((i) => ({ payload: payload(`parcel ${i}`) }));
  await api.post("/api/messages/batch", { data: { topic: "fanout", messages: parcels } });
  const row = (group: string) =>
    groups.getByRole("row").filter({ has: page.getByRole("rowheader", { name: group }) });
  // Cells after the group's name: start, pending, processing, oldest pending, dead letters, created.
  await expect(row("billing").getByRole("cell").nth(1)).toHaveText("3");
  await expect(row("shipping").getByRole("cell").nth(1)).toHaveText("3");

  // Each group takes the first parcel and gives up on it (max_retries 1): a dead letter of its own in fanout.dlq.
  for (const group of ["billing", "shipping"]) {
    const taken = await (
      await api.post("/api/messages/dequeue", { data: { topic: "fanout", consumer_group: group } })
    ).json();
    const m = taken.messages[0];
    const nack = { consumer_group: group, receipt: m.receipt, error: `${group} refused it` };
    expect((await api.post(`/api/messages/${m.id}/nack`, { data: nack })).ok()).toBe(true);
  }
  await expect(row("billing").getByRole("cell").nth(1)).toHaveText("2");
  await expect(row("billing").getByRole("cell").nth(4)).toHaveText("1 dead letters of billing");

  await row("billing").getByRole("link", { name: "1 dead letters of billing" }).click();
  await expect(page).toHaveURL(/\/topics\/fanout\.dlq\?consumer_group=billing$/);
  const chip = page.getByRole("button", { name: "Remove the filter consumer group: billing" });
  await expect(chip).toBeVisible();
  const dead = page.getByRole("table", { name: "Messages of fanout.dlq" });
  await expect(dead.locator("tbody tr")).toHaveCount(1);
  await expect(dead.getByRole("columnheader", { name: "Consumer group" })).toBeVisible();
  await expect(dead.locator("tbody tr")).toContainText("billing refused it");
  await dead.locator("tbody tr").getByRole("button").click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  await expect(drawer.getByRole("definition").filter({ hasText: /^billing$/ })).toBeVisible();
  await expect(drawer.getByRole("button", { name: "Requeue to fanout (for billing only)" })).toBeVisible();
  await drawer.getByRole("button", { name: "Close" }).click();
  await expectAccessible(page);

  await page.getByRole("button", { name: "Requeue all" }).click();
  const confirm = page.getByRole("dialog", { name: /Requeue every message matching the filter/ });
  await expect(confirm).toContainText("consumer group “billing”");
  await confirm.getByRole("button", { name: "Requeue all" }).click();
  await expect(page.getByRole("status").filter({ hasText: "requeue done" })).toContainText("1 done");
  await expect(page.getByText("No messages here")).toBeVisible();
  await chip.click(); // the job carried the filter: shipping's dead letter is still there
  await expect(page).not.toHaveURL(/consumer_group/);
  await expect(dead.locator("tbody tr")).toHaveCount(1);
  await expect(dead.locator("tbody tr")).toContainText("shipping refused it");

  // Requeued to billing only: billing owes 3 again, shipping still 2 and its dead letter.
  await page.goto("/topics/fanout");
  await expect(row("billing").getByRole("cell").nth(1)).toHaveText("3");
  await expect(row("billing").getByRole("cell").nth(4)).toHaveText("0 dead letters of billing");
  await expect(row("shipping").getByRole("cell").nth(1)).toHaveText("2");
  await expect(row("shipping").getByRole("cell").nth(4)).toHaveText("1 dead letters of shipping");
  const messages = page.getByRole("table", { name: "Messages of fanout" });
  await messages.locator("tbody tr").filter({ hasText: "parcel 2" }).getByRole("button").click();
  const deliveries = drawer.getByRole("table", { name: "Deliveries by consumer group" });
  await expect(deliveries.getByRole("rowheader")).toHaveText(["billing", "shipping"]);
  await expectAccessible(page);
  await drawer.getByRole("button", { name: "Close" }).click();

  await row("shipping").getByRole("button", { name: "Delete…" }).click();
  const sure = page.getByRole("dialog", { name: "Delete consumer group shipping?" });
  await expect(sure).toContainText("(2 pending, 0 processing) is released");
  await sure.getByRole("button", { name: "Delete group" }).click();
  await expect(section.getByRole("status")).toHaveText("Deleted consumer group shipping.");
  await expect(groups.getByRole("rowheader")).toHaveText(["billing"]);
  await api.dispose();
});

test("history: a topic made replayable, its log filtered and opened, a range replayed past a refusal, and trimmed", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  await page.goto("/topics/ledger?view=history");
  await expect(page.getByText("ledger keeps no history")).toBeVisible();
  await page.getByRole("link", { name: "Make ledger replayable in its configuration" }).click();
  const config = page.getByRole("form", { name: "Topic configuration" });
  await expect(config.getByText(/none = kept until trimmed\. In force: kept until trimmed/)).toBeVisible();
  await config.getByLabel("Replayable").selectOption("true");
  await config.getByLabel("Max depth").fill("3"); // the replay below is refused midway
  await config.getByRole("button", { name: "Save" }).click();
  await expect(config.getByRole("status")).toContainText("Saved");

  // Four messages, each acked on its own (a replay keeps the entries of one ack together), with keys of their own
  // (a replayed entry whose key a pending message holds updates that message instead of adding one).
  const since = new Date(Date.now() - 1000).toISOString();
  for (const n of [1, 2, 3, 4]) {
    const payload = Buffer.from(JSON.stringify({ entry: n })).toString("base64");
    const key = `entry-${n}`;
    expect((await api.post("/api/messages", { data: { topic: "ledger", payload, key } })).ok()).toBe(true);
    const taken = await (await api.post("/api/messages/dequeue", { data: { topic: "ledger" } })).json();
    const m = taken.messages[0];
    expect((await api.post(`/api/messages/${m.id}/ack`, { data: { receipt: m.receipt } })).ok()).toBe(true);
  }
  const acked = new Date().toISOString();

  await page.goto("/topics/ledger");
  await page.getByRole("button", { name: "History", exact: true }).click();
  await expect(page).toHaveURL(/view=history/);
  const log = page.getByRole("table", { name: "Message log of ledger" }).locator("tbody tr");
  await expect(log).toHaveCount(4);
  const filters = page.getByRole("form", { name: "Filter the message log" });
  await filters.getByLabel("Acked from (UTC)").fill("yesterday-ish");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(filters.getByRole("alert")).toContainText("is not a time");
  await filters.getByLabel("Acked from (UTC)").fill(since);
  await filters.getByLabel("Key").fill("entry-3");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/log_key=entry-3/);
  await expect(log).toHaveCount(1);
  await log.first().getByRole("button").click();
  const drawer = page.getByRole("dialog", { name: "Logged message" });
  await expect(drawer.getByText('"entry": 3')).toBeVisible();
  await expect(drawer.getByText("Payload (JSON)")).toBeVisible();
  await expectAccessible(page);
  await drawer.getByRole("button", { name: "Close" }).click();

  // Replay all four: max depth 3 refuses the fourth; Continue is refused again while the topic is full, then
  // going on by itself after Retry-After finishes once there is room.
  await page.getByRole("button", { name: "Replay…" }).click();
  const replay = page.getByRole("form", { name: "Replay messages of ledger" });
  await expect(replay.getByLabel("Only the key")).toHaveValue("entry-3"); // the filter's range, to start from
  await replay.getByLabel("Only the key").fill("");
  await replay.getByLabel("Before (UTC)").fill(acked);
  await replay.getByRole("button", { name: "Replay the range…" }).click();
  const confirm = page.getByRole("dialog", { name: "Replay 4 entries of ledger?" });
  await expect(confirm).toContainText("enqueued into ledger again as a new message");
  await confirm.getByRole("button", { name: "Replay" }).click();
  const progress = page.getByRole("region", { name: "Replay", exact: true });
  await expect(progress.getByRole("status")).toHaveText(/^Paused after 3 of 4 replayed.*queue_full/);
  // The resume point to its last digit (retyped to the second, it would replay that second twice).
  await expect(progress.locator("code")).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3,6} UTC$/);
  await expectAccessible(page);
  // Going elsewhere (to raise max_depth) and back finds the paused replay where it stopped, with Continue.
  await page.getByRole("link", { name: "Configuration" }).click();
  await expect(page.getByRole("form", { name: "Topic configuration" })).toBeVisible();
  await page.goBack();
  await expect(progress.getByRole("status")).toHaveText(/^Paused after 3 of 4 replayed.*queue_full/);
  await progress.getByRole("button", { name: "Continue", exact: true }).click();
  await expect(progress.getByRole("status")).toHaveText(/^Paused after 3 of 4 replayed/);
  await progress.getByLabel(/Continue by itself/).check();
  const room = { replayable: true, max_depth: 10 };
  expect((await api.put("/api/topic-configs/ledger", { data: room })).ok()).toBe(true);
  await expect(progress.getByRole("status")).toHaveText(
    "Replay done: 4 messages enqueued again into ledger.",
  );
  // A new replay asks again before going on by itself: refused at once (the topic is full again), it waits.
  expect(
    (await api.put("/api/topic-configs/ledger", { data: { replayable: true, max_depth: 4 } })).ok(),
  ).toBe(true);
  await page.getByRole("button", { name: "Replay…" }).click();
  await replay.getByRole("button", { name: "Replay the range…" }).click(); // the filter's range: entry-3
  await page
    .getByRole("dialog", { name: "Replay 1 entry of ledger?" })
    .getByRole("button", { name: "Replay" })
    .click();
  await expect(progress.getByRole("status")).toHaveText(/^Paused after 0 of 1 replayed.*queue_full/);
  await expect(progress.getByLabel(/Continue by itself/)).not.toBeChecked();

  await page.getByRole("button", { name: "Messages", exact: true }).click();
  const messages = page.getByRole("table", { name: "Messages of ledger" }).locator("tbody tr");
  await expect(messages).toHaveCount(4);
  await expect(messages.filter({ hasText: "entry-3" })).toHaveCount(1);
  await expect(messages.first()).toContainText('"entry": 1');

  await page.getByRole("button", { name: "History", exact: true }).click();
  await page.getByRole("button", { name: "Trim before…" }).click();
  const trim = page.getByRole("form", { name: "Trim the message log of ledger" });
  await trim.getByLabel("Trim entries acked before (UTC)").fill(acked);
  await trim.getByRole("button", { name: "Trim…" }).click();
  const sure = page.getByRole("dialog", { name: "Trim 4 entries from the log of ledger?" });
  await sure.getByRole("button", { name: "Trim" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Trimmed" })).toHaveText(
    "Trimmed 4 entries from the message log of ledger.",
  );
  await expect(page.getByText("Nothing in the log here")).toBeVisible();
  await api.dispose();
});

test("history: a replay to one consumer group, past a refusal, reaches that group only", async ({ page }) => {
  const api = await adminApi(s.tenant);
  const config = { replayable: true, max_depth: 1 }; // the replay below is refused midway
  expect((await api.put("/api/topic-configs/relay", { data: config })).ok()).toBe(true);
  for (const group of ["billing", "shipping"]) {
    const made = await api.post("/api/topics/relay/consumer-groups", { data: { consumer_group: group } });
    expect(made.ok()).toBe(true);
  }
  // Two parcels, each acked by both groups (the last group's ack logs it), one after the other.
  for (const n of [1, 2]) {
    const payload = Buffer.from(`parcel ${n}`).toString("base64");
    expect((await api.post("/api/messages", { data: { topic: "relay", payload } })).ok()).toBe(true);
    for (const group of ["billing", "shipping"]) {
      const taken = await (
        await api.post("/api/messages/dequeue", { data: { topic: "relay", consumer_group: group } })
      ).json();
      const m = taken.messages[0];
      const ack = { receipt: m.receipt, consumer_group: group };
      expect((await api.post(`/api/messages/${m.id}/ack`, { data: ack })).ok()).toBe(true);
    }
  }

  await page.goto("/topics/relay?view=history");
  await expect(page.getByRole("table", { name: "Message log of relay" }).locator("tbody tr")).toHaveCount(2);
  await page.getByRole("button", { name: "Replay…" }).click();
  const replay = page.getByRole("form", { name: "Replay messages of relay" });
  const target = replay.getByRole("group", { name: "Deliver to" });
  await expect(target.getByLabel(/^Every consumer group/)).toBeChecked();
  await replay.getByRole("button", { name: "Replay the range…" }).click();
  const every = page.getByRole("dialog", { name: "Replay 2 entries of relay to every consumer group?" });
  await every.getByRole("button", { name: "Cancel" }).click();
  await target.getByLabel(/^One consumer group/).check();
  const group = target.getByRole("combobox", { name: "Consumer group" });
  await expect(group).toHaveValue("billing"); // the first, in creation order
  await group.selectOption("shipping");
  await expectAccessible(page);
  await replay.getByRole("button", { name: "Replay the range…" }).click();
  const confirm = page.getByRole("dialog", {
    name: "Replay 2 entries of relay to consumer group shipping only?",
  });
  await expect(confirm).toContainText("consumer group shipping receives it again");
  await confirm.getByRole("button", { name: "Replay" }).click();
  // max depth 1 takes the first; going on by itself once there is room must still replay to shipping only.
  const progress = page.getByRole("region", { name: "Replay", exact: true });
  await expect(progress.getByRole("status")).toHaveText(/^Paused after 1 of 2 replayed.*queue_full/);
  await expect(progress).toContainText("to consumer group shipping only");
  await progress.getByLabel(/Continue by itself/).check();
  expect((await api.put("/api/topic-configs/relay", { data: { replayable: true } })).ok()).toBe(true);
  await expect(progress.getByRole("status")).toHaveText(
    "Replay done: 2 messages enqueued again into relay, to consumer group shipping only.",
  );

  const take = async (group: string) => {
    const body = { topic: "relay", consumer_group: group, count: 10 };
    const taken = await (await api.post("/api/messages/dequeue", { data: body })).json();
    return (taken.messages as { payload: string }[]).map((m) => Buffer.from(m.payload, "base64").toString());
  };
  expect(await take("billing")).toEqual([]);
  expect(await take("shipping")).toEqual(["parcel 1", "parcel 2"]);
  await api.dispose();
});

test("history: consumer groups that could not be loaded are said in the replay form, not left out", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  expect((await api.put("/api/topic-configs/depot", { data: { replayable: true } })).ok()).toBe(true);
  const made = await api.post("/api/topics/depot/consumer-groups", { data: { consumer_group: "stock" } });
  expect(made.ok()).toBe(true);
  const payload = Buffer.from("crate").toString("base64");
  expect((await api.post("/api/messages", { data: { topic: "depot", payload } })).ok()).toBe(true);
  const taken = await (
    await api.post("/api/messages/dequeue", { data: { topic: "depot", consumer_group: "stock" } })
  ).json();
  const ack = { receipt: taken.messages[0].receipt, consumer_group: "stock" };
  expect((await api.post(`/api/messages/${taken.messages[0].id}/ack`, { data: ack })).ok()).toBe(true);

  const down = { code: "unavailable", error: "The database is not answering", details: null };
  await page.route("**/api/topics/depot/consumer-groups", (route) =>
    route.fulfill({ status: 503, json: down, headers: { "retry-after": "1" } }),
  );
  await page.getByLabel("Live refresh").selectOption("0"); // the groups are asked again only when told to
  await page.goto("/topics/depot?view=history");
  await page.getByRole("button", { name: "Replay…" }).click();
  const replay = page.getByRole("form", { name: "Replay messages of depot" });
  await expect(replay).toContainText(
    "The consumer groups of depot could not be loaded (unavailable): a replay from here goes to every consumer group depot has",
  );
  await expect(replay.getByRole("group", { name: "Deliver to" })).toBeHidden();
  await replay.getByRole("button", { name: "Replay the range…" }).click();
  const every = page.getByRole("dialog", { name: "Replay 1 entry of depot to every consumer group?" });
  await expect(every).toContainText("every consumer group receives it again");
  await every.getByRole("button", { name: "Cancel" }).click();
  await expectAccessible(page);

  const again = replay.getByRole("button", { name: "Load them again" });
  await expect(again).toBeEnabled(); // asked and refused, retries included
  await page.unroute("**/api/topics/depot/consumer-groups");
  await again.click();
  await expect(replay.getByRole("group", { name: "Deliver to" })).toBeVisible();
  await expect(replay).not.toContainText("could not be loaded");
  await api.dispose();
});

test("schema: added in the Schema tab, refused at its field, replaced, compared, tried, and enqueues checked", async ({
  page,
}) => {
  const v1 = {
    type: "object",
    required: ["order", "items"],
    properties: {
      order: { type: "integer", minimum: 1 },
      items: {
        type: "array",
        minItems: 1,
        items: {
          type: "object",
          required: ["sku", "qty"],
          properties: { sku: { type: "string", minLength: 3 }, qty: { type: "integer", minimum: 1 } },
        },
      },
      note: { type: "string" },
    },
  };
  // Backward-incompatible: a payload without a customer, which version 1 accepts, is refused.
  const v2 = {
    ...v1,
    required: ["order", "items", "customer"],
    properties: { ...v1.properties, customer: { type: "string" } },
  };

  await page.goto("/topics/shipments");
  await page.getByRole("button", { name: "Schema", exact: true }).click();
  await expect(page).toHaveURL(/view=schema/);
  const tab = page.getByRole("region", { name: "Schema", exact: true });
  await expect(tab.getByText("shipments has no schema")).toBeVisible();
  await tab.getByRole("button", { name: "Add a schema…" }).click();
  const add = page.getByRole("form", { name: "Add a schema to shipments" });
  await add.getByLabel("Format").selectOption("json_schema");
  const invalid = { type: "object", properties: { order: { type: "intege" } } };
  await add.getByLabel("Schema", { exact: true }).fill(JSON.stringify(invalid));
  await add.getByRole("button", { name: "Add the schema" }).click();
  await expect(add.getByRole("alert")).toContainText("not a valid JSON Schema (draft 2020-12)");
  await add.getByLabel("Schema", { exact: true }).fill(JSON.stringify(v1));
  await add.getByRole("button", { name: "Add the schema" }).click();
  await expect(tab.getByRole("status")).toContainText("Version 1 is in force");
  await expect(tab.locator("dl.facts")).toContainText("JSON Schema (draft 2020-12)");
  await expect(tab.locator("pre")).toContainText('"minItems": 1');

  await tab.getByRole("button", { name: "Replace…" }).click();
  const replace = page.getByRole("form", { name: "Replace the schema of shipments" });
  await expect(replace.getByLabel("Schema", { exact: true })).toHaveValue(JSON.stringify(v1, null, 2));
  const check = replace.getByLabel(/Check compatibility \(backward\)/);
  await expect(check).toBeChecked();
  await replace.getByLabel("Schema", { exact: true }).fill(JSON.stringify(v2));
  await replace.getByRole("button", { name: "Save as version 2" }).click();
  await expect(replace.getByRole("alert")).toContainText(
    "the new version would refuse messages version 1 accepts: at /required: newly required customer",
  );
  await expectAccessible(page);
  await check.uncheck();
  await replace.getByRole("button", { name: "Save as version 2" }).click();
  await expect(tab.getByRole("status")).toContainText("Version 2 is in force");
  await expect(tab.locator("dl.facts")).toContainText("2 (in force)");

  // Version 1 alone, then beside version 2.
  await tab.getByRole("combobox", { name: "Version", exact: true }).selectOption("1");
  await expect(tab.locator("dl.facts")).toContainText("1 (version 2 is in force)");
  await expect(tab.locator("pre")).not.toContainText("customer");
  await tab.getByRole("combobox", { name: "Compare with" }).selectOption("2");
  await expect(page).toHaveURL(/schema_version=1.*schema_compare=2/);
  const diff = tab.getByRole("region", { name: "Versions 1 and 2 of the schema of shipments" });
  await expect(tab.getByText(/^From version 1 to 2: \d+ lines? removed, \d+ lines added\.$/)).toBeVisible();
  await expect(diff.locator("del").first()).toHaveText('− "items"');
  await expect(diff.locator("ins").filter({ hasText: '"customer"' })).toHaveCount(2); // required, and properties
  await expectAccessible(page);
  await screenshot(page, "schema", tab);
  await page.reload(); // the versions shown are the URL's
  await expect(diff.locator("del").first()).toHaveText('− "items"');

  // A payload tried against the version in force, in the browser.
  const tryIt = tab.getByRole("form", { name: "Try a payload" });
  const payload = tryIt.getByLabel("Payload (JSON)");
  await payload.fill(JSON.stringify({ order: 1, items: [{ sku: "ab", qty: 1 }], customer: "c-1" }));
  await tryIt.getByRole("button", { name: "Check" }).click();
  await expect(tryIt.getByRole("alert")).toContainText("Does not fit schema version 2 at /items/0/sku:");
  await payload.fill(JSON.stringify({ order: 1, items: [{ sku: "abc", qty: 1 }], customer: "c-1" }));
  await tryIt.getByRole("button", { name: "Check" }).click();
  await expect(tryIt.getByRole("status")).toHaveText("Fits version 2.");

  // The console's own enqueues: the example the schema gives is accepted, a payload it refuses is named.
  await page.getByRole("button", { name: "Enqueue…" }).click();
  const enqueue = page.getByRole("form", { name: "Enqueue into shipments" });
  await enqueue.getByRole("button", { name: "Example from schema" }).click();
  const example = { order: 1, items: [{ sku: "xxx", qty: 1 }], customer: "" };
  await expect(enqueue.getByLabel("Payload", { exact: true })).toHaveValue(JSON.stringify(example, null, 2));
  await enqueue.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(enqueue.getByRole("status")).toContainText("Enqueued");
  const bad = { order: 0, items: [{ sku: "abc", qty: 1 }], customer: "c-1" };
  await enqueue.getByLabel("Payload", { exact: true }).fill(JSON.stringify(bad));
  await enqueue.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(enqueue.getByRole("alert").filter({ hasNotText: "request" })).toHaveText(
    "Does not fit schema version 2 at /order: 0 is less than the minimum of 1",
  );
  await expect(enqueue.getByRole("alert").filter({ hasText: "request" })).toContainText("schema_violation");
  await expectAccessible(page);
  await page.getByRole("button", { name: "Messages", exact: true }).click();
  await expect(page.getByRole("table", { name: "Messages of shipments" }).locator("tbody tr")).toHaveCount(1);

  await page.getByRole("button", { name: "Schema", exact: true }).click();
  await tab.getByRole("button", { name: "Delete schema…" }).click();
  const confirm = page.getByRole("dialog", { name: "Delete the schema of shipments?" });
  await expect(confirm).toContainText("versions 1 to 2");
  await confirm.getByRole("button", { name: "Delete schema" }).click();
  await expect(tab.getByText("shipments has no schema")).toBeVisible();
  await expect(enqueue.getByRole("button", { name: "Example from schema" })).toBeHidden();
});
