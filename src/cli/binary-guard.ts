import { RuntimeError } from "./errors.js";

type Emit = (segment: Buffer) => void | Promise<void>;

/**
 * `emit`, refusing binary data bound for a terminal, as curl does: raw bytes
 * there can leave the terminal in a state that needs a reset. The first
 * segment decides: a NUL byte in it is binary (what git and grep look for);
 * then nothing is written and the copy fails. Text goes through untouched.
 */
export function refusingBinaryOnTerminal(emit: Emit): Emit {
  let checked = false;
  return (segment) => {
    if (!checked && segment.length > 0) {
      checked = true;
      if (segment.includes(0)) throw new RuntimeError(BINARY_ON_TERMINAL);
    }
    return emit(segment);
  };
}

export const BINARY_ON_TERMINAL = "standard output is a terminal and the input looks binary; redirect it (> file) or add --force";
