import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/cli/errors.js";
import { parseRunOptions, type RunFlags } from "../../src/cli/run/options.js";
import { classOfItem, parseClassOf } from "../../src/run/class-of.js";
import { limitFlagsOf } from "../helpers/limit-flags.js";

/** The run's flags as commander hands them over: limit flags from `limits`, the rest defaults and `extra`. */
function flags(limits: string[], extra: Partial<RunFlags> = {}): RunFlags {
  return { ...limitFlagsOf(limits), jobs: "8", killAfter: "5s", retries: "0", output: "line", stats: undefined, ...extra } as RunFlags;
}

function usage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error("accepted");
}

describe("run --class and --class-of", () => {
  it("takes the classes, the first as every job's class by default", () => {
    const config = parseRunOptions(["true"], flags(["-r", "20/s"], { class: ["a=15/s,prio=0", "b=5/s,prio=1,weight=2"] }));
    expect(config.classes).toEqual([
      // A guarantee bucket holds two launches at least: 1 × 15/20 could never admit one.
      { name: "a", rate: 15, prio: 0, burst: 2 },
      { name: "b", rate: 5, prio: 1, weight: 2, burst: 2 },
    ]);
    expect(config.classOf).toEqual({ kind: "name", name: "a" });
  });

  it("keeps a class's burst when given, and the default when it holds two launches", () => {
    const config = parseRunOptions(["true"], flags(["-r", "20/s", "-b", "10"], { class: ["a=10/s", "b=5/s,burst=1", "c=2/s"] }));
    expect(config.classes!.map((c) => c.burst)).toEqual([5, 1, 2]);
  });

  it("reads --class-of as a field of the item or one name", () => {
    const field = parseRunOptions(["echo", "{}"], flags(["-r", "20/s"], { class: ["a=15/s", "b=5/s"], classOf: "{2}" }));
    expect(field.classOf).toEqual({ kind: "field", template: { kind: "field", source: "{2}", field: 2 } });
    const name = parseRunOptions(["true"], flags(["-r", "20/s"], { class: ["a=15/s", "b=5/s"], classOf: "b" }));
    expect(name.classOf).toEqual({ kind: "name", name: "b" });
  });

  it("refuses what cannot work, in one line", () => {
    const two = { class: ["a=15/s", "b=5/s"] };
    expect(usage(() => parseRunOptions(["true"], flags(["-r", "20/s"], { ...two, key: "k" })))).toBe(
      `--class: a shared key's classes are set with "tbucket key set k --class NAME=RATE ..."; with --key, choose each job's with --class-of`,
    );
    expect(usage(() => parseRunOptions(["true"], flags(["-r", "20/s"], { classOf: "a" })))).toBe(
      `--class-of: only with --class, which defines the classes (or --key, whose classes are the key's); e.g. "--class web=15/s,prio=0 --class batch=5/s,prio=1 --class-of {2}"`,
    );
    expect(usage(() => parseRunOptions(["true"], flags(["-r", "20/s"], { ...two, classOf: "c" })))).toBe(
      `--class-of: no class "c"; the classes are a, b (define it with --class c=RATE, or name one of them)`,
    );
    expect(usage(() => parseRunOptions(["true"], flags(["-r", "20/s"], { ...two, classOf: "{2}" })))).toBe(
      `--class-of {2}: the jobs have no items (no {} in the command) to read a class from; name one class for all, e.g. "--class-of a"`,
    );
    expect(usage(() => parseRunOptions(["echo", "{}"], flags(["-r", "20/s"], { ...two, classOf: "{0}" })))).toBe(
      `--class-of: "{0}" is not {N} (a whitespace field, from 1), {.field} (a field of a JSON item), {} (the whole item) or a class name`,
    );
    expect(usage(() => parseRunOptions(["true"], flags(["-r", "inf"], two)))).toBe(
      "--class: classes share a limited rate, and the rate is unlimited; give --rate a finite rate",
    );
    expect(usage(() => parseRunOptions(["true"], flags(["-r", "10/s"], two)))).toBe(
      "--class: the guarantees add up to 20/s, more than the rate of 10/s; lower them, or raise --rate (what is left of the rate is lent)",
    );
  });
});

describe("classOfItem", () => {
  it("reads a whitespace field, a JSON field (a number as its digits) or one name", () => {
    expect(classOfItem(parseClassOf("{2}"), "job-1 batch x")).toBe("batch");
    expect(classOfItem(parseClassOf("{.priority}"), `{"priority":"web"}`)).toBe("web");
    expect(classOfItem(parseClassOf("{.p.0}"), `{"p":[1]}`)).toBe("1");
    expect(classOfItem(parseClassOf("{}"), "web")).toBe("web");
    expect(classOfItem(parseClassOf("web"), "anything")).toBe("web");
  });

  it("says why an item names no class", () => {
    expect(() => classOfItem(parseClassOf("{3}"), "a b")).toThrow("class {3}: the item has 2 fields, not 3");
    expect(() => classOfItem(parseClassOf("{.p}"), "a b")).toThrow("class {.p}: the item is not JSON");
    expect(() => classOfItem(parseClassOf("{.p}"), `{"q":1}`)).toThrow("class {.p}: the item has no field .p");
    expect(() => classOfItem(parseClassOf("{.p}"), `{"p":null}`)).toThrow("class {.p}: .p is null, not a string");
  });
});
