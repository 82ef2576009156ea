import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative, sep } from "node:path";

/**
 * The import graph of src/, read from the source text: enough to hold the
 * layering and the absence of cycles without a dependency-analysis package.
 * Files are named by their path under src/ with forward slashes
 * ("cli/pipe/run.ts"); only relative imports are edges (packages and node:
 * modules are outside the graph).
 */
export interface FileImports {
  /** `import ... from`, `import "..."`, `export ... from`: loaded with the file. */
  static: string[];
  /** `import("...")`: loaded only when that code runs. */
  lazy: string[];
}

export type ImportGraph = Map<string, FileImports>;

export interface Edge {
  from: string;
  to: string;
}

/** Block comments, and line comments that start a line: neither imports anything. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** The specifiers a file imports, as written. */
export function parseImports(source: string): FileImports {
  const text = withoutComments(source);
  const fromClause = /^\s*(?:import|export)\b[^;"'`]*?\bfrom\s*["']([^"']+)["']/gm;
  const bare = /^\s*import\s*["']([^"']+)["']/gm;
  const dynamic = /\bimport\(\s*["']([^"']+)["']\s*\)/g;
  return {
    static: [...text.matchAll(fromClause), ...text.matchAll(bare)].map((match) => match[1]!),
    lazy: [...text.matchAll(dynamic)].map((match) => match[1]!),
  };
}

/** `./x.js` from `cli/pipe/register.ts` is `cli/pipe/x.ts`; undefined for a package or node: module. */
export function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  return posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/\.js$/, ".ts");
}

/** Every .ts file under `root` with the files it imports (resolved, under root). */
export function readImportGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
        const name = relative(root, path).split(sep).join("/");
        const imports = parseImports(readFileSync(path, "utf8"));
        const resolve = (specifiers: string[]) =>
          specifiers.map((specifier) => resolveSpecifier(name, specifier)).filter((target): target is string => target !== undefined);
        graph.set(name, { static: resolve(imports.static), lazy: resolve(imports.lazy) });
      }
    }
  };
  visit(root);
  return graph;
}

/** Imports that name no file in the graph: a typo, or a file moved without its importers. */
export function findMissingTargets(graph: ImportGraph): Edge[] {
  const missing: Edge[] = [];
  for (const [from, { static: eager, lazy }] of graph) {
    for (const to of [...eager, ...lazy]) if (!graph.has(to)) missing.push({ from, to });
  }
  return missing;
}

/**
 * The cycles among static imports, one per strongly connected component
 * (Tarjan), each as a path that returns to its start: `a → b → a`.
 */
export function findStaticCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const connect = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node)?.static ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfLoop = graph.get(node)?.static.includes(node) ?? false;
    if (component.length > 1 || selfLoop) cycles.push(cyclePath(graph, new Set(component), node));
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return cycles;
}

/** One concrete way round a strongly connected component, from `start` back to it. */
function cyclePath(graph: ImportGraph, component: Set<string>, start: string): string[] {
  const back = pathBetween(graph, start, start, (node) => (graph.get(node)?.static ?? []).filter((to) => component.has(to)));
  return back ?? [start, start];
}

/** The shortest path from `from` to `to` (at least one step) following `next`; undefined when there is none. */
function pathBetween(graph: ImportGraph, from: string, to: string, next: (node: string) => string[]): string[] | undefined {
  const cameFrom = new Map<string, string>();
  let frontier = [from];
  const seen = new Set<string>();
  while (frontier.length > 0) {
    const following: string[] = [];
    for (const node of frontier) {
      for (const target of next(node)) {
        if (target === to) {
          const path = [to, node];
          for (let at = node; at !== from; ) {
            at = cameFrom.get(at)!;
            path.push(at);
          }
          return path.reverse();
        }
        if (seen.has(target) || !graph.has(target)) continue;
        seen.add(target);
        cameFrom.set(target, node);
        following.push(target);
      }
    }
    frontier = following;
  }
  return undefined;
}

/**
 * Lazy imports that close a cycle: `a` loads `b` lazily while `b` (through
 * any imports, lazy or not) reaches `a` again, as a command's run.ts importing
 * its register.ts would. Each is reported as the path round: `a → b → ... → a`.
 */
export function findLazyCycles(graph: ImportGraph): string[][] {
  const cycles: string[][] = [];
  const anyImport = (node: string) => [...(graph.get(node)?.static ?? []), ...(graph.get(node)?.lazy ?? [])];
  for (const [from, { lazy }] of graph) {
    for (const to of lazy) {
      const back = to === from ? [to] : pathBetween(graph, to, from, anyImport);
      if (back) cycles.push([from, ...back]);
    }
  }
  return cycles;
}

/** What each layer (the first folder under src/, or "index.ts") may import, besides itself. */
export type LayerRules = Record<string, readonly string[]>;

export function layerOf(file: string): string {
  return file.includes("/") ? file.slice(0, file.indexOf("/")) : file;
}

/**
 * Imports, static or lazy, that a layer may not make. A file in a layer the
 * rules do not know is an offence too (its target is "(no rule for <layer>)"):
 * a new folder must be given its place.
 */
export function findLayerViolations(graph: ImportGraph, rules: LayerRules): Edge[] {
  const violations: Edge[] = [];
  for (const [from, { static: eager, lazy }] of graph) {
    const layer = layerOf(from);
    const allowed = rules[layer];
    if (allowed === undefined) {
      violations.push({ from, to: `(no rule for ${layer})` });
      continue;
    }
    for (const to of [...eager, ...lazy]) {
      const target = layerOf(to);
      if (target !== layer && !allowed.includes(target)) violations.push({ from, to });
    }
  }
  return violations;
}

/** Edges as lines for a failure message. */
export function describeEdges(edges: readonly Edge[]): string {
  return edges.map(({ from, to }) => `${from} → ${to}`).join("\n");
}

/** Cycles as lines for a failure message. */
export function describeCycles(cycles: readonly string[][]): string {
  return cycles.map((cycle) => cycle.join(" → ")).join("\n");
}
