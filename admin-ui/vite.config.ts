import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// `make ui-dev`: Vite's dev server, with the API of a running Skiplock behind /api (SKIPLOCK_URL).
const api = process.env.SKIPLOCK_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 400 },
  server: { proxy: { "/api": { target: api, changeOrigin: false } } },
  test: { environment: "jsdom", include: ["src/**/*.test.{ts,tsx}"], setupFiles: ["src/test-setup.ts"] },
});
