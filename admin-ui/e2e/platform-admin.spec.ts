// The platform admin: tenants with usage and quotas, the tenant switcher, maintenance and the reaper schedule.
import { expect, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { admin, seed } from "./seed";

const s = seed();

test.beforeEach(async ({ page }) => {
  await signIn(page, admin.username, admin.password);
});

test("home asks for a tenant; the switcher scopes the topics to it", async ({ page }) => {
  await expect(page.getByRole("heading", { name: "Choose a tenant" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link")).toHaveText([
    "Audit",
    "Tenants",
    "Maintenance",
  ]);
  await expectAccessible(page);
  await page.getByLabel("Tenant").selectOption(s.tenant);
  await expect(page.getByRole("rowheader", { name: "orders", exact: true })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link")).toHaveText([
    "Topics",
    "Schedules",
    "Users",
    "Audit",
    "Tenants",
    "Maintenance",
  ]);
  await page.reload(); // the choice is remembered
  await expect(page.getByLabel("Tenant")).toHaveValue(s.tenant);
  await page.getByLabel("Tenant").selectOption("");
  await expect(page.getByRole("heading", { name: "Choose a tenant" })).toBeVisible();
});

test("tenants: usage against quotas, create, quotas, suspend and resume, delete with force", async ({
  page,
}) => {
  await page.getByRole("link", { name: "Tenants" }).first().click();
  const row = (slug: string) => page.getByRole("row").filter({ has: page.getByText(slug, { exact: true }) });
  await expect(row(s.tenant).getByRole("cell").nth(2)).not.toHaveText("0"); // messages in use
  await expectAccessible(page);
  await screenshot(page, "tenants");

  const create = page.getByRole("form", { name: "Create a tenant" });
  const slug = `${s.tenant}-new`;
  await create.getByLabel("Slug").fill("Not A Slug");
  await create.getByLabel("Name").fill("New shop");
  await create.getByRole("button", { name: "Create" }).click();
  await expect(create.getByRole("alert").first()).toBeVisible();
  await create.getByLabel("Slug").fill(slug);
  await create.getByLabel("Max topics").fill("5");
  await create.getByRole("button", { name: "Create" }).click();
  await expect(row(slug)).toContainText("/ 5");

  await row(slug).getByRole("button", { name: "Edit quotas" }).click();
  const quotas = page.getByRole("form", { name: `Quotas of ${slug}` });
  await quotas.getByLabel("Max topics").fill("9");
  await quotas.getByRole("button", { name: "Save quotas" }).click();
  await expect(row(slug)).toContainText("/ 9");
  await row(slug).getByRole("button", { name: "Suspend…" }).click();
  const suspend = page.getByRole("dialog", { name: `Suspend tenant ${slug}?` });
  await expect(suspend).toContainText("gets 403 from its next request");
  await suspend.getByRole("button", { name: "Suspend" }).click();
  await expect(row(slug)).toContainText("suspended");
  await row(slug).getByRole("button", { name: "Resume…" }).click();
  await page
    .getByRole("dialog", { name: `Resume tenant ${slug}?` })
    .getByRole("button", { name: "Resume" })
    .click();
  await expect(row(slug)).toContainText("active");
  await row(slug).getByRole("button", { name: "Delete…" }).click();
  await page
    .getByRole("dialog", { name: `Delete tenant ${slug}?` })
    .getByRole("button", { name: "Delete" })
    .click();
  await expect(row(slug)).toBeHidden();

  // A tenant that still holds messages: the API refuses, and the dialog offers the contract's force.
  await row(s.doomed).getByRole("button", { name: "Delete…" }).click();
  const dialog = page.getByRole("dialog", { name: `Delete tenant ${s.doomed}?` });
  await dialog.getByRole("button", { name: "Delete", exact: true }).click();
  await expect(dialog.getByRole("alert")).toContainText("tenant_not_empty");
  await dialog.getByLabel(/Also delete its 1 message /).check();
  await dialog.getByRole("button", { name: "Delete it and its messages" }).click();
  await expect(row(s.doomed)).toBeHidden();
});

test("maintenance: run the reapers (the archive reaper too), see their runs, edit the schedule with its next runs", async ({
  page,
}) => {
  await page.getByRole("link", { name: "Maintenance" }).first().click();
  await page.getByRole("button", { name: "Run the expiry reaper now" }).click();
  await expect(page.getByRole("status")).toContainText(/expired/);
  await page.getByRole("button", { name: "Run the delete reaper now" }).click();
  await expect(page.getByRole("status")).toContainText(/deleted/);
  await page.getByRole("button", { name: "Run the archive reaper now" }).click();
  await expect(page.getByRole("status")).toHaveText(
    /^The archive reaper ran: [\d,]+ log (entries|entry) dropped with (their|its) partitions?\.$/,
  );
  const runs = page.getByRole("table", { name: /Last runs/ });
  await expect(runs.getByRole("rowheader", { name: /expiry/ })).toBeVisible();
  // Jobs by name, with their ids (as logs and metrics name them) and what a run does.
  const archive = runs
    .getByRole("row")
    .filter({ has: page.getByRole("rowheader", { name: /^Archive reaper/ }) });
  await expect(archive.getByRole("rowheader")).toContainText("archive_reaper");
  await expect(archive).toContainText("log entries dropped with their partitions");
  await expectAccessible(page);

  const schedule = page.getByRole("form", { name: "Delete reaper schedule" });
  await schedule.getByLabel("Cron schedule (UTC)").fill("61 * * * *");
  await expect(schedule.getByRole("alert")).toBeVisible(); // the API's verdict, at the field
  await expect(schedule.getByRole("button", { name: "Save schedule" })).toBeDisabled();
  await schedule.getByLabel("Cron schedule (UTC)").fill("0 3 * * 1");
  const next = schedule.getByRole("list", { name: "Next runs" }).getByRole("listitem");
  await expect(next.first()).toBeVisible();
  for (const when of await next
    .locator("time")
    .evaluateAll((ts) => ts.map((t) => t.getAttribute("datetime")))) {
    const at = new Date(String(when));
    expect([at.getUTCDay(), at.getUTCHours(), at.getUTCMinutes()]).toEqual([1, 3, 0]); // Mondays, 03:00 UTC
  }
  await screenshot(page, "maintenance");
  await schedule.getByRole("button", { name: "Save schedule" }).click();
  await expect(schedule.getByRole("status")).toContainText("Saved"); // before the reload, which could cancel it
  await page.reload();
  await expect(schedule.getByLabel("Cron schedule (UTC)")).toHaveValue("0 3 * * 1");
  await schedule.getByLabel("Cron schedule (UTC)").fill("");
  await schedule.getByRole("button", { name: "Save schedule" }).click();
  await expect(schedule.getByText(/^Off:/)).toBeVisible();
});
