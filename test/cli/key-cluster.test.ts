import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type RedisCluster, startRedisCluster } from "../helpers/redis-cluster.js";

// A real three-master Redis Cluster on loopback; the commands are given the address of one node.
let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const env = { TBUCKET_STORE: "" };
const cli = (args: string[], input?: string) => runCli(args, { env, input });

/** The keys each master holds. */
async function keysByNode(): Promise<string[][]> {
  return Promise.all(
    cluster.ports.map(async (port) => {
      const node = new Redis({ port, host: "127.0.0.1" });
      try {
        return (await node.keys("*")).sort();
      } finally {
        await node.quit();
      }
    }),
  );
}

describe("tbucket on a Redis Cluster", () => {
  it("sets, shows, lists and deletes keys spread over the masters, and pipes and runs on them", async () => {
    const store = cluster.url;
    const names = ["api", "backups", "downloads", "logs", "mirror", "uploads"];
    for (const name of names) {
      const set = await cli(["key", "set", name, "--rate", name === "api" ? "1/m" : "1kb", "--burst", name === "api" ? "5" : "64kb", "--store", store]);
      expect([set.code, set.stderr]).toEqual([0, ""]);
    }
    const placed = await keysByNode();
    expect(placed.flat().sort()).toEqual(names.map((name) => `tbucket:{${name}}`));
    // Every master holds some: `key list` must ask them all.
    expect(placed.every((keys) => keys.length > 0)).toBe(true);
    const list = await cli(["key", "list", "--store", store, "--json"]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout.toString()).map((state: { key: string }) => state.key)).toEqual(names);

    const data = "x".repeat(50_000);
    const pipeStartMs = performance.now();
    const pipe = await cli(["--key", "backups", "--store", store], data);
    expect([pipe.code, pipe.stdout.toString() === data, pipe.stderr]).toEqual([0, true, ""]);
    const show = await cli(["key", "show", "backups", "--store", store, "--json"]);
    const shown = JSON.parse(show.stdout.toString());
    expect(shown).toMatchObject({ key: "backups", store, kind: "bytes", rate: 1024, burst: 65_536 });
    // The pipe took its 50,000 bytes from the cluster's bucket, which has refilled at 1024 B/s since
    // (however long a loaded machine took; a bucket the pipe did not take from would be full).
    const refilled = (1024 * (performance.now() - pipeStartMs)) / 1000;
    expect(shown.tokens).toBeLessThan(65_536 - 50_000 + refilled + 100);

    const run = await cli(["run", "-q", "--key", "api", "--count", "3", "--store", store, "--", "echo", "hi"]);
    expect([run.code, run.stdout.toString(), run.stderr]).toEqual([0, "hi\nhi\nhi\n", ""]);
    const api = JSON.parse((await cli(["key", "show", "api", "--store", store, "--json"])).stdout.toString());
    expect(api).toMatchObject({ kind: "count", rate: 1 / 60, burst: 5 });
    // Three launches taken from the five (a minute refills one).
    expect(api.tokens).toBeGreaterThanOrEqual(2);
    expect(api.tokens).toBeLessThan(2.5);

    for (const name of names) {
      const deleted = await cli(["key", "delete", name, "--store", store, "--json"]);
      expect([deleted.code, JSON.parse(deleted.stdout.toString())]).toEqual([0, { key: name, store, deleted: true }]);
    }
    expect((await keysByNode()).flat()).toEqual([]);
    const empty = await cli(["key", "list", "--store", store]);
    expect([empty.code, empty.stdout.toString(), empty.stderr]).toEqual([0, "", `tbucket: no shared buckets in ${store}; create one with: tbucket key set <key> --rate 20mb\n`]);
  }, 120_000);
});
