import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// `make ui-dev`: Vite's dev server, with the API of a running Skiplock behind /api (SKIPLOCK_URL).
const api = process.env.SKIPLOCK_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 400 },
  server: { proxy: { "/api": { target: api, changeOrigin: false } } },
  // Two projects: the pure functions of src/lib/ in Node (no DOM to build for each file), the components in jsdom.
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "lib",
          environment: "node",
          include: ["src/lib/**/*.test.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "dom",
          environment: "jsdom",
          include: ["src/**/*.test.tsx"],
          setupFiles: ["src/test-setup.ts"],
        },
      },
    ],
  },
});
