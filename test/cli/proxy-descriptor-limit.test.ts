import { describe, expect, it } from "vitest";
import { connectionsWithinDescriptorLimit } from "../../src/cli/proxy/descriptor-limit.js";

const limits = (openFiles: string) =>
  `Limit                     Soft Limit           Hard Limit           Units\nMax processes             63704                63704                processes\nMax open files            ${openFiles}                20000                files\n`;

describe("the connections a proxy can hold within its open-file limit", () => {
  it("two descriptors a connection, less a reserve for the rest", () => {
    expect(connectionsWithinDescriptorLimit(limits("20000"))).toBe(9968);
    expect(connectionsWithinDescriptorLimit(limits("1024"))).toBe(480);
  });

  it("at least one, and no limit where it cannot be read or there is none", () => {
    expect(connectionsWithinDescriptorLimit(limits("10"))).toBe(1);
    expect(connectionsWithinDescriptorLimit(limits("unlimited"))).toBe(Infinity);
    expect(connectionsWithinDescriptorLimit("")).toBe(Infinity);
  });
});
