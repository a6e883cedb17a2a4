// `make bench-console` runs this: how long the overview takes to show every topic of a tenant, in the system
// Chromium, from navigation start to the last row in the table. Prints one JSON line: {"runs_ms": [...]}.
// Usage: node bench/overview.mjs <url> <username> <password> <topics> <rounds>
import { chromium } from "@playwright/test";

const [url, username, password, topics, rounds] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, baseURL: url });
await page.goto("/login");
await page.getByLabel("Username").fill(username);
await page.getByLabel("Password").fill(password);
await page.getByRole("button", { name: "Sign in" }).click();
await page.getByRole("button", { name: "Log out" }).waitFor();
const runs = [];
for (let i = 0; i < Number(rounds); i++) {
  await page.goto("/", { waitUntil: "commit" });
  await page.waitForFunction(
    (n) => document.querySelectorAll("table.topics tbody tr").length >= n,
    Number(topics),
    { polling: "raf", timeout: 30_000 },
  );
  runs.push(await page.evaluate(() => performance.now()));
}
await browser.close();
console.log(JSON.stringify({ runs_ms: runs.map((r) => Math.round(r)) }));
