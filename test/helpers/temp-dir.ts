import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/**
 * Returns a maker of temp folders named `tbucket-<prefix>-*`; every folder it
 * made is removed after the calling file's tests. Call it at a file's top level.
 */
export function tempDirs(prefix: string): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), `tbucket-${prefix}-`));
    made.push(dir);
    return dir;
  };
}
