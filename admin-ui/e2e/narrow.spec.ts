// At 390 px (a phone): every main page lays out without the page scrolling sideways, and passes axe-core.
import { expect, type Page, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { admin, PASSWORD, seed } from "./seed";

const s = seed();

test.use({ viewport: { width: 390, height: 844 }, colorScheme: "dark" });

async function expectFits(page: Page): Promise<void> {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `${page.url()} scrolls sideways`).toBeLessThanOrEqual(0);
}

test("a tenant admin's pages fit a phone", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await expect(page.getByRole("rowheader", { name: "orders", exact: true })).toBeVisible();
  await expectFits(page);
  await expectAccessible(page);
  await screenshot(page, "overview");
  await page.goto("/topics/orders");
  await expect(page.getByRole("table", { name: "Messages of orders" })).toBeVisible();
  await expectFits(page);
  await expectAccessible(page);
  await screenshot(page, "topic");
  await page.goto("/topics/orders/config");
  await expect(page.getByRole("form", { name: "Topic configuration" })).toBeVisible();
  await expectFits(page);
  await screenshot(page, "config");
  await page.goto("/users");
  await expect(page.getByRole("form", { name: "Create a user" })).toBeVisible();
  await expectFits(page);
  await expectAccessible(page);
  await screenshot(page, "users");
});

test("a platform admin's pages fit a phone", async ({ page }) => {
  await signIn(page, admin.username, admin.password);
  await page.goto("/tenants");
  await expect(page.getByRole("form", { name: "Create a tenant" })).toBeVisible();
  await expectFits(page);
  await expectAccessible(page);
  await screenshot(page, "tenants");
  await page.goto("/maintenance");
  await expect(page.getByRole("form", { name: "Delete reaper schedule" })).toBeVisible();
  await expectFits(page);
  await expectAccessible(page);
  await screenshot(page, "maintenance");
});
