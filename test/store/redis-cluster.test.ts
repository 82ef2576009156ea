import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { RedisStore, redisKeyOf } from "../../src/store/redis-store.js";
import { type RedisCluster, startClusterNode, startRedisCluster } from "../helpers/redis-cluster.js";
import { describeStoreConformance } from "./conformance.js";

// A real three-master cluster on loopback, started here: without redis-server this fails naming the package.
let cluster: RedisCluster;
let nodes: Redis[];
beforeAll(async () => {
  cluster = await startRedisCluster();
  nodes = cluster.ports.map((port) => new Redis({ port, host: "127.0.0.1" }));
}, 60_000);
afterAll(async () => {
  for (const node of nodes ?? []) await node.quit();
  await cluster?.stop();
});

async function flushCluster(): Promise<void> {
  await Promise.all(nodes.map((node) => node.flushall()));
}

/** Which node (0, 1, 2) holds each Redis key now. */
async function placement(): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for (const [index, node] of nodes.entries()) for (const key of await node.keys("*")) found.set(key, index);
  return found;
}

const KEYS = ["api", "backups", "uploads", "p:down:10.0.0.1", "p:down:10.0.0.2", "downloads", "mirror", "logs"];

describeStoreConformance("RedisStore on a Redis Cluster", async () => {
  await flushCluster();
  const clock = new FakeClock();
  // The address of the second node: any node's reaches the whole cluster.
  const store = await RedisStore.open(`redis://127.0.0.1:${cluster.ports[1]}`, { clock });
  return { store, clock };
});

describe("RedisStore on a Redis Cluster", () => {
  it("sends each key to the master of its slot, and lists and deletes them on every master", async () => {
    await flushCluster();
    const store = await RedisStore.open(cluster.url);
    for (const key of KEYS) await store.configure(key, { rate: 10, burst: 5, kind: "count" });
    const placed = await placement();
    expect([...placed.keys()].sort()).toEqual(KEYS.map(redisKeyOf).sort());
    // The keys are spread over the three masters: no node holds them all.
    expect(new Set(placed.values()).size).toBe(3);
    expect((await store.list()).map((state) => state.key)).toEqual([...KEYS].sort());
    const taken = await store.takeMany("backups", [{ n: 3 }, { n: 3, options: { maxWaitMs: 0 } }, { n: 2 }]);
    expect(taken!.map((result) => [result.ok, result.tokens])).toEqual([
      [true, 2],
      [false, 2],
      [true, 0],
    ]);
    for (const key of KEYS) expect(await store.delete(key)).toBe(true);
    expect(await store.list()).toEqual([]);
    expect((await placement()).size).toBe(0);
    await store.close();
  });

  it("keeps a key's classes in the slot of its name: a class's ask is one script call there", async () => {
    await flushCluster();
    const store = await RedisStore.open(cluster.url);
    await store.configureSet("uplink", [
      { kind: "bucket", unit: "count", rate: 100, burst: 20 },
      { kind: "window", unit: "count", n: 50, windowMs: 1000 },
    ]);
    await store.configureClasses("uplink", [
      { name: "interactive", rate: 60, prio: 0 },
      { name: "bulk", rate: 10, prio: 1 },
    ]);
    expect(await store.takeClass("uplink", "interactive", { count: 2 })).toMatchObject({ ok: true, path: "guarantee" });
    expect(await store.takeClass("uplink", "bulk", { count: 5 })).toMatchObject({ ok: true, path: "borrow" });
    expect((await store.readSet("uplink"))!.classes!.map((c) => c.name)).toEqual(["interactive", "bulk"]);
    // The hash and the window's records, on one master.
    const placed = await placement();
    expect([...placed.keys()].sort()).toEqual(["tbucket-set:{uplink}:2", "tbucket:{uplink}"]);
    expect(new Set(placed.values()).size).toBe(1);
    await store.close();
  });

  it("runs on a Cluster client of the user's own (redisStore), each key at its slot's master, the client left open", async () => {
    await flushCluster();
    const client = new Cluster([{ host: "127.0.0.1", port: cluster.ports[2]! }]);
    try {
      const store = await RedisStore.fromClient(client);
      expect(store.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+ \(cluster\)$/);
      for (const key of KEYS) {
        await store.configure(key, { rate: 1, burst: 2, kind: "count" });
        expect((await store.take(key, 2))?.ok).toBe(true);
        expect((await store.take(key, 1, { maxWaitMs: 0 }))?.ok).toBe(false);
      }
      const found = await placement();
      expect(new Set(found.values()).size).toBe(3);
      await store.close();
      expect(await client.ping()).toBe("PONG");
    } finally {
      client.disconnect();
    }
  });

  it("refuses a database other than 0 in one line: a cluster has no other", async () => {
    await expect(RedisStore.open(`${cluster.url}/2`)).rejects.toThrow(
      `store ${cluster.url}/2: Redis Cluster has database 0 only; write the address without a database, as in ${cluster.url}`,
    );
  });

  it("says in one line that a cluster node serving no slots is not serving, at once rather than waiting for slots", async () => {
    const lone = await startClusterNode();
    try {
      await expect(RedisStore.open(lone.url)).rejects.toThrow(
        `store ${lone.url}: Redis Cluster is not serving (cluster_state:fail); check that every slot is served (redis-cli --cluster check HOST:PORT)`,
      );
    } finally {
      await lone.stop();
    }
  });
});
