import { describe, expect, it } from "vitest";
import { parseClassOption, parseClassOptions } from "../../src/cli/class-options.js";

describe("the --class grammar", () => {
  it("reads a byte class with every field", () => {
    expect(parseClassOption("backup=10mb,ceil=20mb,prio=1,weight=5mb,burst=1mb", "bytes")).toEqual({
      name: "backup",
      rate: 10 * 1024 * 1024,
      ceil: 20 * 1024 * 1024,
      prio: 1,
      weight: 5 * 1024 * 1024,
      burst: 1024 * 1024,
    });
  });

  it("reads a count class with only its guarantee, and a guarantee of 0 (a class that only borrows)", () => {
    expect(parseClassOption("web=300/m", "count")).toEqual({ name: "web", rate: 5 });
    expect(parseClassOption("bulk=0,prio=2", "count")).toEqual({ name: "bulk", rate: 0, prio: 2 });
  });

  it("refuses a field twice, a field with no value, a bad name", () => {
    expect(() => parseClassOption("web=5,prio=1,prio=2", "count")).toThrow("--class web=5,prio=1,prio=2: prio is given twice;");
    expect(() => parseClassOption("web=5,ceil", "count")).toThrow("--class web=5,ceil: ceil has no value;");
    expect(() => parseClassOption("w b=5", "count")).toThrow(`--class w b=5: "w b" is not a class name`);
  });

  it("checks the set: the guarantees within the rate, in the rate's unit", () => {
    expect(() => parseClassOptions(["a=5mb", "b=16mb"], "bytes", 20 * 1024 * 1024)).toThrow(
      "--class: the guarantees add up to 21.00 MiB/s (22020096 B/s), more than the rate of 20.00 MiB/s (20971520 B/s)",
    );
    expect(parseClassOptions(["a=5mb", "b=15mb"], "bytes", 20 * 1024 * 1024)).toHaveLength(2);
  });
});
