import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LIMIT_OPTION_NAMES } from "../../src/http/request-limiter.js";
import { rateLimit as httpLimit } from "../../src/http/index.js";
import { rateLimit as fetchLimit } from "../../src/http/fetch.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const doc = readFileSync(`${root}docs/http.md`, "utf8");

/** The option names in the first column of a table of docs/http.md, after `heading`. */
function documented(tableAfter: string): string[] {
  const rest = doc.slice(doc.indexOf(tableAfter));
  const table = rest.slice(0, rest.indexOf("\n\n", rest.indexOf("| ---")));
  return table
    .split("\n")
    .slice(2)
    .flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`(\w+)(?:\([^`]*\))?`/g)].map((match) => match[1]!));
}

/** What a binding says the options are, from its own refusal of one it does not know. */
function optionsOf(make: (options: never) => unknown): string[] {
  try {
    make({ rate: 1, burst: 1, notAnOption: 1 } as never);
  } catch (error) {
    return [...String((error as Error).message).split("the options are ")[1]!.matchAll(/`(\w+)`/g)].map((match) => match[1]!);
  }
  throw new Error("an unknown option was not refused");
}

describe("docs/http.md", () => {
  it("documents every option the bindings take, and no other", () => {
    const shared = documented("| option | default | example | meaning |");
    const own = documented("| option | binding | default | meaning |");
    expect([...new Set(shared)].sort()).toEqual([...LIMIT_OPTION_NAMES].sort());
    expect(new Set([...shared, ...own])).toEqual(new Set([...optionsOf(httpLimit), ...optionsOf(fetchLimit), "global"]));
  });

  it("names no option that no test under test/http sets", () => {
    const tests = readdirSync(`${root}test/http`)
      .filter((name) => name.endsWith(".ts"))
      .map((name) => readFileSync(`${root}test/http/${name}`, "utf8"))
      .join("\n");
    const options = [...documented("| option | default | example | meaning |"), ...documented("| option | binding | default | meaning |")];
    expect(options.filter((name) => !new RegExp(`\\b${name}[?]?:`).test(tests))).toEqual([]);
  });
});
