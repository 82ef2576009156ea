import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, startCli } from "../helpers/cli.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("key-classes");

const UPLINK = ["--rate", "20mb", "--class", "interactive=5mb,prio=0", "--class", "backup=10mb,ceil=20mb,prio=1", "--class", "bulk=1mb,prio=2"];

async function storeWithUplink(): Promise<string[]> {
  const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
  const set = await runCli(["key", "set", "uplink", ...UPLINK, ...store]);
  expect([set.code, set.stderr]).toEqual([0, ""]);
  return store;
}

describe("tbucket key set --class", () => {
  it("defines classes on a key; key show lists each with its definition and use", async () => {
    const store = await storeWithUplink();
    const shown = await runCli(["key", "show", "uplink", ...store]);
    expect(shown.code).toBe(0);
    expect(shown.stdout.toString()).toMatch(/^limit 1: +20\.00 MiB\/s, burst 2\.00 MiB; level 2\.00 MiB \(full\)$/m);
    expect(shown.stdout.toString()).toMatch(/^class interactive: 5\.00 MiB\/s guaranteed, ceil 20\.00 MiB\/s, prio 0, weight 5\.00 MiB\/s; using nothing \(0%\)$/m);
    expect(shown.stdout.toString()).toMatch(/^class bulk: +1\.00 MiB\/s guaranteed, ceil 20\.00 MiB\/s, prio 2, weight 1\.00 MiB\/s; using nothing \(0%\)$/m);
    const listed = await runCli(["key", "list", ...store]);
    expect(listed.stdout.toString()).toMatch(/^uplink #1 +bytes +20\.00 MiB\/s /m);
    const json = JSON.parse((await runCli(["key", "show", "uplink", "--json", ...store])).stdout.toString());
    expect(json.classes.map((c: { name: string; rate: number; ceil: number; prio: number }) => [c.name, c.rate, c.ceil, c.prio])).toEqual([
      ["interactive", 5 * 2 ** 20, 20 * 2 ** 20, 0],
      ["backup", 10 * 2 ** 20, 20 * 2 ** 20, 1],
      ["bulk", 2 ** 20, 20 * 2 ** 20, 2],
    ]);
  });

  it("keeps the classes when the rate changes, refuses a rate below their guarantees, and drops them with --class none", async () => {
    const store = await storeWithUplink();
    const faster = await runCli(["key", "set", "uplink", "--rate", "30mb", ...store]);
    expect(faster.code).toBe(0);
    expect(faster.stdout.toString()).toMatch(/^class backup: +10\.00 MiB\/s guaranteed, ceil 20\.00 MiB\/s/m);
    const slower = await runCli(["key", "set", "uplink", "--rate", "10mb", ...store]);
    expect([slower.code, slower.stderr]).toEqual([
      2,
      "tbucket: key set uplink: the classes' guarantees add up to 16.00 MiB/s (16777216 B/s), more than the rate of 10.00 MiB/s (10485760 B/s); lower the classes with --class, drop them with --class none, or keep a higher rate\n",
    ]);
    const dropped = await runCli(["key", "set", "uplink", "--class", "none", ...store]);
    expect(dropped.code).toBe(0);
    expect(dropped.stdout.toString()).not.toMatch(/^class /m);
    const piped = await runCli(["--key", "uplink", ...store], { input: "free again\n" });
    expect([piped.code, piped.stdout.toString(), piped.stderr]).toEqual([0, "free again\n", ""]);
  });

  it.each([
    [["--class", "a=5mb,pri=2"], `tbucket: --class a=5mb,pri=2: "pri=2" is not a field; the fields are ceil, prio, weight, burst; e.g. "--class interactive=5mb,prio=0" or "--class backup=10mb,ceil=20mb,prio=1"\n`],
    [["--class", "none", "--class", "a=1mb"], "tbucket: --class none drops the key's classes, and cannot go with other --class; give either\n"],
    [["--class", "a=15mb", "--class", "b=10mb"], "tbucket: --class: the guarantees add up to 25.00 MiB/s (26214400 B/s), more than the rate of 20.00 MiB/s (20971520 B/s); lower them, or raise --rate (what is left of the rate is lent)\n"],
  ])("refuses %j with one line, exit 2", async (args, stderr) => {
    const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
    const result = await runCli(["key", "set", "uplink", "--rate", "20mb", ...args, ...store]);
    expect([result.code, result.stderr, result.stdout.toString()]).toEqual([2, stderr, ""]);
  });
});

describe("tbucket --key K --class NAME", () => {
  it("passes its input whole as its class; --stats names the class and its share", async () => {
    const store = await storeWithUplink();
    const input = Buffer.alloc(300_000, 7);
    const result = await runCli(["--key", "uplink", "--class", "bulk", "--stats-format", "json", ...store], { input });
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
    const stats = JSON.parse(result.stderr);
    expect(stats).toMatchObject({ class: "bulk", burst: Math.floor((2 * 2 ** 20 * 1) / 20) });
    expect(stats.share).toBeCloseTo(stats.averageBytesPerSecond / (20 * 2 ** 20), 3);
    const text = await runCli(["--key", "uplink", "--class", "bulk", "--stats", ...store], { input: "x" });
    expect(text.stderr).toMatch(/; class bulk, \d+\.\d% of the 20\.00 MiB\/s the classes share\n$/);
    const json = JSON.parse((await runCli(["key", "show", "uplink", "--json", ...store])).stdout.toString());
    expect(json.classes.find((c: { name: string }) => c.name === "bulk").usedRate).toBeGreaterThan(0);
  });

  it.each([
    [["--class", "video"], `tbucket: --class: key "uplink" has no class "video"; its classes are interactive, backup, bulk (name one of them, or define it with tbucket key set uplink --class, giving every class)\n`],
    [[], `tbucket: --key: key "uplink" is shared by classes (interactive, backup, bulk); name one with --class\n`],
    [["--class", "bulk", "--rate", "1mb"], `tbucket: --class: the key's limits and classes are set with "tbucket key set uplink --rate ... --class ..."; give --key uplink --class bulk without --rate, --burst or --window\n`],
  ])("on a key with classes refuses %j with one line, exit 2", async (args, stderr) => {
    const store = await storeWithUplink();
    const result = await runCli(["--key", "uplink", ...args, ...store], { input: "x\n" });
    expect([result.code, result.stderr, result.stdout.toString()]).toEqual([2, stderr, ""]);
  });

  it("refuses a class without --key, on a key not set, and on a key without classes", async () => {
    const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
    expect((await runCli(["--class", "bulk"], { input: "x" })).stderr).toBe(`tbucket: --class: needs --key, whose classes are set with "tbucket key set KEY --rate 20mb --class bulk=5mb"\n`);
    const unset = await runCli(["--key", "nokey", "--class", "bulk", ...store], { input: "x" });
    expect([unset.code, unset.stderr]).toEqual([2, `tbucket: --key: "nokey" is not set in ${store[1]}; define it and its classes first: tbucket key set nokey --rate 20mb --class bulk=5mb\n`]);
    await runCli(["key", "set", "plain", "--rate", "1mb", ...store]);
    const plain = await runCli(["--key", "plain", "--class", "bulk", ...store], { input: "x" });
    expect([plain.code, plain.stderr]).toEqual([2, `tbucket: --class: key "plain" has no classes; define them first: tbucket key set plain --rate 20mb --class bulk=5mb\n`]);
  });
});

describe("tbucket run --key K --class-of", () => {
  it("launches each job as the class its item names; --stats counts each class", async () => {
    const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
    await runCli(["key", "set", "api", "--rate", "100/s", "--burst", "10", "--class", "web=60/s,prio=0", "--class", "batch=20/s,prio=1", ...store]);
    const result = await runCli(["run", "--key", "api", "--class-of", "{2}", "-j", "1", "--stats-format", "json", "--input", "-", ...store, "--", "echo", "{}"], {
      input: "1 web\n2 batch\n3 web\n",
    });
    expect([result.code, result.stdout.toString()]).toEqual([0, "1 web\n2 batch\n3 web\n"]);
    expect(JSON.parse(result.stderr).classes).toEqual([
      { name: "web", launches: 2, share: 0.6667 },
      { name: "batch", launches: 1, share: 0.3333 },
    ]);
  });

  it.each([
    [["--class-of", "video", "--count", "1"], `tbucket: --class-of: key "api" has no class "video"; its classes are web, batch (name one of them, or define it with tbucket key set api --class, giving every class)\n`],
    [["--class", "a=1/s", "--count", "1"], `tbucket: --class: a shared key's classes are set with "tbucket key set api --class NAME=RATE ..."; with --key, choose each job's with --class-of\n`],
    [["--count", "1"], `tbucket: --key: key "api" is shared by classes (web, batch); name one with --class\n`],
  ])("refuses %j with one line, exit 2", async (args, stderr) => {
    const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
    await runCli(["key", "set", "api", "--rate", "100/s", "--class", "web=60/s", "--class", "batch=20/s", ...store]);
    const result = await runCli(["run", "--key", "api", ...args, ...store, "--", "true"]);
    expect([result.code, result.stderr]).toEqual([2, stderr]);
  });
});

describe("tbucket --key K --class NAME when things go wrong", () => {
  it("Redis lost mid-pipe and back empty 2 s later: the pipe waits, makes the key and its classes again, and ends whole", async () => {
    const server = await startRedisServer();
    try {
      const store = ["--store", server.url];
      await runCli(["key", "set", "uplink", "--rate", "1mb", "--class", "interactive=500kb,prio=0", "--class", "bulk=100kb,prio=1", ...store]);
      const input = Buffer.from(Array.from({ length: 2 * 1024 * 1024 }, (_, i) => i % 251));
      const pipe = startCli(["--key", "uplink", "--class", "bulk", ...store], { input });
      await pipe.waitForBytes(1);
      await server.stop("SIGKILL");
      await new Promise((resolve) => setTimeout(resolve, 2000));
      await server.start();
      const result = await pipe.exited;
      expect([result.code, result.stderr]).toEqual([0, ""]);
      expect(result.stdout.equals(input)).toBe(true);
      const shown = JSON.parse((await runCli(["key", "show", "uplink", "--json", ...store])).stdout.toString());
      expect(shown.classes.map((c: { name: string }) => c.name)).toEqual(["interactive", "bulk"]);
    } finally {
      await server.stop();
    }
  }, 30_000);

  it("SIGTERM while a class waits: ends at once and quietly, by the signal", async () => {
    const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
    await runCli(["key", "set", "slow", "--rate", "10kb", "--burst", "1kb", "--class", "a=5kb", ...store]);
    const pipe = startCli(["--key", "slow", "--class", "a", ...store], { stdin: "endless" });
    await pipe.waitForBytes(1);
    pipe.signal("SIGTERM");
    const result = await pipe.exited;
    expect([result.code ?? result.signal, result.stderr]).toEqual(["SIGTERM", ""]);
  });

  it("its classes dropped while it runs: one line saying so, exit 1, what was written intact", async () => {
    const store = ["--store", `sqlite:${join(tempDir(), "k.db")}`];
    await runCli(["key", "set", "live", "--rate", "20kb", "--burst", "2kb", "--class", "a=5kb", ...store]);
    const pipe = startCli(["--key", "live", "--class", "a", ...store], { stdin: "endless" });
    await pipe.waitForBytes(1);
    await runCli(["key", "set", "live", "--class", "none", ...store]);
    const result = await pipe.exited;
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `tbucket: store ${store[1]}: key live has no classes; define them with tbucket key set live --class NAME=RATE, or take without --class; stopped, and what was written so far is intact\n`,
    );
  });
});
