import { RuntimeError } from "./errors.js";

type Emit = (segment: Buffer) => void | Promise<void>;

/**
 * `emit`, refusing binary data bound for a terminal, as curl does: raw bytes
 * there can leave the terminal in a state that needs a reset. A NUL byte is
 * binary (what git and grep look for). Every segment is looked at, not the
 * first alone: how the input is cut into segments depends on the rate (at
 * `-r 10` the first is 10 bytes), and a file may open with text. The segment
 * holding the NUL and all after it are not written; the copy fails. Text
 * goes through untouched.
 */
export function refusingBinaryOnTerminal(emit: Emit): Emit {
  return (segment) => {
    if (segment.includes(0)) throw new RuntimeError(BINARY_ON_TERMINAL);
    return emit(segment);
  };
}

export const BINARY_ON_TERMINAL = "standard output is a terminal and the input looks binary; redirect it (> file) or add --force";
