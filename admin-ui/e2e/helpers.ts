// What every spec does: sign in through the login page, check a page with axe-core, keep a screenshot.
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { expect, type Locator, type Page } from "@playwright/test";

export async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.goto("/login");
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("button", { name: "Log out" })).toBeVisible();
}

/** No serious or critical axe-core violation on the page as it stands. */
export async function expectAccessible(page: Page): Promise<void> {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  expect(bad, `axe-core on ${page.url()}`).toEqual([]);
}

/** Saves a screenshot when SKIPLOCK_SCREENSHOTS names a folder (`make ui-screenshots`); compares nothing. `of`:
 * one part of the page only (a tab below the fold), instead of its top. */
export async function screenshot(page: Page, name: string, of?: Locator): Promise<void> {
  const folder = process.env.SKIPLOCK_SCREENSHOTS;
  if (!folder) return;
  const width = page.viewportSize()?.width ?? 0;
  const file = path.join(folder, `console-${name}-${width}.png`);
  if (of) {
    await of.screenshot({ path: file });
    return;
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: file, fullPage: width < 600 });
}
