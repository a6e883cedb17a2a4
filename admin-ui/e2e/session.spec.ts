// Sessions: signing in and out, and an expired session that sends the user to sign in and back where they were.
import { expect, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { PASSWORD, seed } from "./seed";

const s = seed();

test("a wrong password is refused with the API's message", async ({ page }) => {
  await page.goto("/");
  await expect(page).toHaveURL(/\/login/);
  await expectAccessible(page);
  await screenshot(page, "login");
  await page.getByLabel("Username").fill(s.owner);
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toContainText("Sign-in failed");
  await expect(page.getByRole("alert")).toContainText("unauthorized");
});

test("an expired session returns to the login with a message, then to the page the user was on", async ({
  page,
  context,
}) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/orders?status=pending");
  await expect(page.getByRole("heading", { name: "orders" })).toBeVisible();
  // The server ends the session (as when it lapses or the password changes): log it out behind the page's back.
  const csrf = (await context.cookies()).find((c) => c.name === "skiplock_csrf")?.value ?? "";
  const out = await page.request.delete("/api/auth/session", { headers: { "X-CSRF-Token": csrf } });
  expect(out.status()).toBe(204);
  await page.getByRole("heading", { name: "orders" }).click();
  await page.keyboard.press("r"); // refresh: the next request finds no session
  await expect(page.getByText("Your session has expired")).toBeVisible();
  await page.getByLabel("Username").fill(s.owner);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/topics\/orders\?status=pending$/);
  await expect(page.getByRole("button", { name: "pending", pressed: true })).toBeVisible();
});

test("a first visit asks to sign in without saying a session expired", async ({ page }) => {
  await page.goto("/topics/orders");
  await expect(page.getByLabel("Username")).toBeVisible();
  await expect(page.getByText("Your session has expired")).toHaveCount(0);
  await expect(page).toHaveURL(/redirect=/);
});

test("log out ends the session", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await page.getByRole("button", { name: "Log out" }).click();
  await expect(page.getByRole("heading", { name: "Sign in to Skiplock" })).toBeVisible();
  const me = await page.request.get("/api/auth/me", { headers: { "X-Requested-With": "skiplock-console" } });
  expect(me.status()).toBe(401);
});
