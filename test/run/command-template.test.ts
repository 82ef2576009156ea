import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildCommandLine, takesItems } from "../../src/run/command-template.js";
import { shellQuote } from "../../src/run/shell-quote.js";

describe("buildCommandLine", () => {
  it("puts the item in place of {} and the number in place of {#}, each argument staying one argument", () => {
    const line = buildCommandLine(["curl", "-s", "https://x/{}?n={#}", "--", "{}"], { number: 7, item: "a b;$(x)" }, false);
    expect(line).toEqual({ file: "curl", args: ["-s", "https://x/a b;$(x)?n=7", "--", "a b;$(x)"] });
  });

  it("does not substitute inside the item itself", () => {
    expect(buildCommandLine(["echo", "{}"], { number: 3, item: "{#}{}" }, false).args).toEqual(["{#}{}"]);
  });

  it("with a shell, joins the words into one script and quotes the item", () => {
    const line = buildCommandLine(["echo {} | wc -c", ">", "out-{#}"], { number: 2, item: "it's" }, true);
    expect(line).toEqual({ file: "/bin/sh", args: ["-c", `echo 'it'\\''s' | wc -c > out-2`] });
  });

  it("knows when the command takes items", () => {
    expect(takesItems(["curl", "{}"])).toBe(true);
    expect(takesItems(["curl", "x{}y"])).toBe(true);
    expect(takesItems(["echo", "{#}"])).toBe(false);
  });
});

describe("shellQuote", () => {
  it("leaves plain words alone and quotes the rest", () => {
    expect(shellQuote("abc-1.txt")).toBe("abc-1.txt");
    expect(shellQuote("")).toBe("''");
    expect(shellQuote("$(touch pwned); rm -rf x")).toBe(`'$(touch pwned); rm -rf x'`);
  });

  it("makes /bin/sh see exactly the text, whatever it holds", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }).filter((s) => !s.includes("\0")), (text) => {
        const out = execFileSync("/bin/sh", ["-c", `printf '%s' ${shellQuote(text)}`]);
        expect(out.toString("utf8")).toBe(Buffer.from(text, "utf8").toString("utf8"));
      }),
      { numRuns: 60 },
    );
  });
});
