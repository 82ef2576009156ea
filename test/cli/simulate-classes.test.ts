/**
 * `tbucket simulate --class`, end to end on the built binary: a small trace
 * whose every decision follows the class rules (worked out in the comments),
 * under drop and queue, and one line with exit 2 for each mistake.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

/** Two classes of 10/s, burst 4: web guaranteed 6/s (its bucket holds 2.4), batch 4/s (1.6), prio 0 before 1. */
const CLASSES = ["-r", "10/s", "-b", "4", "--class", "web=6/s,prio=0", "--class", "batch=4/s,prio=1"];
const TRACE = "0 web\n0 web\n0 batch\n0.05 batch\n0.1 web\n0.1 batch\n0.2 web\n0.25 batch\n0.3 web\n";

async function ok(args: string[], input = TRACE): Promise<string> {
  const result = await runCli(["simulate", ...CLASSES, "--trace", "-", "--class-field", "2", ...args], { input });
  expect(result.stderr.toString()).toBe("");
  expect(result.code).toBe(0);
  return result.stdout.toString("utf8");
}

async function usage(args: string[], message: string, input = TRACE): Promise<void> {
  const result = await runCli(["simulate", ...args], { input });
  expect(result.stderr.toString()).toBe(`tbucket: ${message}\n`);
  expect(result.code).toBe(2);
}

describe("tbucket simulate --class: drop", () => {
  it("decides each event by the rules, naming its class", async () => {
    // At 0.05 batch's guarantee holds 0.8 and the key 1.5, of which web (asking) keeps 0.7: nothing to lend.
    // At 0.2 the key holds 1 and the guarantee buckets of the two (both asking) 0.6 and 0.4: refused likewise.
    expect(await ok(["--format", "jsonl"])).toBe(
      [
        `{"t":0,"class":"web","cost":1,"admitted":true,"wait":0,"tokens":3}`,
        `{"t":0,"class":"web","cost":1,"admitted":true,"wait":0,"tokens":2}`,
        `{"t":0,"class":"batch","cost":1,"admitted":true,"wait":0,"tokens":1}`,
        `{"t":0.05,"class":"batch","cost":1,"admitted":false,"wait":0,"tokens":1.5}`,
        `{"t":0.1,"class":"web","cost":1,"admitted":true,"wait":0,"tokens":1}`,
        `{"t":0.1,"class":"batch","cost":1,"admitted":true,"wait":0,"tokens":0}`,
        `{"t":0.2,"class":"web","cost":1,"admitted":false,"wait":0,"tokens":1}`,
        `{"t":0.25,"class":"batch","cost":1,"admitted":false,"wait":0,"tokens":1.5}`,
        `{"t":0.3,"class":"web","cost":1,"admitted":true,"wait":0,"tokens":1}`,
        "",
      ].join("\n"),
    );
  });

  it("gives each class's series, a column a class, in the table and CSV, and in each JSON step", async () => {
    // The decisions above, by 100 ms step: web 2 and batch 1, then 1 and 1, then none, then web 1.
    const csv = (await ok(["--format", "csv", "--step", "100ms"])).trimEnd().split("\n");
    expect(csv[0]).toBe("start_s,end_s,arrived,admitted,refused,level,max_wait_s,admitted_web,admitted_batch");
    expect(csv.slice(1).map((line) => line.split(",").slice(-2).join(" "))).toEqual(["2 1", "1 1", "0 0", "1 0"]);
    const table = (await ok(["--format", "table", "--step", "100ms"])).split("\n");
    expect(table[0]).toMatch(/max wait \(s\) +web +batch$/);
    expect(table[1]).toMatch(/ 2 +1$/);
    const json = JSON.parse(await ok(["--format", "json", "--step", "100ms"]));
    expect(json.steps.map((step: { classes: Record<string, number> }) => step.classes)).toEqual([
      { web: 2, batch: 1 },
      { web: 1, batch: 1 },
      { web: 0, batch: 0 },
      { web: 1, batch: 0 },
    ]);
  });

  it("draws each class's series in the SVG, named with its guarantee, on the scale of the admitted bars", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tbucket-svg-classes-"));
    try {
      const file = join(dir, "plot.svg");
      await ok(["--format", "csv", "--step", "100ms", "--svg", file]);
      const svg = readFileSync(file, "utf8");
      expect(svg).toContain("<text x=\"108\" y=\"70\">web admitted (6/s guaranteed)</text>");
      expect(svg).toContain("batch admitted (4/s guaranteed)</text>");
      // Each step is a flat segment: its height is the class's admitted count (the CSV's: web 2 1 0 1, batch 1 1 0 0).
      const heights = (name: string) => {
        const path = new RegExp(`<g data-series="class" data-class="${name}"><path d="([^"]+)"`).exec(svg)![1]!;
        const ys = [...path.matchAll(/[ML](\d+(?:\.\d+)?),(\d+(?:\.\d+)?)/g)].map((point) => Number(point[2]));
        return ys.filter((_y, i) => i % 2 === 0);
      };
      const counts = { web: [2, 1, 0, 1], batch: [1, 1, 0, 0] };
      const zeroY = heights("web")[2]!;
      const perEvent = zeroY - heights("web")[1]!;
      expect(perEvent).toBeGreaterThan(0);
      for (const [name, expected] of Object.entries(counts)) expect(heights(name).map((y) => (zeroY - y) / perEvent)).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("sums up what each class got", async () => {
    expect(await ok(["--format", "summary"])).toBe(
      [
        "bucket        rate 10/s, burst 4, drop (Allow), one bucket shared by 2 classes",
        "arrivals      9 over 0.3 s (30/s)",
        "admitted      6  (66.67%)",
        "refused       3  (33.33%), the first at 0.05 s",
        "throughput    20/s admitted over 0.3 s (the burst included)",
        "bucket empty  33.33% of the time",
        "classes       web (6/s, prio 0): admitted 4 of 5, 66.67% of what was admitted, 13.3/s, refused 1",
        "              batch (4/s, prio 1): admitted 2 of 4, 33.33% of what was admitted, 6.67/s, refused 2",
        "",
      ].join("\n"),
    );
  });

  it("puts the classes in the JSON summary", async () => {
    const summary = JSON.parse(await ok(["--format", "json"])) as { classes: Array<{ name: string; admitted: number; refused: number; share: number; burst: number; weight: number }> };
    expect(summary.classes.map(({ name, admitted, refused, share, burst, weight }) => ({ name, admitted, refused, share, burst, weight }))).toEqual([
      { name: "web", admitted: 4, refused: 1, share: 0.666666667, burst: 2.4, weight: 6 },
      { name: "batch", admitted: 2, refused: 2, share: 0.333333333, burst: 1.6, weight: 4 },
    ]);
  });

  it("gives events naming no class to --default-class, else to the first class", async () => {
    const arrivals = ["simulate", ...CLASSES, "--arrivals", "burst 5", "--format", "jsonl"];
    const first = await runCli(arrivals);
    expect(first.stdout.toString().split("\n").filter((line) => line.includes(`"class":"web"`))).toHaveLength(5);
    const batch = await runCli([...arrivals, "--default-class", "batch"]);
    // batch alone: 1 from its guarantee bucket (1.6), then loans while the key holds 1 more than the 0.6 left in that bucket: 3.
    expect(batch.stdout.toString().split("\n").filter((line) => line.includes(`"class":"batch","cost":1,"admitted":true`))).toHaveLength(3);
  });
});

describe("tbucket simulate --class: queue", () => {
  it("serves each class's line by the rules, and reports waits per class", async () => {
    expect(await ok(["--policy", "queue", "--format", "summary"])).toBe(
      [
        "bucket         rate 10/s, burst 4, queue (Reserve), one bucket shared by 2 classes",
        "arrivals       9 over 0.3 s (30/s)",
        "admitted       9  (100.00%)",
        "refused        0  (0.00%)",
        "throughput     15/s admitted over 0.6 s, until the last admitted one was served (the burst included)",
        "wait           p50 50 ms, p90 350 ms, p99 350 ms, max 350 ms",
        "longest queue  3 waiting at once",
        "bucket empty   27.78% of the time",
        "classes        web (6/s, prio 0): admitted 5 of 5, 55.56% of what was admitted, 8.33/s, wait p50 0, max 133 ms",
        "               batch (4/s, prio 1): admitted 4 of 4, 44.44% of what was admitted, 6.67/s, wait p50 50 ms, max 350 ms",
        "",
      ].join("\n"),
    );
  });

  it("prints each event in arrival order with its class's wait", async () => {
    const lines = (await ok(["--policy", "queue", "--format", "jsonl"])).trimEnd().split("\n").map((line) => JSON.parse(line) as { t: number; class: string; wait: number });
    expect(lines.map((e) => [e.t, e.class, e.wait])).toEqual([
      [0, "web", 0],
      [0, "web", 0],
      [0, "batch", 0],
      [0.05, "batch", 0.05],
      [0.1, "web", 0],
      [0.1, "batch", 0.25],
      [0.2, "web", 0.066666667],
      [0.25, "batch", 0.35],
      [0.3, "web", 0.133333334],
    ]);
  });
});

describe("tbucket simulate --class: mistakes are one line and exit 2", () => {
  const trace = ["--trace", "-"];
  const example = `e.g. "--class interactive=20/s,prio=0" or "--class batch=5/s,ceil=50/s,prio=1,weight=2"`;
  it.each([
    [["-r", "10/s", "-b", "4", "--class", "web=6/s", "--class", "batch=5/s", ...trace], "--class: the guarantees add up to 11/s, more than the rate of 10/s; lower them, or raise --rate (what is left of the rate is lent)"],
    [[...CLASSES, ...trace, "--default-class", "bulk"], `--default-class: no class "bulk"; the classes are web, batch (define it with --class bulk=RATE, or name one of them)`],
    [["-r", "10/s", "-b", "4", "--class", "web", ...trace], `--class web: missing its guarantee after the name; ${example}`],
    [["-r", "10/s", "-b", "4", "--class", "web=6/s,cap=3", ...trace], `--class web=6/s,cap=3: "cap=3" is not a field; the fields are ceil, prio, weight, burst; ${example}`],
    [["-r", "10/s", "-b", "4", "--class", "web=6mb", ...trace], `--class web=6mb: the guarantee: "6mb" is a byte rate, not a count rate; ${example}`],
    [["-r", "10/s", "-b", "4", "--class", "web=6/s,ceil=2/s", ...trace], "--class web: ceil 2/s is below its guarantee of 6/s; a ceil is at least the guarantee"],
    [["-r", "10/s", "-b", "4", "--class", "web=6/s,prio=x", ...trace], `--class web=6/s,prio=x: prio: "x" is not a whole number 0 or more; ${example}`],
    [["-r", "10/s", "-b", "4", "--class", "web=6/s", "--class", "web=1/s", ...trace], `--class: "web" is defined twice; give each class one --class`],
    [["-r", "10/s", "-b", "4", "--class-field", "2", ...trace], `--class-field: only with --class, which defines the classes it names; e.g. "--class web=60/s --class batch=40/s --class-field 2"`],
    [[...CLASSES, "--class-field", "2", "--arrivals", "steady 1/s for 2s"], "--class-field: only with --trace; a pattern's arrivals all go to the --default-class (or the first class)"],
    [[...CLASSES, "--per-key", "--key-field", "2", ...trace], "--class: not with --per-key yet; simulate the classes of one key, without --per-key"],
  ])("%j", async (args, message) => usage(args, message));

  it("an event naming a class not defined", async () => {
    await usage([...CLASSES, ...trace, "--class-field", "2", "--format", "jsonl"], `--trace standard input (--class-field 2): no class "bulk"; the classes are web, batch (define it with --class bulk=RATE, or name one of them)`, "0 web\n0 bulk\n");
  });

  it("an event without the class field", async () => {
    await usage([...CLASSES, ...trace, "--class-field", "2"], "--trace standard input: line 1: has 1 field, expected at least 2 (--class-field 2); or pass --skip-bad to skip such lines", "0\n");
  });
});
