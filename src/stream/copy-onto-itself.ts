import { type BigIntStats, fstatSync, readFileSync } from "node:fs";

/** The code of the error for an input that is the output file. */
export const INPUT_IS_OUTPUT = "EINPUTISOUTPUT";

/** An input that is the output file, where copying would never end. */
export class InputIsOutputError extends Error {
  readonly code = INPUT_IS_OUTPUT;
  constructor(name: string) {
    super(`${name}: input file is output file`);
    this.name = "InputIsOutputError";
  }
}

/** Linux's O_APPEND, as /proc/self/fdinfo shows the flags (octal). */
const O_APPEND = 0o2000;

/**
 * Whether copying descriptor `input` to descriptor `output` would never end,
 * by GNU cat's rule: both are the same regular file, and the output is
 * appended to or written ahead of where the input reads, so that every byte
 * written is read again and the file grows until the disk is full
 * (`tbucket f >> f`). Writing behind the reader ends (`tbucket f 1<>f`), and
 * so does a file the shell emptied (`tbucket f > f`: there is nothing to read).
 */
export function copiesOntoItself(input: number, output: number): boolean {
  const outputStats = bigFstat(output);
  const inputStats = bigFstat(input);
  if (!outputStats?.isFile() || !inputStats || inputStats.dev !== outputStats.dev || inputStats.ino !== outputStats.ino) return false;
  const reading = descriptorState(input);
  const writing = descriptorState(output);
  // Without /proc, the older rule: refuse unless the file is empty.
  if (!reading || !writing) return inputStats.size > 0n;
  if (writing.append) return reading.position < inputStats.size;
  return reading.position < writing.position;
}

/** A descriptor's offset and whether it appends, from Linux's /proc; undefined elsewhere. */
function descriptorState(fd: number): { position: bigint; append: boolean } | undefined {
  try {
    const info = readFileSync(`/proc/self/fdinfo/${fd}`, "latin1");
    const position = /^pos:\s*(\d+)/m.exec(info)?.[1];
    const flags = /^flags:\s*([0-7]+)/m.exec(info)?.[1];
    if (position === undefined || flags === undefined) return undefined;
    return { position: BigInt(position), append: (Number.parseInt(flags, 8) & O_APPEND) !== 0 };
  } catch {
    return undefined;
  }
}

function bigFstat(fd: number): BigIntStats | undefined {
  try {
    return fstatSync(fd, { bigint: true });
  } catch {
    return undefined;
  }
}
