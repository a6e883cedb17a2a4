// End-to-end tests of the console in the system Chromium against a running Skiplock (SKIPLOCK_URL).
// `tests/e2e/test_admin_console.py` starts a real server and runs them; `make ui-e2e` runs them against yours.
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "e2e",
  globalSetup: "./e2e/global-setup.ts",
  fullyParallel: false,
  workers: 1, // one browser for the whole run
  retries: 0,
  timeout: 90_000, // a guard against a hang: the longest test runs 25-35 s on a loaded 2-core machine
  expect: { timeout: 10_000 },
  reporter: [["list"]],
  outputDir: process.env.SKIPLOCK_E2E_OUTPUT ?? "test-results",
  use: {
    baseURL: process.env.SKIPLOCK_URL ?? "http://127.0.0.1:8080",
    viewport: { width: 1280, height: 800 },
    colorScheme: "light",
    locale: "en-US",
    timezoneId: "UTC",
    trace: "retain-on-failure",
    permissions: ["clipboard-read", "clipboard-write"],
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
  },
});
