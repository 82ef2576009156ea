import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { STORE_BACKENDS } from "../../src/store/backends.js";
import { openStore, parseStoreLocation } from "../../src/store/open-store.js";
import { RedisStore } from "../../src/store/redis-store.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";
import type { BucketStore } from "../../src/store/bucket-store.js";
import type { LimitSetStore } from "../../src/store/limit-set-store.js";
import { describeStoreConformance } from "./conformance.js";
import { describeClassConformance } from "./class-conformance.js";
import { describeSetConformance } from "./set-conformance.js";

/** How the suite gets a fresh, empty store of a backend: its address, and what to remove afterwards. */
interface BackendFixture {
  fresh(): Promise<{ url: string; cleanup?: () => Promise<void> }>;
  /** Stops what the fixture started (a server). */
  stop?(): Promise<void>;
}


let redis: { server: RedisServer; admin: Redis } | undefined;

/** One for every backend in STORE_BACKENDS: a backend added without one fails below. */
const FIXTURES: Record<string, BackendFixture> = {
  sqlite: {
    async fresh() {
      const dir = mkdtempSync(join(tmpdir(), "tbucket-sqlite-"));
      return { url: `sqlite:${join(dir, "buckets.db")}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  // The server is started here, not skipped: without redis-server this fails naming the package.
  redis: {
    async fresh() {
      if (!redis) {
        const server = await startRedisServer();
        redis = { server, admin: new Redis(server.url) };
      }
      await redis.admin.flushdb();
      return { url: redis.server.url };
    },
    async stop() {
      await redis?.admin.quit();
      await redis?.server.stop();
    },
  },
  memory: { fresh: async () => ({ url: "memory:" }) },
};

/** The store itself when it keeps limit sets (every backend now). */
function limitSetStoreOf(store: BucketStore): LimitSetStore | undefined {
  return "takeSet" in store ? (store as BucketStore & LimitSetStore) : undefined;
}

afterAll(async () => {
  for (const fixture of Object.values(FIXTURES)) await fixture.stop?.();
});

describe("the conformance suite", () => {
  it("has a fixture for every registered store backend", () => {
    expect(STORE_BACKENDS.map((backend) => backend.type).filter((type) => !FIXTURES[type])).toEqual([]);
  });
});

for (const backend of STORE_BACKENDS) {
  const fixture = FIXTURES[backend.type];
  if (!fixture) continue;
  describeStoreConformance(backend.type, async () => {
    const { url, cleanup } = await fixture.fresh();
    const clock = new FakeClock();
    // Opened as the CLI and the middleware open it: through the registry, by its address.
    const store = await openStore(parseStoreLocation(url), { clock });
    return { store, clock, cleanup };
  });
  describeSetConformance(backend.type, async () => {
    const { url, cleanup } = await fixture.fresh();
    const clock = new FakeClock();
    const store = await openStore(parseStoreLocation(url), { clock });
    const sets = limitSetStoreOf(store);
    if (!sets) throw new Error(`the ${backend.type} store keeps no limit sets`);
    return { store, sets, clock, cleanup, bucketStoreKnowsSets: limitSetStoreOf(store) !== undefined };
  });
  describeClassConformance(backend.type, async () => {
    const { url, cleanup } = await fixture.fresh();
    const clock = new FakeClock();
    const store = await openStore(parseStoreLocation(url), { clock });
    return { store, sets: limitSetStoreOf(store)!, clock, cleanup };
  });
}

// The same contract on a client of the user's own (rateLimit's store from redisStore(client)): the store must not depend on having made the connection.
async function storeOnUsersClient(): Promise<{ store: BucketStore; clock: FakeClock; cleanup: () => Promise<void> }> {
  const { url } = await FIXTURES.redis!.fresh();
  const client = new Redis(url, { commandTimeout: 3000, maxRetriesPerRequest: 2 });
  const clock = new FakeClock();
  const store = await RedisStore.fromClient(client, { clock });
  return { store, clock, cleanup: async () => void (await client.quit()) };
}
describeStoreConformance("redis, on the user's own client", storeOnUsersClient);
describeSetConformance("redis, on the user's own client", async () => {
  const fixture = await storeOnUsersClient();
  return { ...fixture, sets: limitSetStoreOf(fixture.store)!, bucketStoreKnowsSets: true };
});
describeClassConformance("redis, on the user's own client", async () => {
  const fixture = await storeOnUsersClient();
  return { ...fixture, sets: limitSetStoreOf(fixture.store)! };
});
