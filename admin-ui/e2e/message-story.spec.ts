// A message's whole story (issue 44): a plain message from its dead-lettering to its ack and its replay, and a
// message three consumer groups owed, each group's part told, with the links between a message, its dead letters
// and its replays. At 1280 and 390 px.
import { expect, type Page, test } from "@playwright/test";
import { expectAccessible, screenshot, signIn } from "./helpers";
import { adminApi, PASSWORD, seed } from "./seed";

const s = seed();
const b64 = (text: string) => Buffer.from(text).toString("base64");

async function fitsSideways(page: Page, width: number): Promise<void> {
  const overflow = await page.evaluate(() => document.scrollingElement?.scrollWidth ?? 0);
  expect(overflow, `the page at ${width} px`).toBeLessThanOrEqual(width);
}

test("a plain message's story: its dead-lettering with the error, the requeue, the ack, and its replay both ways", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  await api.put("/api/topic-configs/story-orders", { data: { max_retries: 1, replayable: true } });
  const id = (
    await (await api.post("/api/messages", { data: { topic: "story-orders", payload: b64("o") } })).json()
  ).id as string;
  const dequeue = async () =>
    (await (await api.post("/api/messages/dequeue", { data: { topic: "story-orders" } })).json()).messages[0];
  let m = await dequeue();
  await api.post(`/api/messages/${id}/nack`, { data: { receipt: m.receipt, error: "card declined" } });

  await signIn(page, s.owner, PASSWORD);
  await page.goto(`/topics/story-orders.dlq?message=${id}`);
  const drawer = page.getByRole("dialog", { name: "Message" });
  const told = drawer.getByRole("table", { name: "What happened to this message, oldest first" });
  await expect(told.locator("tbody tr")).toHaveCount(3);
  await expect(told.locator("tbody tr").nth(0)).toContainText("Enqueued to story-orders");
  await expect(told.locator("tbody tr").nth(1)).toContainText("Attempt 1: dead lettered");
  await expect(told.locator("tbody tr").nth(1)).toContainText("card declined");
  await expect(told.locator("tbody tr").nth(2)).toContainText("Dead-lettered to story-orders.dlq");
  await expect(drawer).toContainText("Stored in story-orders.dlq, pending.");

  await api.post(`/api/messages/${id}/requeue`);
  m = await dequeue();
  await api.post(`/api/messages/${id}/ack`, { data: { receipt: m.receipt } });
  const [entry] = (await (await api.get("/api/topics/story-orders/message-log")).json()).items;
  await api.post("/api/topics/story-orders/replay", { data: { from_time: entry.acked_at } });

  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto("/topics/story-orders?view=history");
    await page
      .getByRole("table", { name: "Message log of story-orders" })
      .getByRole("button")
      .first()
      .click();
    const logged = page.getByRole("dialog", { name: "Logged message" });
    await expect(logged).toContainText("Acked: only its message log entry is left.");
    const story = logged.getByRole("table", { name: "What happened to this message, oldest first" });
    const rows = story.locator("tbody tr");
    await expect(rows).toHaveCount(4);
    await expect(rows.nth(1)).toContainText("Requeued to story-orders");
    await expect(rows.nth(1)).toContainText("admin"); // the API user that requeued it
    await expect(rows.nth(2)).toContainText("Acked");
    await expect(rows.nth(3)).toContainText("Replayed");
    await fitsSideways(page, width);
    await expectAccessible(page);
    await screenshot(
      page,
      "message-story-logged",
      logged.getByRole("region", { name: "Story", exact: true }),
    );
    if (width === 390) {
      // the replay leads to the message it made, whose story leads back
      await rows.nth(3).getByRole("link").click();
      const replay = page.getByRole("dialog", { name: "Message" });
      await expect(replay).toContainText(`A replay of ${id}.`);
      await expect(
        replay
          .getByRole("table", { name: "What happened to this message, oldest first" })
          .locator("tbody tr")
          .first(),
      ).toContainText(`a replay of ${id}`);
      await replay.getByRole("link", { name: id }).first().click();
      await expect(page.getByRole("dialog", { name: "Message" })).toContainText(
        "This message is no longer stored; its story below tells what is known of it.",
      );
      await expect(page.getByRole("dialog", { name: "Message" })).toContainText(
        "Acked: only its message log entry is left.",
      );
    }
  }
  await api.dispose();
});

test("a grouped message's story: what each consumer group did, and its dead letter leading back to it", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  await api.put("/api/topic-configs/story-shop", { data: { max_retries: 1 } });
  for (const group of ["billing", "shipping", "audit"]) {
    await api.post("/api/topics/story-shop/consumer-groups", { data: { consumer_group: group } });
  }
  const id = (
    await (await api.post("/api/messages", { data: { topic: "story-shop", payload: b64("order") } })).json()
  ).id as string;
  const take = async (group: string) =>
    (
      await (
        await api.post("/api/messages/dequeue", { data: { topic: "story-shop", consumer_group: group } })
      ).json()
    ).messages[0];
  const billed = await take("billing");
  await api.post(`/api/messages/${id}/ack`, { data: { receipt: billed.receipt, consumer_group: "billing" } });
  const shipped = await take("shipping");
  await api.post(`/api/messages/${id}/nack`, {
    data: { receipt: shipped.receipt, consumer_group: "shipping", error: "carrier down" },
  });

  await signIn(page, s.owner, PASSWORD);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(`/topics/story-shop?message=${id}`);
    const drawer = page.getByRole("dialog", { name: "Message" });
    const groups = drawer.getByRole("table", { name: "What each consumer group did with this message" });
    await expect(groups.getByRole("row", { name: /billing/ })).toContainText("acked");
    await expect(groups.getByRole("row", { name: /shipping/ })).toContainText("dead-lettered");
    await expect(groups.getByRole("row", { name: /audit/ })).toContainText("owes it");
    const story = drawer.getByRole("table", { name: "What happened to this message, oldest first" });
    await expect(story.getByRole("row", { name: /Dead-lettered to story-shop\.dlq/ })).toContainText(
      "carrier down",
    );
    await expect(story.getByRole("row", { name: /Acked/ })).toContainText("not recorded");
    await fitsSideways(page, width);
    await expectAccessible(page);
    await screenshot(
      page,
      "message-story-groups",
      drawer.getByRole("region", { name: "Story", exact: true }),
    );
  }
  await page
    .getByRole("dialog", { name: "Message" })
    .getByRole("table", { name: "What each consumer group did with this message" })
    .getByRole("link")
    .click();
  const copy = page.getByRole("dialog", { name: "Message" });
  await expect(copy).toContainText(`The dead letter of ${id} for one consumer group.`);
  await expect(copy).toContainText("Stored in story-shop.dlq, pending.");
  await api.dispose();
});

test("who holds a topic's messages now, and its dead letters grouped by error class", async ({ page }) => {
  const api = await adminApi(s.tenant);
  for (let n = 0; n < 3; n++) {
    await api.post("/api/messages", { data: { topic: "kit-holders", payload: b64(`h${n}`) } });
  }
  await api.post("/api/messages/dequeue", { data: { topic: "kit-holders", count: 2 } });
  await api.put("/api/topic-configs/kit-errors", { data: { max_retries: 1 } });
  for (const error of ["ValueError: a", "ValueError: b", "TimeoutError: carrier"]) {
    await api.post("/api/messages", { data: { topic: "kit-errors", payload: b64(error) } });
    const [m] = (await (await api.post("/api/messages/dequeue", { data: { topic: "kit-errors" } })).json())
      .messages;
    await api.post(`/api/messages/${m.id}/nack`, { data: { receipt: m.receipt, error } });
  }
  await signIn(page, s.owner, PASSWORD);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto("/topics/kit-holders");
    await page.getByText("Consumers holding messages now (1 consumer, 2 messages)").click();
    const consumers = page.getByRole("table", { name: /Who holds kit-holders's messages now/ });
    await expect(consumers.getByRole("row", { name: /admin/ })).toContainText("2");
    await fitsSideways(page, width);
    await page.goto("/topics/kit-errors.dlq");
    const classes = page.getByRole("table", { name: /Error classes of kit-errors\.dlq/ });
    await expect(classes.locator("tbody tr").first()).toContainText("ValueError");
    await expect(classes.locator("tbody tr").first()).toContainText("2");
    await expect(classes.getByRole("row", { name: /TimeoutError/ })).toContainText("1");
    await fitsSideways(page, width);
    await expectAccessible(page);
    await screenshot(page, "error-classes", page.getByText(/Errors by class/).locator(".."));
  }
  await page
    .getByRole("table", { name: /Error classes of kit-errors\.dlq/ })
    .getByRole("link", { name: "ValueError: b" })
    .click();
  const drawer = page.getByRole("dialog", { name: "Message" });
  await expect(
    drawer.getByRole("table", { name: "What happened to this message, oldest first" }),
  ).toContainText("ValueError: b");
  await api.dispose();
});

test("a redrive at a pace: the pace typed (words refused at the field), the job's progress and pace shown", async ({
  page,
}) => {
  const api = await adminApi(s.tenant);
  await api.put("/api/topic-configs/kit-redrive", { data: { max_retries: 1 } });
  const messages = Array.from({ length: 30 }, (_, n) => ({ payload: b64(`r${n}`) }));
  await api.post("/api/messages/batch", { data: { topic: "kit-redrive", messages } });
  const taken = (
    await (await api.post("/api/messages/dequeue", { data: { topic: "kit-redrive", count: 30 } })).json()
  ).messages;
  for (const m of taken) await api.post(`/api/messages/${m.id}/nack`, { data: { error: "down" } });
  await signIn(page, s.owner, PASSWORD);
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto("/topics/kit-redrive.dlq");
    await page.getByRole("button", { name: "Requeue all" }).click();
    const dialog = page.getByRole("dialog", { name: /Requeue all 30 messages of kit-redrive\.dlq/ });
    const pace = dialog.getByLabel("Pace (messages a second)");
    await pace.fill("fast");
    await dialog.getByRole("button", { name: "Requeue all" }).click();
    await expect(dialog.getByRole("alert")).toContainText("A whole number of messages a second, 1 to 10,000");
    await expect(pace).toHaveAttribute("aria-invalid", "true");
    await fitsSideways(page, width);
    if (width === 390) {
      await dialog.getByRole("button", { name: "Cancel" }).click();
      continue;
    }
    await pace.fill("20");
    await dialog.getByRole("button", { name: "Requeue all" }).click();
    const progress = page.getByRole("status").filter({ hasText: /requeue/ });
    await expect(progress).toContainText("at 20 a second");
    await expect(progress).toContainText("requeue done at 20 a second — 30 done", { timeout: 20_000 });
    await page.getByText(/Recent bulk jobs on kit-redrive\.dlq \(/).click();
    await expect(page.getByRole("table", { name: "Recent bulk jobs on kit-redrive.dlq" })).toContainText(
      "at 20/s",
    );
    await expectAccessible(page);
  }
  await api.dispose();
});
