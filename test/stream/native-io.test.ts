import { closeSync, mkdtempSync, openSync, readSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nativeIo } from "../../src/stream/native-io.js";

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-native-"));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("the native part", () => {
  it("is built (npm ci) and loads", () => {
    expect(nativeIo()).toBeDefined();
  });

  it("tells a file's rest past 4 GiB, where FIONREAD's int would wrap to 0 and end the copy early", () => {
    const path = join(dir, "sparse");
    writeFileSync(path, "");
    truncateSync(path, 5 * 2 ** 30);
    const fd = openSync(path, "r");
    try {
      expect(nativeIo()!.bytesReadable(fd)).toBe(5 * 2 ** 30);
      readSync(fd, Buffer.alloc(10), 0, 10, null);
      expect(nativeIo()!.bytesReadable(fd)).toBe(5 * 2 ** 30 - 10);
    } finally {
      closeSync(fd);
    }
  });

  it("says -ENODATA at the end of a file", () => {
    const path = join(dir, "short");
    writeFileSync(path, "abc");
    const fd = openSync(path, "r");
    try {
      readSync(fd, Buffer.alloc(3), 0, 3, null);
      expect(nativeIo()!.bytesReadable(fd)).toBe(-61);
    } finally {
      closeSync(fd);
    }
  });
});
