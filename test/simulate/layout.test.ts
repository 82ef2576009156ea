import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const SIMULATE = join(import.meta.dirname, "../../src/simulate");

/** The relative imports of a source file, as written. */
function importsOf(path: string): string[] {
  return [...readFileSync(path, "utf8").matchAll(/from "(\.[^"]+)"/g)].map((match) => match[1]!);
}

describe("simulate's folders", () => {
  it("the engine (src/simulate) does not import its renderers (src/simulate/render)", () => {
    const engine = readdirSync(SIMULATE).filter((name) => name.endsWith(".ts"));
    const offending = engine.flatMap((name) => importsOf(join(SIMULATE, name)).filter((spec) => spec.startsWith("./render/")).map((spec) => `${name} → ${spec}`));
    expect(offending).toEqual([]);
  });

  it("the renderers import nothing from the command line", () => {
    const renderers = readdirSync(join(SIMULATE, "render")).filter((name) => name.endsWith(".ts"));
    expect(renderers.length).toBeGreaterThan(0);
    const offending = renderers.flatMap((name) => importsOf(join(SIMULATE, "render", name)).filter((spec) => spec.includes("/cli/")).map((spec) => `${name} → ${spec}`));
    expect(offending).toEqual([]);
  });
});
