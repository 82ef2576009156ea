import { InvalidArgumentError, Option } from "commander";

/**
 * An option whose value is one of `choices`, declared once: commander checks
 * the value, and help and the completion scripts list the same choices. A bad
 * value is our one line (main.ts's reportError puts the flag in front):
 * `"fifo" is not a policy; try "drop" or "queue"`.
 */
export function choiceOption(flags: string, description: string, choices: readonly string[], noun: string): Option {
  return new Option(flags, description).choices(choices).argParser((value: string) => {
    if (!choices.includes(value)) throw new InvalidArgumentError(`"${value}" is not ${noun}; try ${quotedList(choices)}`);
    return value;
  });
}

/** `"a", "b" or "c"`. */
function quotedList(words: readonly string[]): string {
  const quoted = words.map((word) => `"${word}"`);
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}
