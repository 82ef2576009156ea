import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { copiesOntoItself } from "../../src/stream/copy-onto-itself.js";

let dir: string;
const opened: number[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-same-file-"));
});
afterEach(() => {
  for (const fd of opened.splice(0)) closeSync(fd);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function open(name: string, flags: string, content?: string): number {
  const path = join(dir, name);
  if (content !== undefined) writeFileSync(path, content);
  const fd = openSync(path, flags);
  opened.push(fd);
  return fd;
}

describe("copiesOntoItself: GNU cat's rule for an input that is the output file", () => {
  it("an output appended to (>> f) with something left to read never ends", () => {
    const output = open("f", "a", "hello\n");
    expect(copiesOntoItself(open("f", "r"), output)).toBe(true);
  });

  it("an output appended to with nothing left to read ends: an empty file", () => {
    const output = open("empty", "a", "");
    expect(copiesOntoItself(open("empty", "r"), output)).toBe(false);
  });

  it("an output written ahead of the reader never ends; behind or level with it, it ends", () => {
    const output = open("g", "r+", "hello\n");
    const input = open("g", "r");
    expect(copiesOntoItself(input, output)).toBe(false);
    writeSync(output, "x");
    expect(copiesOntoItself(input, output)).toBe(true);
  });

  it("another file, or an output that is not a regular file, is never the same file", () => {
    const output = open("h", "a", "hello\n");
    expect(copiesOntoItself(open("other", "r", "x\n"), output)).toBe(false);
    expect(copiesOntoItself(open("h", "r"), openDevNull())).toBe(false);
  });
});

function openDevNull(): number {
  const fd = openSync("/dev/null", "w");
  opened.push(fd);
  return fd;
}
