// Schedules (periodic messages): a tenant admin creates, previews, edits, turns off and on, and deletes them; a
// member reads those of the topics it may read; a tick the topic refused is flagged on its row. The workers of the server under test fire them.
import { expect, type Page, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { adminApi, PASSWORD, seed } from "./seed";

const s = seed();
const b64 = (text: string) => Buffer.from(text).toString("base64");

// A schedule every second into a topic that holds one message: its second tick is refused (queue_full). The topic
// has a JSON Schema, for the form's example.
test.beforeAll(async () => {
  const api = await adminApi(s.tenant);
  expect((await api.put("/api/topic-configs/capped", { data: { max_depth: 1 } })).ok()).toBe(true);
  const schema = { type: "object", required: ["n"], properties: { n: { type: "integer", minimum: 1 } } };
  const putSchema = await api.put("/api/topic-schemas/capped", {
    data: { format: "json_schema", schema_json: JSON.stringify(schema) },
  });
  expect(putSchema.ok(), await putSchema.text()).toBe(true);
  const put = await api.put("/api/schedules/overflow", {
    data: { topic: "capped", cron: "* * * * * *", payload: b64('{"n": 1}') },
  });
  expect(put.ok(), await put.text()).toBe(true);
  // once a year: a schedule of a topic the member reads
  const yearly = await api.put("/api/schedules/orders-yearly", {
    data: { topic: "orders.yearly", cron: "0 0 1 1 *", payload: b64("{}") },
  });
  expect(yearly.ok(), await yearly.text()).toBe(true);
  await api.dispose();
});

test.afterAll(async () => {
  const api = await adminApi(s.tenant);
  for (const name of ["overflow", "heartbeat", "orders-yearly"]) await api.delete(`/api/schedules/${name}`);
  await api.delete("/api/topic-schemas/capped");
  await api.dispose();
});

/** The table's row of one schedule. */
const row = (page: Page, name: string) =>
  page
    .getByRole("table", { name: /Schedules/ })
    .getByRole("row")
    .filter({ has: page.getByRole("rowheader", { name, exact: true }) });

test("a tenant admin creates a schedule with its next runs, sees a bad cron refused at its field, turns it off and on, edits and deletes it", async ({
  page,
}) => {
  await signIn(page, s.owner, PASSWORD);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Schedules" }).click();
  await expect(page.getByRole("heading", { name: "Schedules", exact: true })).toBeVisible();
  // The refused tick is flagged on its row, with the reason.
  const overflow = row(page, "overflow");
  await expect(overflow.getByText(/queue_full/)).toBeVisible({ timeout: 15_000 });
  await expect(overflow.getByText("refused", { exact: true })).toBeVisible();
  await expect(page.getByText("1 schedule's last tick was refused")).toBeVisible();
  await expect(overflow.getByRole("link", { name: "capped" })).toHaveAttribute("href", "/topics/capped");
  await expect(overflow.getByText("Every second")).toBeVisible();

  await page.getByRole("link", { name: "New schedule" }).click();
  await expect(page).toHaveURL(/create=true/);
  const form = page.getByRole("form", { name: "New schedule" });
  const preview = form.getByRole("region", { name: "Next runs" });
  await form.getByLabel("Name").fill("heartbeat");
  // A topic with a schema: the payload editor offers its example, as the enqueue form does.
  await form.getByLabel("Topic").fill("capped");
  await expect(
    form.getByText("Each tick's payload is checked against the topic's schema: version 1"),
  ).toBeVisible();
  await form.getByRole("button", { name: "Example from schema" }).click();
  await expect(form.getByLabel("Payload")).toHaveValue('{\n  "n": 1\n}');
  await form.getByLabel("Topic").fill("pings");
  await expect(form.getByRole("button", { name: "Example from schema" })).toBeHidden();
  // A topic the tenant does not have: said as it is typed (a typo, often), and again once saved.
  await expect(form.getByText("No topic named “pings” yet: its first tick would create it.")).toBeVisible();
  await expect(preview).toContainText("Type a cron");

  // A bad cron: the browser says so as it is typed, and the server refuses it at the field.
  await form.getByLabel("Cron").fill("61 * * * *");
  await expect(preview).toContainText("No runs:");
  await form.getByRole("button", { name: "Create schedule" }).click();
  await expect(form.getByRole("alert")).toHaveText(/^cron: .*61/);
  await expect(form.getByLabel("Cron")).toHaveAttribute("aria-invalid", "true");

  // Six fields, seconds first: the words and the next five runs, 10 seconds apart, on the zone's clock too.
  await form.getByLabel("Cron").fill("*/10 * * * * *");
  await expect(form.getByLabel("Cron")).not.toHaveAttribute("aria-invalid");
  await form.getByLabel("Time zone").fill("Europe/Berlin");
  await expect(preview).toContainText("Every 10 seconds (Europe/Berlin)");
  const runs = preview.getByRole("listitem");
  await expect(runs).toHaveCount(5);
  const times = await preview.locator("time").evaluateAll((ts) => ts.map((t) => t.getAttribute("datetime")));
  const gaps = times.slice(1).map((t, i) => Date.parse(t ?? "") - Date.parse(times[i] ?? ""));
  expect(gaps).toEqual([10_000, 10_000, 10_000, 10_000]);
  await expect(runs.first()).toContainText(/UTC · .* Europe\/Berlin/);

  await form.getByLabel("Payload").fill('{"ping": true}');
  await form.getByLabel("Metadata").fill('{"kind": "heartbeat"}');
  await form.getByLabel("Priority (0-9)").fill("3");
  await expectAccessible(page);
  await screenshot(page, "schedule-form", form);
  await form.getByRole("button", { name: "Create schedule" }).click();
  await expect(page.getByRole("status").filter({ hasText: "heartbeat is saved: next run" })).toContainText(
    "The tenant has no topic “pings” yet: its first tick creates it",
  );
  await expect(form).toBeHidden();
  const heartbeat = row(page, "heartbeat");
  await expect(heartbeat.getByText("*/10 * * * * *")).toBeVisible();
  await expect(heartbeat.getByText("Every 10 seconds")).toBeVisible();
  await expect(heartbeat.getByRole("cell", { name: "Europe/Berlin", exact: true })).toBeVisible();
  await expect(heartbeat.getByText("enabled", { exact: true })).toBeVisible();
  await screenshot(page, "schedules");

  await heartbeat.getByRole("button", { name: "Disable heartbeat" }).click();
  await expect(page.getByRole("status").filter({ hasText: "heartbeat is disabled" })).toBeVisible();
  await expect(heartbeat.getByText("disabled", { exact: true })).toBeVisible();
  await expect(heartbeat.getByText("– (disabled)")).toBeVisible();
  await heartbeat.getByRole("button", { name: "Enable heartbeat" }).click();
  await expect(page.getByRole("status").filter({ hasText: "heartbeat is enabled: next run" })).toBeVisible();
  await expect(heartbeat.getByText("enabled", { exact: true })).toBeVisible();

  // Run now: its message once, at once, as a producer's enqueue; its schedule stays as it was.
  await heartbeat.getByRole("button", { name: "Run now heartbeat" }).click();
  await expect(page.getByRole("status").filter({ hasText: "heartbeat ran now: message" })).toContainText(
    "enqueued into pings. Its next run is unchanged.",
  );
  const ran = await adminApi(s.tenant);
  const manual = await (await ran.get("/api/messages", { params: { topic: "pings" } })).json();
  expect(
    manual.items.some((m: { metadata: Record<string, unknown> }) => m.metadata.skiplock_run === "manual"),
  ).toBe(true);
  await ran.dispose();
  // The overflow schedule's refused tick stays its evidence when it is disabled.
  await overflow.getByRole("button", { name: "Disable overflow" }).click();
  await expect(overflow.getByText(/queue_full/)).toBeVisible();
  await overflow.getByRole("button", { name: "Enable overflow" }).click();
  await expect(overflow.getByText("enabled", { exact: true })).toBeVisible();

  // Edit: the form holds what is stored; a save that leaves the payload alone sends it as it was.
  await heartbeat.getByRole("link", { name: "Edit heartbeat" }).click();
  await expect(page).toHaveURL(/edit=heartbeat/);
  const edit = page.getByRole("form", { name: "Edit the schedule heartbeat" });
  await expect(edit.getByLabel("Name")).toHaveValue("heartbeat");
  await expect(edit.getByLabel("Time zone")).toHaveValue("Europe/Berlin");
  await expect(edit.getByLabel("Payload")).toHaveValue('{\n  "ping": true\n}');
  await edit.getByLabel("Priority (0-9)").fill("4");
  await edit.getByRole("button", { name: "Save schedule" }).click();
  await expect(edit).toBeHidden();
  const api = await adminApi(s.tenant);
  const stored = await (await api.get("/api/schedules/heartbeat")).json();
  await api.dispose();
  expect(stored).toMatchObject({
    topic: "pings",
    cron: "*/10 * * * * *",
    timezone: "Europe/Berlin",
    payload: b64('{"ping": true}'),
    metadata: { kind: "heartbeat" },
    priority: 4,
    enabled: true,
  });

  // The filter is kept in the URL.
  await page.getByRole("heading", { name: "Schedules", exact: true }).click();
  await page.keyboard.press("/");
  await page.keyboard.type("heart");
  await expect(page).toHaveURL(/q=heart/);
  await expect(page.getByRole("table", { name: /Schedules/ }).getByRole("rowheader")).toHaveText([
    "heartbeat",
  ]);
  await page.reload();
  await expect(page.getByRole("table", { name: /Schedules/ }).getByRole("rowheader")).toHaveText([
    "heartbeat",
  ]);

  await heartbeat.getByRole("button", { name: "Delete heartbeat" }).click();
  const confirm = page.getByRole("dialog", { name: "Delete the schedule heartbeat?" });
  await expect(confirm).toContainText("It enqueues nothing more into pings");
  await confirm.getByRole("button", { name: "Delete schedule" }).click();
  await expect(page.getByRole("status").filter({ hasText: "heartbeat is deleted." })).toBeVisible();
  await expect(heartbeat).toHaveCount(0);
});

test("a member reads the schedules of the topics it may read, with no action offered", async ({ page }) => {
  await signIn(page, s.viewer, PASSWORD);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Schedules" }).click();
  // Its grant reads orders.* only: that topic's schedule is shown and linked to its page; one into `capped` is not
  // shown at all (its payload and metadata are the topic's data).
  const yearly = row(page, "orders-yearly");
  await expect(yearly.getByRole("link", { name: "orders.yearly", exact: true })).toBeVisible({
    timeout: 15_000,
  });
  await expect(row(page, "overflow")).toHaveCount(0);
  await expect(page.getByRole("link", { name: "New schedule" })).toBeHidden();
  await expect(page.getByRole("button", { name: /Disable|Enable|Delete/ })).toHaveCount(0);
  await page.goto("/schedules?create=true");
  await expect(page.getByRole("form")).toHaveCount(0);
  await expectAccessible(page);
});

test.describe("on a phone", () => {
  test.use({ viewport: { width: 390, height: 844 }, colorScheme: "dark" });

  test("the schedules page and its form fit", async ({ page }) => {
    await signIn(page, s.owner, PASSWORD);
    await page.goto("/schedules");
    await expect(row(page, "overflow")).toBeVisible();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, "the page scrolls sideways").toBeLessThanOrEqual(0);
    await expectAccessible(page);
    await screenshot(page, "schedules");
    await page.getByRole("link", { name: "New schedule" }).click();
    await page.getByLabel("Cron").fill("30 2 * * *");
    await expect(page.getByRole("region", { name: "Next runs" }).getByRole("listitem")).toHaveCount(5);
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    ).toBeLessThanOrEqual(0);
    await expectAccessible(page);
  });
});
