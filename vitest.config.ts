import { defineConfig } from "vitest/config";

// .ci/run asks for a JSON report too, to print its one-line count of passed and failed tests.
const report = process.env.TBUCKET_TEST_REPORT;

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // End-to-end tests measure real pipes against the token-bucket envelope: two at a time suits two cores.
    maxWorkers: 2,
    reporters: report ? ["default", ["json", { outputFile: report }]] : ["default"],
  },
});
