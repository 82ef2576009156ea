import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  describeCycles,
  describeEdges,
  findLayerViolations,
  findLazyCycles,
  findMissingTargets,
  findStaticCycles,
  type ImportGraph,
  type LayerRules,
  parseImports,
  readImportGraph,
} from "./import-graph.js";

/**
 * The layering of docs STYLE.md and issue 14: core <- stream, run, simulate,
 * store <- http, proxy <- cli. Each layer may import itself and what is listed;
 * the lower layers do not import one another.
 */
const LAYERS: LayerRules = {
  core: [],
  stream: ["core"],
  run: ["core"],
  simulate: ["core"],
  store: ["core"],
  http: ["core", "stream", "store", "run"],
  proxy: ["core", "stream", "store", "run"],
  cli: ["core", "stream", "run", "simulate", "store", "http", "proxy"],
  // The library's entry point: everything but the command line.
  "index.ts": ["core", "stream", "run", "simulate", "store", "http", "proxy"],
};

const SRC = join(import.meta.dirname, "../../src");

/** A graph written by hand: each file's static and lazy imports, already resolved. */
function graphOf(files: Record<string, { static?: string[]; lazy?: string[] }>): ImportGraph {
  return new Map(Object.entries(files).map(([name, imports]) => [name, { static: imports.static ?? [], lazy: imports.lazy ?? [] }]));
}

describe("src/ import graph", () => {
  const graph = readImportGraph(SRC);

  it("is read whole: every layer has files, and every relative import names a file", () => {
    for (const layer of ["core", "stream", "run", "simulate", "store", "cli"]) {
      expect([...graph.keys()].some((file) => file.startsWith(`${layer}/`)), layer).toBe(true);
    }
    expect(graph.get("cli/program.ts")?.static).toContain("cli/pipe/register.ts");
    expect(graph.get("cli/pipe/register.ts")?.lazy).toEqual(["cli/pipe/run.ts"]);
    expect(describeEdges(findMissingTargets(graph))).toBe("");
  });

  it("has no cycle among static imports", () => {
    expect(describeCycles(findStaticCycles(graph))).toBe("");
  });

  it("has no lazy import that leads back to its importer", () => {
    expect(describeCycles(findLazyCycles(graph))).toBe("");
  });

  it("keeps to the layers: core <- stream, run, simulate, store <- http, proxy <- cli", () => {
    expect(describeEdges(findLayerViolations(graph, LAYERS))).toBe("");
  });

  it("gives each command of cli/ one shape: register -> options, register -(lazy)-> run -> options", () => {
    const offending: string[] = [];
    for (const [file, { static: eager, lazy }] of graph) {
      const match = /^cli\/([^/]+)\/(options|register|run)\.ts$/.exec(file);
      if (!match) continue;
      const [, command, role] = match;
      const sibling = (name: string) => `cli/${command}/${name}.ts`;
      if (role === "options" && (eager.includes(sibling("register")) || eager.includes(sibling("run")))) offending.push(`${file} imports its command's register or run`);
      if (role === "run" && [...eager, ...lazy].includes(sibling("register"))) offending.push(`${file} imports its register`);
      if (role === "register" && eager.includes(sibling("run"))) offending.push(`${file} loads run eagerly`);
    }
    expect(offending).toEqual([]);
  });
});

describe("the import-graph checks", () => {
  it("reads static, re-exported, side-effect and lazy imports, not those in comments", () => {
    const source = [
      `import { a } from "./a.js";`,
      `import type {`,
      `  B,`,
      `} from "../b.js";`,
      `export { c } from "./c.js";`,
      `export * from "./d.js";`,
      `import "./e.js";`,
      `import { readFileSync } from "node:fs";`,
      `/** Loads it with import("./not-f.js") when asked. */`,
      `// import { g } from "./not-g.js";`,
      `const f = await import("./f.js");`,
    ].join("\n");
    expect(parseImports(source)).toEqual({ static: ["./a.js", "../b.js", "./c.js", "./d.js", "node:fs", "./e.js"], lazy: ["./f.js"] });
  });

  it("reports a cycle of static imports as the path round it", () => {
    const graph = graphOf({
      "cli/a.ts": { static: ["cli/b.ts"] },
      "cli/b.ts": { static: ["cli/c.ts"] },
      "cli/c.ts": { static: ["cli/a.ts"] },
      "cli/d.ts": { static: ["cli/a.ts"] },
    });
    expect(findStaticCycles(graph)).toEqual([["cli/a.ts", "cli/b.ts", "cli/c.ts", "cli/a.ts"]]);
    expect(findStaticCycles(graphOf({ "core/x.ts": { static: ["core/x.ts"] } }))).toEqual([["core/x.ts", "core/x.ts"]]);
    expect(findStaticCycles(graphOf({ "cli/a.ts": { static: ["cli/b.ts"] }, "cli/b.ts": {} }))).toEqual([]);
  });

  it("reports a lazy import whose target leads back, and not a lazy import down a tree", () => {
    const circle = graphOf({
      "cli/x/register.ts": { static: ["cli/x/options.ts"], lazy: ["cli/x/run.ts"] },
      "cli/x/run.ts": { static: ["cli/x/options.ts", "cli/x/register.ts"] },
      "cli/x/options.ts": {},
    });
    expect(findStaticCycles(circle)).toEqual([]);
    expect(findLazyCycles(circle)).toEqual([["cli/x/register.ts", "cli/x/run.ts", "cli/x/register.ts"]]);
    const tree = graphOf({
      "cli/x/register.ts": { static: ["cli/x/options.ts"], lazy: ["cli/x/run.ts"] },
      "cli/x/run.ts": { static: ["cli/x/options.ts"] },
      "cli/x/options.ts": {},
    });
    expect(findLazyCycles(tree)).toEqual([]);
  });

  it("reports an import against the layers, sideways, upwards, or from a folder with no rule", () => {
    const graph = graphOf({
      "core/units.ts": { static: ["cli/errors.ts"] },
      "stream/throttle.ts": { static: ["core/units.ts", "store/bucket-store.ts"] },
      "store/bucket-store.ts": { static: ["core/units.ts"] },
      "cli/errors.ts": { static: ["stream/throttle.ts"], lazy: ["store/bucket-store.ts"] },
      "index.ts": { static: ["core/units.ts"], lazy: ["cli/errors.ts"] },
      "extra/thing.ts": { static: ["core/units.ts"] },
    });
    expect(describeEdges(findLayerViolations(graph, LAYERS)).split("\n")).toEqual([
      "core/units.ts → cli/errors.ts",
      "stream/throttle.ts → store/bucket-store.ts",
      "index.ts → cli/errors.ts",
      "extra/thing.ts → (no rule for extra)",
    ]);
  });

  it("reports an import that names no file", () => {
    expect(findMissingTargets(graphOf({ "cli/a.ts": { static: ["cli/gone.ts"] } }))).toEqual([{ from: "cli/a.ts", to: "cli/gone.ts" }]);
  });
});
