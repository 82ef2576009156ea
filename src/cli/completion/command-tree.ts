import { Help, type Command, type Option } from "commander";
import { isRepeatable } from "../repeatable-option.js";

// The command tree, read from commander as plain data: the completion scripts
// are generated from it, so a new command or option shows up in completion
// without anyone editing a generator.

export interface OptionSpec {
  short?: string;
  long?: string;
  description: string;
  /** Whether the option takes a value: `--rate <rate>` required, `--stats [format]` optional. */
  value: "none" | "required" | "optional";
  /** The value's placeholder, e.g. "rate" for `--rate <rate>`. */
  valueName: string;
  /** The values to offer: commander choices, or a placeholder like `<drop|queue>`. */
  choices: string[];
  /** The value is a file name (placeholder `<file>`, `<path>`, `<dir>`...). */
  files: boolean;
  /** The value is a shared bucket's name (--key): the scripts ask `tbucket completion --keys`. */
  keys: boolean;
  repeatable: boolean;
}

export interface CommandSpec {
  /** Names from the root: [] for tbucket itself, ["key", "set"] for `tbucket key set`. */
  path: string[];
  description: string;
  options: OptionSpec[];
  subcommands: CommandSpec[];
  /** What the words after the options are: file names, a command to launch, a shared bucket's name, given words, or free text. */
  operands: { kind: "files" | "command" | "keys" | "words" | "none"; values: string[] };
}

const help = new Help();

/** Where a shared bucket's name goes: `--key <name>`, and the `<key>` of `tbucket key show|set|delete`. */
const KEY_OPTION = "--key";
const KEY_ARGUMENT = "key";

/**
 * Walks the commander program. The default command (`tbucket -r 1mb file` is
 * `tbucket pipe ...`) is named by the caller, since commander keeps it private;
 * its options and operands count as the root's.
 */
export function describeCommandTree(program: Command, defaultCommand?: string): CommandSpec {
  return describeCommand(program, [], defaultCommand);
}

function describeCommand(command: Command, path: string[], defaultName?: string): CommandSpec {
  const subcommands = help.visibleCommands(command);
  const children = subcommands.map((sub) => describeCommand(sub, [...path, sub.name()]));
  const spec: CommandSpec = {
    path,
    description: command.description(),
    options: help.visibleOptions(command).map(describeOption),
    subcommands: children,
    operands: describeOperands(command),
  };
  const defaultChild = defaultName === undefined ? undefined : children.find((child) => child.path.at(-1) === defaultName);
  if (defaultChild) {
    const known = new Set(spec.options.flatMap((option) => [option.short, option.long]));
    spec.options.push(...defaultChild.options.filter((option) => !known.has(option.short) && !known.has(option.long)));
    spec.operands = defaultChild.operands;
  }
  for (const child of children) {
    // The implicit `help [command]` completes the names of its sibling commands.
    if (child.path.at(-1) === "help" && child.operands.kind !== "none") {
      child.operands = { kind: "words", values: children.map((sibling) => sibling.path.at(-1)!).filter((name) => name !== "help") };
    }
  }
  return spec;
}

function describeOption(option: Option): OptionSpec {
  const placeholder = /[<[]([^>\]]*)[>\]]/.exec(option.flags)?.[1]?.replace(/\.\.\.$/, "") ?? "";
  const files = /file|path|dir/i.test(placeholder);
  const fromPlaceholder = placeholder.includes("|") ? placeholder.split("|").filter((choice) => /^[\w.-]+$/.test(choice)) : [];
  return {
    short: option.short,
    long: option.long,
    description: option.description,
    value: option.required ? "required" : option.optional ? "optional" : "none",
    valueName: placeholder.split("|")[0] || "value",
    choices: option.argChoices ?? (fromPlaceholder.length > 1 && !files ? fromPlaceholder : []),
    files,
    keys: option.long === KEY_OPTION,
    repeatable: isRepeatable(option),
  };
}

function describeOperands(command: Command): CommandSpec["operands"] {
  const args = command.registeredArguments;
  // A command with subcommands takes its first word as one of them (`key [subcommand]`).
  if (args.length === 0 || command.commands.length > 0) return { kind: "none", values: [] };
  const names = args.map((arg) => arg.name());
  if (names.some((name) => /file|path|dir/i.test(name))) return { kind: "files", values: [] };
  if (names[0] === KEY_ARGUMENT) return { kind: "keys", values: [] };
  if (names[0] === "command") return { kind: "command", values: [] };
  return { kind: "words", values: args.flatMap((arg) => arg.argChoices ?? []) };
}

/** The command and every command below it, parents first. */
export function allCommands(root: CommandSpec): CommandSpec[] {
  return [root, ...root.subcommands.flatMap(allCommands)];
}

/** `-r` and `--rate`, whichever the option has. */
export function optionNames(option: OptionSpec): string[] {
  return [option.short, option.long].filter((name): name is string => name !== undefined);
}
