import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // End-to-end tests measure real pipes against the token-bucket envelope: two at a time suits two cores.
    maxWorkers: 2,
  },
});
