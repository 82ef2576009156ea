import { defineConfig } from "vitest/config";

// .ci/run asks for a JSON report too, to print its one-line count of passed and failed tests.
const report = process.env.TBUCKET_TEST_REPORT;

const TIMING = "test/timing/**/*.test.ts";

export default defineConfig({
  test: {
    globalSetup: ["test/setup/isolate.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: report ? ["default", ["json", { outputFile: report }]] : ["default"],
    projects: [
      {
        extends: true,
        test: { name: "main", include: ["test/**/*.test.ts"], exclude: [TIMING], maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        // Tests that hold real processes against the token-bucket envelope in real time: after
        // the rest, one file at a time, so that only the machine's own load competes with them.
        extends: true,
        test: { name: "timing", include: [TIMING], fileParallelism: false, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
