// A member with `read` on orders.*: sees those topics and their messages, and no control it may not use.
import { expect, test } from "@playwright/test";
import { expectAccessible, signIn } from "./helpers";
import { PASSWORD, seed } from "./seed";

const s = seed();

test.beforeEach(async ({ page }) => {
  await signIn(page, s.viewer, PASSWORD);
});

test("sees only the topics it may read, and reads them without a single action offered", async ({ page }) => {
  const table = page.getByRole("table", { name: /Topics/ });
  await expect(table.getByRole("rowheader", { name: "orders", exact: true })).toBeVisible();
  await expect(table.getByRole("rowheader", { name: "orders.dlq" })).toBeVisible();
  await expect(table.getByRole("rowheader", { name: "billing" })).toBeHidden();
  await expect(table.getByRole("rowheader", { name: "payments" })).toBeHidden();
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link")).toHaveText([
    "Topics",
    "Schedules",
  ]);
  await expect(page.getByLabel("Tenant")).toBeHidden();
  await expectAccessible(page);

  await table.getByRole("link", { name: "orders", exact: true }).click();
  await expect(page.getByRole("table", { name: "Messages of orders" }).locator("tbody tr")).toHaveCount(50);
  for (const name of ["Pause…", "Enqueue…", "Retry all", "Delete all", "Purge…", "Delete by key"]) {
    await expect(page.getByRole("button", { name })).toBeHidden();
  }
  await page
    .getByRole("table", { name: "Messages of orders" })
    .locator("tbody tr")
    .first()
    .getByRole("button")
    .click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  await expect(drawer.getByText("Payload (JSON)")).toBeVisible();
  await expect(drawer.getByRole("button", { name: /Retry|Requeue|Delete/ })).toHaveCount(0);
  await expectAccessible(page);
  await drawer.getByRole("button", { name: "Close" }).click();

  await page.getByRole("link", { name: "Configuration" }).click();
  const form = page.getByRole("form", { name: "Topic configuration" });
  await expect(form.getByLabel("Max retries")).toBeDisabled();
  await expect(form.getByRole("button", { name: "Save" })).toBeHidden();
  await expectAccessible(page);
});

test("a page it may not see says so, not a broken screen or forms under a 403", async ({ page }) => {
  await page.goto("/topics/billing");
  await expect(page.getByRole("alert").first()).toContainText(/forbidden, request [0-9a-f-]+/);
  for (const path of ["/users", "/audit", "/tenants", "/maintenance"]) {
    await page.goto(path);
    await expect(page.getByText("Not available to this account")).toBeVisible();
    await expect(page.getByRole("form")).toHaveCount(0);
    await expect(page.getByRole("button", { name: /Create|Save|Run/ })).toHaveCount(0);
  }
});
