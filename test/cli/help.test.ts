import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("--help on every command", () => {
  it.each([["pipe"], ["run"], ["simulate"], ["key"], ["key", "set"], ["key", "list"], ["completion"]])(
    "tbucket %s --help ends with examples of that command",
    async (...command: string[]) => {
      const help = await runCli([...command, "--help"]);
      expect(help.code).toBe(0);
      const text = help.stdout.toString().trimEnd();
      const examples = text.slice(text.lastIndexOf("\nExamples:\n") + 1).split("\n");
      expect(examples[0]).toBe("Examples:");
      expect(examples.length).toBeGreaterThan(1);
      for (const line of examples.slice(1)) expect(line).toMatch(/^ {2}\S.*tbucket|^ {2}\S/);
      expect(examples.slice(1).some((line) => line.includes(`tbucket ${command[0] === "pipe" ? "" : command[0]}`))).toBe(true);
    },
  );
});
