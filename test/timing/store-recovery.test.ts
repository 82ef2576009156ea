import { renameSync } from "node:fs";
import { type Server } from "node:http";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { rateLimit } from "../../src/http/index.js";
import type { BucketStore, StoreError } from "../../src/store/bucket-store.js";
import { RedisStore } from "../../src/store/redis-store.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { sleep } from "../helpers/cli.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { get, listen } from "../http/http-helpers.js";

/**
 * A store that goes away and comes back, measured as the issue did: one
 * request every 100 ms, the store killed, then started again. The old client
 * gave up after about 3 s of retries and never reconnected, so every request
 * failed until the process was restarted.
 */

const tempDir = tempDirs("store-recovery");
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

interface Answer {
  atMs: number;
  status: number;
  retryAfter: string | undefined;
}

/** Asks `url` every 100 ms until stopped, recording each answer and when it came. */
function poll(url: string): { answers: Answer[]; stop(): Promise<void> } {
  const answers: Answer[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const sentMs = performance.now();
      try {
        const answer = await get(url);
        answers.push({ atMs: performance.now(), status: answer.status, retryAfter: answer.headers["retry-after"] as string | undefined });
      } catch {
        answers.push({ atMs: performance.now(), status: 0, retryAfter: undefined });
      }
      await sleep(Math.max(0, 100 - (performance.now() - sentMs)));
    }
  })();
  return {
    answers,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** The first answer at or after `fromMs` with `status`, as ms after `fromMs`. */
function firstAfter(answers: Answer[], fromMs: number, status: number): number | undefined {
  const found = answers.find((answer) => answer.atMs >= fromMs && answer.status === status);
  return found && found.atMs - fromMs;
}

/** A middleware on `store` behind a node:http server; admits at a rate a 100 ms poll never exceeds. */
async function serve(store: BucketStore, told: string[]): Promise<{ url: string; close(): void }> {
  const limit = rateLimit({
    rate: 1000,
    burst: 10,
    store: { store, name: "api", onError: (error: StoreError) => told.push(`lost: ${error.failure}`), onBack: () => told.push("back") },
  });
  const { server, url } = await listen(limit.wrap((_req, res) => res.end("ok")));
  servers.push(server);
  return { url, close: () => limit.close() };
}

describe("stores that go away and come back", () => {
  it("the middleware on Redis killed for 4 s: 503 with Retry-After meanwhile, then answers from Redis within 1 s of its return", async () => {
    const redis = await startRedisServer();
    const store = await RedisStore.open(redis.url);
    const told: string[] = [];
    const { url, close } = await serve(store, told);
    const polling = poll(url);
    try {
      await sleep(1000);
      await redis.stop("SIGKILL");
      const killedMs = performance.now();
      await sleep(4000);
      // Measured from the restart's beginning: the server answers before start() has seen it does.
      const backMs = performance.now();
      await redis.start();
      await sleep(2500);
      await polling.stop();
      const { answers } = polling;
      expect(answers.filter((answer) => answer.atMs < killedMs).every((answer) => answer.status === 200)).toBe(true);
      const during = answers.filter((answer) => answer.atMs > killedMs + 500 && answer.atMs < backMs);
      expect(during.length).toBeGreaterThan(20);
      expect(during.every((answer) => answer.status === 503 && answer.retryAfter === "1")).toBe(true);
      const recoveredMs = firstAfter(answers, backMs, 200);
      console.log(`middleware on Redis: first 200 ${recoveredMs?.toFixed(0)} ms after Redis was started again`);
      expect(recoveredMs).toBeLessThan(1000);
      // From then on every answer is Redis's: the client's key is in the restarted (empty) server again.
      expect(answers.filter((answer) => answer.atMs > backMs + 1000).every((answer) => answer.status === 200)).toBe(true);
      expect(await store.read("api:127.0.0.1")).toMatchObject({ rate: 1000, burst: 10 });
      expect(told).toEqual(["lost: lost", "back"]);
    } finally {
      await polling.stop();
      close();
      await store.close();
      await redis.stop();
    }
  }, 30_000);

  it("tbucket proxy (HTTP) on Redis killed for 4 s: 503 with Retry-After meanwhile, says each end once, counts it, then answers from Redis within 1 s of its return", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    servers.push(backend.server);
    const redis = await startRedisServer();
    const proxy = await startProxy(["--to", backend.url, "--rate", "1000/s", "--burst", "10", "--key", "api", "--store", redis.url, "--metrics", "127.0.0.1:0"]);
    const metrics = async () => (await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text()).split("\n").filter((line) => line.startsWith("tbucket_proxy_store_"));
    const polling = poll(`http://127.0.0.1:${proxy.port}/`);
    try {
      await sleep(1000);
      await redis.stop("SIGKILL");
      const killedMs = performance.now();
      await sleep(4000);
      expect(await metrics()).toEqual(["tbucket_proxy_store_errors_total 1", "tbucket_proxy_store_up 0"]);
      // Measured from the restart's beginning: the server answers before start() has seen it does.
      const backMs = performance.now();
      await redis.start();
      await sleep(2500);
      await polling.stop();
      const { answers } = polling;
      const during = answers.filter((answer) => answer.atMs > killedMs + 500 && answer.atMs < backMs);
      expect(during.length).toBeGreaterThan(20);
      expect(during.every((answer) => answer.status === 503 && answer.retryAfter === "1")).toBe(true);
      const recoveredMs = firstAfter(answers, backMs, 200);
      console.log(`proxy on Redis: first 200 ${recoveredMs?.toFixed(0)} ms after Redis was started again`);
      expect(recoveredMs).toBeLessThan(1000);
      expect(answers.filter((answer) => answer.atMs > backMs + 1000).every((answer) => answer.status === 200)).toBe(true);
      expect(await metrics()).toEqual(["tbucket_proxy_store_errors_total 1", "tbucket_proxy_store_up 1"]);
      const lines = proxy.running.stderr().split("\n").slice(1, -1);
      const shown = redis.url.replace(/\./g, "\\.");
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(new RegExp(`^tbucket: warning: store ${shown}: lost Redis \\(.*\\); answering 503 with Retry-After until it is back$`));
      expect(lines[1]).toMatch(new RegExp(`^tbucket: store ${shown}: back after \\d+\\.\\d s; the buckets are shared again$`));
      expect((await stopProxy(proxy)).code).toBe(0);
    } finally {
      await polling.stop();
      await redis.stop();
    }
  }, 30_000);

  it("the middleware on a SQLite file locked by another connection (BEGIN EXCLUSIVE): 503 while it is held, the file again within 1 s of COMMIT", async () => {
    const path = join(tempDir(), "buckets.db");
    const store = await SqliteStore.open(path, { busyTimeoutMs: 200 });
    const told: string[] = [];
    const { url, close } = await serve(store, told);
    const other = new Database(path);
    try {
      expect((await get(url)).status).toBe(200);
      other.exec("BEGIN EXCLUSIVE");
      // The lease taken may cover a request or two; then the file is found locked.
      const statuses: number[] = [];
      for (let i = 0; i < 30 && !statuses.includes(503); i++) statuses.push((await get(url)).status);
      expect(statuses.at(-1)).toBe(503);
      await sleep(1500);
      const held = await get(url);
      expect([held.status, held.headers["retry-after"]]).toEqual([503, "1"]);
      other.exec("COMMIT");
      const committedMs = performance.now();
      const polling = poll(url);
      await sleep(1500);
      await polling.stop();
      const recoveredMs = firstAfter(polling.answers, committedMs, 200);
      console.log(`middleware on SQLite: first 200 ${recoveredMs?.toFixed(0)} ms after COMMIT`);
      expect(recoveredMs).toBeLessThan(1000);
      expect(told).toEqual(["lost: locked", "back"]);
    } finally {
      close();
      other.close();
      await store.close();
    }
  }, 30_000);

  it("the middleware on a SQLite file moved away and put back: 503 while its path names no file, the file again within 1 s of its return", async () => {
    const path = join(tempDir(), "buckets.db");
    const store = await SqliteStore.open(path, { fileCheckMs: 0 });
    const told: string[] = [];
    const { url, close } = await serve(store, told);
    try {
      expect((await get(url)).status).toBe(200);
      renameSync(path, `${path}.away`);
      const statuses: number[] = [];
      for (let i = 0; i < 30 && !statuses.includes(503); i++) statuses.push((await get(url)).status);
      expect(statuses.at(-1)).toBe(503);
      await sleep(1500);
      expect((await get(url)).status).toBe(503);
      renameSync(`${path}.away`, path);
      const returnedMs = performance.now();
      const polling = poll(url);
      await sleep(1500);
      await polling.stop();
      const recoveredMs = firstAfter(polling.answers, returnedMs, 200);
      console.log(`middleware on SQLite: first 200 ${recoveredMs?.toFixed(0)} ms after the file was back`);
      expect(recoveredMs).toBeLessThan(1000);
      expect(told).toEqual(["lost: lost", "back"]);
    } finally {
      close();
      await store.close();
    }
  }, 30_000);
});
