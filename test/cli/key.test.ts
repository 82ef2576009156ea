import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { runCli } from "../helpers/cli.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

let dir: string;
let server: RedisServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-key-"));
  // Whatever a command falls back to, it is never the user's own store.
  process.env.XDG_STATE_HOME = join(dir, "state");
  process.env.TBUCKET_STORE = "";
  server = await startRedisServer();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await server?.stop();
});

const key = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli(["key", ...args], { env });

describe("tbucket key", () => {
  it("uses $XDG_STATE_HOME/tbucket/buckets.db by default", async () => {
    const env = { XDG_STATE_HOME: join(dir, "state"), TBUCKET_STORE: "" };
    const set = await key(["set", "backups", "--rate", "20mb", "--burst", "4mb", "--json"], env);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout.toString())).toMatchObject({
      key: "backups",
      store: `sqlite:${join(dir, "state", "tbucket", "buckets.db")}`,
      kind: "bytes",
      rate: 20 * 1024 * 1024,
      burst: 4 * 1024 * 1024,
      tokens: 4 * 1024 * 1024,
    });
  });

  for (const name of ["SQLite", "Redis"]) {
    it(`sets, shows, lists and deletes keys on ${name}`, async () => {
      const store = name === "SQLite" ? `sqlite:${join(dir, "keys.db")}` : server.url;
      const [emptyJson, empty] = await Promise.all([key(["list", "--store", store, "--json"]), key(["list", "--store", store])]);
      expect(emptyJson.stdout.toString()).toBe("[]\n");
      expect([empty.code, empty.stdout.toString(), empty.stderr]).toEqual([0, "", `tbucket: no shared buckets in ${store}; create one with: tbucket key set <key> --rate 20mb\n`]);

      const set = await key(["set", "backups", "--rate", "20mb", "--burst", "4mb", "--store", store]);
      expect(set.code).toBe(0);
      expect(set.stdout.toString()).toMatch(
        new RegExp(
          `^key:     backups\\nstore:   ${store.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\\nkind:    bytes\\nrate:    20\\.00 MiB/s \\(20,971,520 B/s\\)\\nburst:   4\\.00 MiB \\(4,194,304 B\\)\\nlevel:   4\\.00 MiB \\(full\\)\\nupdated: \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\n$`,
        ),
      );
      // A rate change keeps the burst.
      await Promise.all([key(["set", "api", "--rate", "600/m", "--store", store]), key(["set", "backups", "--rate", "5mb", "--store", store])]);

      const [listJson, listTable] = await Promise.all([key(["list", "--store", store, "--json"]), key(["list", "--store", store])]);
      const list = JSON.parse(listJson.stdout.toString());
      expect(list.map((s: { key: string; rate: number; burst: number; kind: string }) => [s.key, s.kind, s.rate, s.burst])).toEqual([
        ["api", "count", 10, 1],
        ["backups", "bytes", 5 * 1024 * 1024, 4 * 1024 * 1024],
      ]);
      const table = listTable.stdout.toString().split("\n");
      expect(table[0]).toMatch(/^KEY +KIND +RATE +BURST +LEVEL +UPDATED$/);
      expect(table[1]).toMatch(/^api +count +10\/s +1 +1 \(full\) +\d{4}-/);
      expect(table[2]).toMatch(/^backups +bytes +5\.00 MiB\/s +4\.00 MiB +4\.00 MiB \(full\) +\d{4}-/);

      const burstOnly = await key(["set", "api", "--burst", "10", "--store", store, "--json"]);
      expect(JSON.parse(burstOnly.stdout.toString())).toMatchObject({ rate: 10, burst: 10, kind: "count" });

      const deleted = await key(["delete", "api", "--store", store, "--json"]);
      expect([deleted.code, JSON.parse(deleted.stdout.toString())]).toEqual([0, { key: "api", store, deleted: true }]);
      const [again, show] = await Promise.all([key(["delete", "api", "--store", store]), key(["show", "api", "--store", store])]);
      expect([again.code, again.stderr]).toEqual([1, `tbucket: key "api": not set in ${store}; see the keys with: tbucket key list\n`]);
      expect([show.code, show.stderr]).toEqual([1, `tbucket: key "api": not set in ${store}; see the keys with: tbucket key list\n`]);
    }, 120_000);
  }

  it("reads a bare number as the stored kind, and as a count for a new key", async () => {
    const store = `sqlite:${join(dir, "kinds.db")}`;
    await key(["set", "bytes", "--rate", "1kb", "--store", store]);
    const bare = await key(["set", "bytes", "--rate", "2000", "--store", store, "--json"]);
    expect(JSON.parse(bare.stdout.toString())).toMatchObject({ kind: "bytes", rate: 2000 });
    const fresh = await key(["set", "fresh", "--rate", "50", "--store", store, "--json"]);
    expect(JSON.parse(fresh.stdout.toString())).toMatchObject({ kind: "count", rate: 50, burst: 1 });
    const forced = await key(["set", "forced", "--rate", "5000", "--kind", "bytes", "--store", store, "--json"]);
    expect(JSON.parse(forced.stdout.toString())).toMatchObject({ kind: "bytes", rate: 5000, burst: 500 });
  });

  it("pauses a key at --rate 0, keeping its burst, and pipes and runs on it get what it holds, then nothing", async () => {
    const store = `sqlite:${join(dir, "paused.db")}`;
    await key(["set", "backups", "--rate", "1mb", "--burst", "64k", "--store", store]);
    const paused = await key(["set", "backups", "--rate", "0", "--store", store]);
    expect([paused.code, paused.stderr]).toEqual([0, ""]);
    expect(paused.stdout.toString()).toMatch(/^rate: {4}0 \(paused\)\nburst: {3}64\.00 KiB \(65,536 B\)$/m);
    const json = await key(["show", "backups", "--store", store, "--json"]);
    expect(JSON.parse(json.stdout.toString())).toMatchObject({ kind: "bytes", rate: 0, burst: 65536 });
    // The burst is still there: a pipe on the paused key passes what fits in it.
    const pipe = await runCli(["--key", "backups", "--store", store], { input: "abc" });
    expect([pipe.code, pipe.stdout.toString(), pipe.stderr]).toEqual([0, "abc", ""]);
    // --rate 0 with --key pauses too (and keeps the burst); a new count key holds 1 launch.
    const again = await runCli(["--key", "backups", "--rate", "0", "--store", store], { input: "def" });
    expect([again.code, again.stdout.toString(), again.stderr]).toEqual([0, "def", ""]);
    const run = await runCli(["run", "-q", "--key", "launches", "--rate", "0", "--count", "1", "--store", store, "--", "echo", "once"]);
    expect([run.code, run.stdout.toString(), run.stderr]).toEqual([0, "once\n", ""]);
    expect(JSON.parse((await key(["show", "launches", "--store", store, "--json"])).stdout.toString())).toMatchObject({ kind: "count", rate: 0, burst: 1 });
  });

  it("refuses a rate of 0 without --key: a private bucket at 0 would never pass anything", async () => {
    const [pipe, run] = await Promise.all([runCli(["--rate", "0"]), runCli(["run", "--rate", "0", "--", "true"])]);
    expect([pipe.code, pipe.stderr]).toEqual([2, `tbucket: --rate: "0" is not a byte rate: it must be more than zero; try "1mb", "512k/s" or "10mbit"\n`]);
    expect([run.code, run.stderr]).toEqual([2, `tbucket: --rate: "0" is not a count rate: it must be more than zero; try "5", "300/m" or "1/10s"\n`]);
  });

  it("refuses bad input with one line and exit 2", async () => {
    const store = `sqlite:${join(dir, "bad.db")}`;
    const cases: Array<[string[], string]> = [
      [["set", "x", "--store", store], `tbucket: key set: nothing to set; try "tbucket key set x --rate 20mb" or "--burst 4mb"\n`],
      [["set", "x", "--burst", "5", "--store", store], `tbucket: --rate: a new key needs a rate; try "tbucket key set x --rate 5/s"\n`],
      [["set", "x", "--rate", "fast", "--store", store], `tbucket: --rate: "fast" is not a rate; try "1mb" or "5/s"\n`],
      [["set", "x", "--rate", "1mb", "--kind", "count", "--store", store], `tbucket: --rate: "1mb" is a byte rate, not a count rate; try "5", "300/m" or "1/10s"\n`],
      [["set", "x", "--rate", "1mb", "--kind", "byte", "--store", store], `tbucket: --kind: "byte" is not a kind; try "bytes" or "count"\n`],
      [["set", "no spaces", "--rate", "1mb"], `tbucket: key: "no spaces" is not a key name; use letters, digits and . _ - : @ / (at most 200), e.g. "backups"\n`],
      [["list", "--store", "ftp://x"], `tbucket: --store: "ftp://x" is not a store; try "sqlite:", "sqlite:/path/buckets.db" or "redis://host:6379"\n`],
      [["frob"], `tbucket: key: "frob" is not a key subcommand; try "tbucket key list", "tbucket key show <key>", "tbucket key set <key> --rate 20mb" or "tbucket key delete <key>"\n`],
      [["lst"], `tbucket: key: "lst" is not a key subcommand; did you mean "tbucket key list"?\n`],
      [["help", "set"], `tbucket: key: "help" is not a key subcommand; try "tbucket key list", "tbucket key show <key>", "tbucket key set <key> --rate 20mb" or "tbucket key delete <key>"\n`],
    ];
    const results = await Promise.all(cases.map(([args]) => key(args)));
    expect(results.map((r) => [r.code, r.stderr])).toEqual(cases.map(([, stderr]) => [2, stderr]));
  });

  it("refuses a new byte-rate key at rate 0 without --burst: at 0 there is no rate to size it from", async () => {
    const store = `sqlite:${join(dir, "paused-new.db")}`;
    const message = `tbucket: --rate: a new key paused at 0 needs --burst, since there is no rate to size it from; try "--rate 0 --burst 1mb", or give it a rate first\n`;
    const [set, pipe] = await Promise.all([
      key(["set", "fresh", "--rate", "0mb", "--store", store]),
      runCli(["--key", "fresh2", "--rate", "0", "--store", store], { input: "x" }),
    ]);
    expect([set.code, set.stderr]).toEqual([2, message]);
    expect([pipe.code, pipe.stderr]).toEqual([2, message]);
    const given = await key(["set", "fresh", "--rate", "0mb", "--burst", "1mb", "--store", store, "--json"]);
    expect(JSON.parse(given.stdout.toString())).toMatchObject({ kind: "bytes", rate: 0, burst: 1024 * 1024 });
  });

  it("says when the store cannot be reached: one line, exit 1", async () => {
    const result = await key(["list", "--store", "redis://127.0.0.1:1"]);
    expect(result.stderr).toBe("tbucket: store redis://127.0.0.1:1: cannot reach Redis (connect ECONNREFUSED 127.0.0.1:1); check the address and that Redis runs there\n");
    expect(result.code).toBe(1);
  });

  it("ends its help with examples", async () => {
    const helps = await Promise.all([["--help"], ["set", "--help"], ["list", "--help"]].map((args) => key(args)));
    for (const help of helps) expect(help.stdout.toString()).toMatch(/\nExamples:\n {2}tbucket key /);
  });

  // Regression (issue 15): "-53.25 KiB (0%)" and "2mib/s" in key list.
  it("shows a level below zero as what the bucket owes, and rates as the progress line does", async () => {
    const path = join(dir, "debt.db");
    const store = await SqliteStore.open(path);
    try {
      // Two takes of a full burst at 1 B/s: the second runs a burst into debt, as a waiting lease does.
      await store.configure("slow", { rate: 1, burst: 64 * 1024, kind: "bytes" });
      await store.configure("launches", { rate: 0.001, burst: 10, kind: "count" });
      for (const [name, n] of [["slow", 64 * 1024], ["launches", 10]] as const) {
        await store.take(name, n);
        await store.take(name, n);
      }
    } finally {
      await store.close();
    }
    const list = (await key(["list", "--store", `sqlite:${path}`])).stdout.toString().split("\n");
    expect(list[1]).toMatch(/^launches +count +0\.001\/s +10 +0 \(owes 10 tokens\) +\d{4}-/);
    expect(list[2]).toMatch(/^slow +bytes +1 B\/s +64\.00 KiB +0 \(owes 64\.00 KiB\) +\d{4}-/);
    const show = (await key(["show", "slow", "--store", `sqlite:${path}`])).stdout.toString();
    expect(show).toMatch(/^rate: {4}1 B\/s$/m);
    expect(show).toMatch(/^level: {3}0 \(owes 64\.00 KiB\)$/m);
  });

  // Regression: a debt under half a byte read "0 (owes 0 B)".
  it("shows a debt too small to show as an empty bucket", async () => {
    const path = join(dir, "crumb.db");
    const store = await SqliteStore.open(path);
    try {
      await store.configure("crumb", { rate: 0.001, burst: 100, kind: "bytes" });
      await store.take("crumb", 100);
      await store.take("crumb", 0.3);
    } finally {
      await store.close();
    }
    const show = (await key(["show", "crumb", "--store", `sqlite:${path}`])).stdout.toString();
    expect(show).toMatch(/^level: {3}0 B \(0%\)$/m);
    // Regression: "burst:   100 B (100 B)".
    expect(show).toMatch(/^burst: {3}100 B$/m);
  });
});

// Regression (issue 15): a second process at --key backup --rate 50mb silently raised a running 2mb transfer.
describe("--key with a --rate or --burst that changes the key: said once on standard error", () => {
  it.each([
    [["--rate", "50mb"], `tbucket: key "backup": rate changed from 2.00 MiB/s to 50.00 MiB/s, burst from 204.80 KiB to 5.00 MiB; every process on this key now shares the new settings\n`],
    [["--rate", "50mb", "--burst", "209715"], `tbucket: key "backup": rate changed from 2.00 MiB/s to 50.00 MiB/s; every process on this key now shares the new rate\n`],
    [["--burst", "1mb"], `tbucket: key "backup": burst changed from 204.80 KiB to 1.00 MiB; every process on this key now shares the new burst\n`],
    [["--rate", "2mb"], ""],
    [[], ""],
  ])("pipe %j", async (args, message) => {
    const store = `sqlite:${join(dir, `change-${args.join("")}.db`)}`;
    expect((await key(["set", "backup", "--rate", "2mb", "--store", store])).code).toBe(0);
    const pipe = await runCli(["--key", "backup", "--store", store, ...args], { input: "data\n" });
    expect([pipe.code, pipe.stderr, pipe.stdout.toString()]).toEqual([0, message, "data\n"]);
  });

  it("run: a launch rate on a byte key resets it, and says so", async () => {
    const store = `sqlite:${join(dir, "change-run.db")}`;
    expect((await key(["set", "api", "--rate", "5/s", "--store", store])).code).toBe(0);
    const run = await runCli(["run", "--key", "api", "--store", store, "--rate", "10", "--count", "1", "--", "true"]);
    expect([run.code, run.stderr]).toEqual([0, `tbucket: key "api": rate changed from 5/s to 10/s; every process on this key now shares the new rate\n`]);
  });
});
