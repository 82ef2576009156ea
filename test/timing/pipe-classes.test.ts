import { join } from "node:path";
import { afterAll, describe, it } from "vitest";
import { runCli, startCli, type Running } from "../helpers/cli.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("pipe-classes");
const KiB = 1024;

/**
 * The key: 4 MiB/s, burst 400 KiB. interactive 1 MiB/s, prio 0; backup 2 MiB/s, prio 1;
 * bulk 200 KiB/s, prio 2. The rule: the 0.8 MiB/s the guarantees leave goes to interactive
 * (prio 0), so 1.8, 2 and 0.2 MiB/s.
 */
const CLASSES = ["interactive=1mb,prio=0", "backup=2mb,prio=1", "bulk=200kb,prio=2"];
const RULE_KIB = { interactive: 1.8 * 1024, backup: 2 * 1024, bulk: 200 };
const KEY_RATE = 4 * 1024 * KiB;
const KEY_BURST = 400 * KiB;

let redis: RedisServer | undefined;
afterAll(async () => {
  await redis?.stop();
});

// One at a time: these measure time, and the machine is shared.
describe("tbucket --key K --class: timing", () => {
  for (const kind of ["sqlite", "redis"] as const) {
    it(`${kind}: three pipes of three classes, each asking for all: each near the rule's share, none below 85 % of it, the total within the key's envelope`, async ({ expect }) => {
      let url = `sqlite:${join(tempDir(), "k.db")}`;
      if (kind === "redis") {
        redis ??= await startRedisServer();
        url = redis.url;
      }
      const store = ["--store", url];
      const set = await runCli(["key", "set", "uplink", "--rate", "4mb", "--burst", "400kb", ...CLASSES.flatMap((c) => ["--class", c]), ...store]);
      expect([set.code, set.stderr]).toEqual([0, ""]);
      const startedMs = performance.now();
      const pipes: Record<keyof typeof RULE_KIB, Running> = {
        interactive: startCli(["--key", "uplink", "--class", "interactive", ...store], { stdin: "endless" }),
        backup: startCli(["--key", "uplink", "--class", "backup", ...store], { stdin: "endless" }),
        bulk: startCli(["--key", "uplink", "--class", "bulk", ...store], { stdin: "endless" }),
      };
      // Shares are read from 1.5 s on, when every pipe has started and the first burst is spent.
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const endMs = performance.now();
      for (const pipe of Object.values(pipes)) pipe.signal("SIGINT");
      const results = await Promise.all(Object.values(pipes).map((pipe) => pipe.exited));
      // Stopped as a user stops a pipe: by the signal, quietly.
      expect(results.map((r) => [r.code ?? r.signal, r.stderr])).toEqual(results.map(() => ["SIGINT", ""]));
      const fromMs = startedMs + 1500;
      const seconds = (endMs - fromMs) / 1000;
      const rates = Object.fromEntries(Object.entries(pipes).map(([name, pipe]) => [name, pipe.bytesBetween(fromMs, endMs) / KiB / seconds])) as Record<keyof typeof RULE_KIB, number>;
      for (const name of Object.keys(RULE_KIB) as Array<keyof typeof RULE_KIB>) {
        expect(rates[name], `${name}: ${rates[name].toFixed(1)} KiB/s, rule ${RULE_KIB[name]}`).toBeGreaterThan(0.85 * RULE_KIB[name]);
        expect(rates[name], `${name}: ${rates[name].toFixed(1)} KiB/s, rule ${RULE_KIB[name]}`).toBeLessThan(1.15 * RULE_KIB[name]);
      }
      // Everything delivered since the start: at most the key's burst and its rate over the time.
      const total = Object.values(pipes).reduce((sum, pipe) => sum + pipe.bytesBetween(0, Infinity), 0);
      expect(total).toBeLessThanOrEqual(KEY_BURST + (KEY_RATE * (performance.now() - startedMs)) / 1000);
    });
  }
});
