import { existsSync } from "node:fs";
import type { Command } from "commander";
import { UsageError } from "./errors.js";

/**
 * The default command takes files, so a mistyped command (`tbucket simulte`)
 * would be read as a file that does not exist, or complain of a missing
 * --rate. A first operand that is no file and is close to a command's name is
 * that command mistyped: say so before anything else is checked. A file of
 * that name is still read, and so is a word after `--`.
 */
export function checkNotMistypedCommand(word: string | undefined, commandNames: readonly string[], rawArgs: readonly string[] = []): void {
  if (word === undefined || word === "-" || word.startsWith("-") || commandNames.includes(word) || existsSync(word)) return;
  // After `--` the words are files by the user's own say (`tbucket -r 1mb -- run` reads ./run).
  const doubleDash = rawArgs.indexOf("--");
  if (doubleDash !== -1 && doubleDash < rawArgs.indexOf(word)) return;
  const nearest = nearestName(word, commandNames);
  if (nearest !== undefined) throw new UsageError(`"${word}" is neither a file nor a command; did you mean "${nearest}"?`);
}

/** The words as given (commander keeps them, undeclared in its types), to see where `--` stood. */
export function givenWords(program: Command): readonly string[] {
  return (program as Command & { rawArgs?: string[] }).rawArgs ?? [];
}

/** The names a first operand may be a mistyped one of: the program's commands, and help. */
export function commandNames(program: Command): string[] {
  return [...new Set([...program.commands.map((command) => command.name()), "help"])];
}

/** Mistakes as a typist makes them: a letter left out, added, changed, or two swapped. */
const MAX_EDITS = 2;

/** The name `word` is most likely a mistyping of (within two edits), if any. */
export function nearestName(word: string, names: readonly string[]): string | undefined {
  let best: { name: string; edits: number } | undefined;
  for (const name of names) {
    const edits = editDistance(word.toLowerCase(), name);
    // A name of one or two letters is within two edits of anything that short.
    if (edits <= Math.min(MAX_EDITS, name.length - 1) && (best === undefined || edits < best.edits)) best = { name, edits };
  }
  return best?.name;
}

/** Damerau-Levenshtein distance (optimal string alignment): insertions, deletions, substitutions and swaps of neighbours. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}
