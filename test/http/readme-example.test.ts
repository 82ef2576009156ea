import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { start } from "../helpers/cli.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** The README's tbucket/http example, exactly as the README shows it (after `<!-- http-example -->`). */
export const HTTP_EXAMPLE = `import http from "node:http";
import { rateLimit } from "tbucket/http";

// Each client address: 1 request a second, bursts of 2. Over that: 429 with Retry-After.
const limit = rateLimit({ rate: 1, burst: 2 });
const server = http.createServer(limit.wrap((req, res) => res.end("hello\\n")));

server.listen(0, "127.0.0.1", async () => {
  const url = \`http://127.0.0.1:\${server.address().port}/\`;
  for (let i = 0; i < 3; i++) {
    const res = await fetch(url);
    console.log(res.status, res.headers.get("retry-after"), res.headers.get("ratelimit"));
  }
  server.close();
});
`;

describe("the README's tbucket/http example", () => {
  it("runs against the built package and prints what its comment says", async () => {
    const readme = readFileSync(`${root}README.md`, "utf8");
    const shown = /<!-- http-example -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(shown).toBe(HTTP_EXAMPLE);
    // Run from the package folder, "tbucket/http" resolves to this package through its own exports; nothing is written
    // into the clone, which a second suite beside this one may be running from.
    const result = await start(process.execPath, ["--input-type=module", "--eval", HTTP_EXAMPLE], { cwd: root }).exited;
    expect([result.code, result.stderr]).toEqual([0, ""]);
    expect(result.stdout.toString()).toBe(['200 null "default";r=1;t=1', '200 null "default";r=0;t=2', '429 1 "default";r=0;t=1', ""].join("\n"));
  });
});

describe("the README's Fastify and fetch example", () => {
  it("runs against the built package and prints what the README says", async () => {
    const readme = readFileSync(`${root}README.md`, "utf8");
    const shown = /<!-- framework-example -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(shown).toContain('from "tbucket/fastify"');
    const result = await start(process.execPath, ["--input-type=module", "--eval", shown!], { cwd: root }).exited;
    expect([result.code, result.stderr]).toEqual([0, ""]);
    expect(result.stdout.toString()).toBe(["200", "429", "200", "200", "429", ""].join("\n"));
    expect(readme).toContain("It prints 200, 429, 200, then 200, 429.");
  });
});
