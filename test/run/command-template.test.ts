import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { commandLines, takesItems } from "../../src/run/command-template.js";
import { parseShellTemplate, shellQuote, ShellTemplateError } from "../../src/run/shell-quote.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("shell-template");
const buildCommandLine = (template: readonly string[], job: { number: number; item: string | undefined }, shell: boolean) => commandLines(template, shell)(job);

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

/** Items that would run `touch pwned` if any of them reached the shell as code. */
const HOSTILE = ["$(touch pwned)", "`touch pwned`", '"; touch pwned; "', "'; touch pwned; '", "\\", "\\\"$(touch pwned)", "a\ntouch pwned\n", "it's \"q\" $HOME", "", "x'$(touch pwned)'y", '"$(touch pwned)"'];
/** Shells to read the scripts with: /bin/sh, and bash beside it where there is one (it is /bin/sh elsewhere). */
const SHELLS = ["/bin/sh", ...["/bin/bash", "/usr/bin/bash"].filter(existsSync).slice(0, 1)];

describe("--shell: each {} is quoted for the place it lands in", () => {
  // Each template, and what the shell must print for an item.
  const cases: Array<[string, (item: string) => string]> = [
    ["printf '%s|' {}", (item) => `${item}|`],
    ['printf \'%s|\' "abc{}def"', (item) => `abc${item}def|`],
    ["printf '%s|' 'abc{}def'", (item) => `abc${item}def|`],
    ['printf \'%s|\' "$(printf \'%s\' "<{}>")"', (item) => `<${item}>|`],
    ["printf '%s|' $(printf '%s' {} | od -An -c | wc -l) >/dev/null; printf '%s|' {}", (item) => `${item}|`],
    ['x="{}" && printf \'%s|\' "$x" "{}"', (item) => `${item}|${item}|`],
    ["printf '%s|' \"a'{}'b\"", (item) => `a'${item}'b|`],
    ['cat <<EOF\nfixed\nEOF\nprintf \'%s|\' "{}"', (item) => `fixed\n${item}|`],
    ["printf '%s|' {} # a comment", (item) => `${item}|`],
    ['printf \'%s|\' "${HOME+set}{}"', (item) => `set${item}|`],
  ];
  for (const shell of SHELLS) {
    it(`${shell}: hostile items are printed, never run`, ({ expect }) => {
      const dir = tempDir();
      for (const [template, expected] of cases) {
        const build = commandLines([template], true);
        for (const item of HOSTILE) {
          const { args } = build({ number: 1, item });
          const out = execFileSync(shell, args, { cwd: dir, env: { HOME: "/home/x", PATH: process.env.PATH } });
          expect(out.toString(), `${template} with ${JSON.stringify(item)}`).toBe(expected(item));
        }
      }
      expect(existsSync(join(dir, "pwned"))).toBe(false);
    });
  }

  it("keeps the item's text exactly, in every context, for any item", () => {
    const build = commandLines([`printf '%s|%s|%s' {} '<{}>' "<{}>"`], true);
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 30 }).filter((s) => !s.includes("\0")), (item) => {
        const out = execFileSync("/bin/sh", build({ number: 1, item }).args);
        const text = Buffer.from(item, "utf8").toString("utf8");
        expect(out.toString("utf8")).toBe(`${text}|<${text}>|<${text}>`);
      }),
      { numRuns: 40 },
    );
  });

  it("refuses a {} no quoting can keep from being code, saying what to write instead", () => {
    const refused: Array<[string, RegExp]> = [
      ["echo `echo {}`", /inside backquotes cannot be quoted safely; write \$\(…\) instead/],
      ["echo $'a{}'", /inside \$'…'/],
      ["echo ${x:-{}}", /inside \$\{…\}/],
      ["echo $(( {} + 1 ))", /inside \$\(\(…\)\)/],
      ["cat <<EOF\n{}\nEOF", /inside a here-document cannot be quoted safely; give the item/],
      ["cat <<'EOF'\nx {}\nEOF", /inside a here-document/],
      ["cat <<{}", /here-document's delimiter/],
      ["echo hi # {}", /inside a # comment/],
      ["echo \\{}", /right after a backslash/],
      ['echo "\\{}"', /right after a backslash/],
      ["echo ${}", /right after a \$/],
      ["echo $(case a in a) echo ;; esac) {}", /after a case inside \$\(…\)/],
      ["echo $'a\\'b' {}", /after a \$'…' holding/],
      ["echo $((echo a); echo b) {}", /after a \$\(\(…\)\) holding/],
      ["echo $[{}]", /inside \$\[…\] \(bash arithmetic\)/],
      ["(( {} > 1 ))", /inside \(\(…\)\) \(bash arithmetic\)/],
      ["for (( i={}; 0; )); do :; done", /inside \(\(…\)\)/],
      ["a[{}]=1", /inside an array subscript/],
    ];
    for (const [script, message] of refused) {
      expect(() => parseShellTemplate(script), script).toThrow(ShellTemplateError);
      expect(() => parseShellTemplate(script), script).toThrow(message);
    }
  });

  it("for any script built of quotes, substitutions and {}, a hostile item never runs (or the {} is refused)", () => {
    const dir = tempDir();
    const token = fc.constantFrom("{}", "{}", "'", '"', "$(", ")", " ", "echo ", "\\", "$", "x", ";", "\n", "#", "`", "<<E\n", "\nE\n", "${x}", "$((1))", "(", "$'", "case ", "$[", "]", "((", "a[");
    // A script that runs a substitution's output as its command (`$(echo {})`) runs the item's words, as
    // `eval` would: the script asks for it. What must never happen is the item parsed as shell code, so the
    // newline payload ends in ";": parsed, it makes "pwned"; split into words, "pwned;".
    const items = ["$(touch pwned)", "`touch pwned`", "'; touch pwned; '", '"; touch pwned; "', "\ntouch pwned;\n"];
    fc.assert(
      fc.property(fc.array(token, { minLength: 1, maxLength: 12 }), (tokens) => {
        // Each run on its own: a shrunk counterexample must have made the file itself.
        rmSync(join(dir, "pwned"), { force: true });
        const script = tokens.join("");
        let build: ReturnType<typeof commandLines>;
        try {
          build = commandLines([script], true);
        } catch (error) {
          expect(error).toBeInstanceOf(ShellTemplateError);
          return;
        }
        for (const shell of SHELLS) {
          for (const item of items) {
            try {
              execFileSync(shell, build({ number: 1, item }).args, { cwd: dir, stdio: "ignore", timeout: 2000 });
            } catch {
              // Most random scripts are not valid shell: what matters is that nothing ran.
            }
            expect(existsSync(join(dir, "pwned")), `${JSON.stringify(script)} with ${JSON.stringify(item)} in ${shell}`).toBe(false);
          }
        }
      }),
      { numRuns: 150 },
    );
  }, 60_000);

  it("finds the context of each {}", () => {
    expect(parseShellTemplate(`a {} '{}' "{}" "$(b {} "{}")" 'x"{}"'`).contexts).toEqual(["unquoted", "single", "double", "unquoted", "double", "single"]);
    expect(parseShellTemplate("echo {#} {}").parts).toEqual(["echo {#} ", ""]);
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
