import { open, stat } from "node:fs/promises";

const CHUNK_BYTES = 1024 * 1024;

/**
 * The items in a regular file, as readLines counts them (a last line without
 * its newline counts too), read a MiB at a time; undefined when it is not a
 * regular file (a pipe, a terminal: reading it would take the items) or
 * cannot be read. For the progress line's total, never for the run itself.
 */
export async function countFileLines(path: string): Promise<number | undefined> {
  let handle;
  try {
    // Checked before opening: opening a FIFO would wait for its writer.
    if (!(await stat(path)).isFile()) return undefined;
    handle = await open(path, "r");
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let lines = 0;
    let last = 10;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
      last = chunk[bytesRead - 1]!;
    }
    return last === 10 ? lines : lines + 1;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}
