// Wave 3 tried as operators would (issue 44): each finding as it was met, now shown or refused as it should be.
import { expect, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { adminApi, PASSWORD, seed } from "./seed";

const s = seed();
const b64 = (text: string) => Buffer.from(text).toString("base64");

test("enqueue: a metadata value without a name is an error at its row, JSON values keep their type, and an old success never stands under a refusal", async ({
  page,
}) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/kit-enqueue");
  await page.getByRole("button", { name: "Enqueue…" }).click();
  const form = page.getByRole("form", { name: "Enqueue into kit-enqueue" });
  await form.getByRole("button", { name: "Add metadata" }).click();
  await form.getByLabel("Metadata value 1").fill("eu");
  await form.getByRole("button", { name: "Enqueue" }).click();
  await expect(form.getByRole("alert")).toHaveText("Give this value a name, or remove the row.");
  await expect(form.getByLabel("Metadata name 1")).toHaveAttribute("aria-invalid", "true");
  await form.getByLabel("Metadata name 1").fill("region");
  await form.getByRole("button", { name: "Add metadata" }).click();
  await form.getByLabel("Metadata name 2").fill("attempt");
  await form.getByLabel("Metadata value 2").fill("3");
  await form.getByLabel("Metadata type 2").selectOption("json");
  await form.getByRole("button", { name: "Add metadata" }).click();
  await form.getByLabel("Metadata name 3").fill("bad");
  await form.getByLabel("Metadata value 3").fill("{oops");
  await form.getByLabel("Metadata type 3").selectOption("json");
  await form.getByRole("button", { name: "Enqueue" }).click();
  await expect(form.getByRole("alert")).toContainText("Not JSON");
  await form.getByRole("button", { name: "Remove metadata 3" }).click();
  await form.getByRole("button", { name: "Enqueue" }).click();
  await expect(form.getByRole("status")).toContainText("Enqueued");
  const api = await adminApi(s.tenant);
  const [stored] = (await (await api.get("/api/messages", { params: { topic: "kit-enqueue" } })).json())
    .items;
  expect(stored.metadata).toEqual({ region: "eu", attempt: 3 });
  // A refusal after a success: the success goes, the refusal shows at its field, in plain words.
  await form.getByLabel("Key", { exact: true }).fill("k".repeat(600));
  await form.getByRole("button", { name: "Enqueue" }).click();
  await expect(form.getByRole("alert").first()).toContainText("must be at most 512 characters");
  await expect(form.getByRole("status")).toHaveCount(0);
  await expectAccessible(page);
  await api.dispose();
});

test("overview: the sort and the filter are kept in the URL, so Back finds the list as it was left", async ({
  page,
}) => {
  await signIn(page, s.owner, PASSWORD);
  const table = page.getByRole("table", { name: /Topics/ });
  await table.getByRole("button", { name: "Pending", exact: true }).click();
  await expect(page).toHaveURL(/sort=pending/);
  await expect(page).toHaveURL(/desc=true/);
  const first = await table.locator("tbody tr th").first().textContent();
  await page.getByLabel("Filter topics").fill("o");
  await table.locator("tbody tr th a").first().click();
  await expect(page.getByRole("navigation", { name: "Breadcrumb" })).toBeVisible();
  await page.goBack();
  await expect(page.getByLabel("Filter topics")).toHaveValue("o");
  await expect(table.getByRole("columnheader", { name: "Pending", exact: true })).toHaveAttribute(
    "aria-sort",
    "descending",
  );
  await page.getByLabel("Filter topics").fill("");
  await expect(table.locator("tbody tr th").first()).toHaveText(first ?? "");
  // Counts are exact: a draining backlog is watched one message at a time.
  await expect(table.locator("tbody")).not.toContainText(/\d+k\b/);
});

test("a filter that matches nothing in the first window says so and searches further", async ({ page }) => {
  const api = await adminApi(s.tenant);
  for (let n = 0; n < 3; n++) {
    const messages = Array.from({ length: 1000 }, () => ({ payload: b64("hay") }));
    expect((await api.post("/api/messages/batch", { data: { topic: "haystack", messages } })).ok()).toBe(
      true,
    );
  }
  const needle = await api.post("/api/messages", {
    data: { topic: "haystack", payload: b64("needle"), metadata: { needle: true } },
  });
  expect(needle.ok()).toBe(true);
  await signIn(page, s.owner, PASSWORD);
  // A hand-written link with the filter: the router hands it over parsed, and it is the same filter.
  await page.goto('/topics/haystack?metadata={"needle":true}');
  await expect(page.getByText("Everything matching the current filter:")).toBeVisible();
  await expect(page.getByRole("status").filter({ hasText: "No match among the first" })).toBeVisible();
  await page.getByRole("button", { name: "Search further" }).click();
  const rows = page.getByRole("table", { name: "Messages of haystack" }).locator("tbody tr");
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText("needle");
  await expectAccessible(page);
  expect((await api.post("/api/topics/haystack/purge", { data: {} })).ok()).toBe(true); // the overview's order stays
  await api.dispose();
});

test("a pause is confirmed; a topic page counts its dead letters and links them", async ({ page }) => {
  await signIn(page, s.owner, PASSWORD);
  await page.goto("/topics/payments");
  await page.getByRole("button", { name: "Pause…" }).click();
  await expect(page.getByRole("dialog", { name: "Pause payments?" })).toContainText(
    "Producers still enqueue",
  );
  await page.getByRole("dialog", { name: "Pause payments?" }).getByRole("button", { name: "Cancel" }).click();
  await expect(page.getByRole("heading", { name: "payments", exact: true })).toBeVisible();
  await expect(page.locator("dl.counts")).toContainText("dead letters0");
});

test("the recent bulk jobs say why messages were skipped, and fit a phone", async ({ page }) => {
  const api = await adminApi(s.tenant);
  // Two failed keyed messages whose keys pending messages now hold: a retry of every failed message skips them.
  expect(
    (await api.put("/api/topic-configs/kit-jobs", { data: { max_retries: 0, dlq_enabled: false } })).ok(),
  ).toBe(true);
  for (const key of ["k1", "k2"]) {
    await api.post("/api/messages", { data: { topic: "kit-jobs", payload: b64("old"), key } });
  }
  const taken = await (
    await api.post("/api/messages/dequeue", { data: { topic: "kit-jobs", count: 2 } })
  ).json();
  expect(taken.messages).toHaveLength(2);
  for (const m of taken.messages) await api.post(`/api/messages/${m.id}/nack`, { data: { error: "boom" } });
  for (const key of ["k1", "k2"]) {
    await api.post("/api/messages", { data: { topic: "kit-jobs", payload: b64("new"), key } });
  }
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await signIn(page, s.owner, PASSWORD);
    await page.goto("/topics/kit-jobs?status=failed");
    if (width === 1280) {
      await page.getByRole("button", { name: "Retry all" }).click();
      await page
        .getByRole("dialog", { name: /Retry every message matching the filter/ })
        .getByRole("button", { name: "Retry all" })
        .click();
      await expect(page.getByRole("status").filter({ hasText: /retry done/ })).toContainText(
        "2 × key_conflict (a pending message of the topic holds its key)",
      );
    }
    await page.getByText(/Recent bulk jobs on kit-jobs \(/).click();
    const jobs = page.getByRole("table", { name: "Recent bulk jobs on kit-jobs" });
    await expect(jobs).toContainText("2 × key_conflict");
    for (const column of ["Action", "State", "Done / skipped / matched"]) {
      const box = await jobs.getByRole("columnheader", { name: column }).boundingBox();
      expect((box?.x ?? 9999) + (box?.width ?? 0), `${column} at ${width} px`).toBeLessThanOrEqual(width);
    }
    const overflow = await page.evaluate(() => document.scrollingElement?.scrollWidth ?? 0);
    expect(overflow).toBeLessThanOrEqual(width);
    await screenshot(page, "bulk-jobs");
  }
  await api.dispose();
});
