import { type Argument, type Command, Help, type HelpConfiguration, type Option } from "commander";

/**
 * How every help text reads: values as a user writes them (`(default: 8)`,
 * never `(default: "8")` or `(default: false)`), choices only when the
 * description does not already name them, and each command listed with the
 * operands its own usage line shows. Commands inherit this from the program.
 */
export function helpTextConfiguration(): HelpConfiguration {
  return {
    optionDescription: (option: Option) => describeWithExtras(option.description, option.argChoices, shownDefault(option)),
    argumentDescription: (argument: Argument) =>
      describeWithExtras(argument.description, argument.argChoices, argument.defaultValue === undefined ? undefined : String(argument.defaultValue)),
    formatItem: formatItemToFit,
    // Every command has options: the list shows what else it takes, as its usage line does.
    subcommandTerm: (command: Command) => `${command.name()} ${command.usage().replace(/^\[options\] ?| ?\[options\]$/, "")}`.trimEnd(),
  };
}

/**
 * The top-level help also lists `options` of the default command (its main
 * ones, as pv's help shows its options first), before the program's own.
 */
export function showDefaultCommandOptions(program: Command, defaultCommand: Command, longNames: readonly string[]): void {
  const base = program.configureHelp();
  const shown = longNames.map((long) => {
    const option = defaultCommand.options.find((candidate) => candidate.long === long);
    if (!option) throw new Error(`showDefaultCommandOptions: ${defaultCommand.name()} has no ${long}`);
    return option;
  });
  program.configureHelp({
    ...base,
    visibleOptions(command: Command) {
      const options = Help.prototype.visibleOptions.call(this, command);
      return command === program ? [...shown, ...options] : options;
    },
  });
}

/** A flag has no default worth saying; a value's default is said as typed. */
function shownDefault(option: Option): string | undefined {
  if (option.defaultValue === undefined || typeof option.defaultValue === "boolean") return undefined;
  if (!option.required && !option.optional) return undefined;
  return option.defaultValueDescription ?? String(option.defaultValue);
}

function describeWithExtras(description: string, choices: readonly string[] | undefined, defaultText: string | undefined): string {
  const extras: string[] = [];
  // "drop (...) or queue (...)" already lists them: the list is for a description that does not.
  if (choices && !choices.every((choice) => new RegExp(`\\b${choice}\\b`).test(description))) extras.push(choices.join(", "));
  if (defaultText !== undefined && !description.includes("(default")) extras.push(`default: ${defaultText}`);
  return extras.length === 0 ? description : `${description} (${extras.join("; ")})`;
}

/** Where a description goes under its term, on a narrow terminal. */
const NARROW_INDENT = 6;

/**
 * An option or command and its description, in two columns where the
 * description has room (commander's minWidthToWrap); on a narrower terminal,
 * the description under the term, wrapped to the width, as man pages do.
 * Commander left it one long line there, which the terminal broke mid-word.
 */
function formatItemToFit(this: Help, term: string, termWidth: number, description: string, helper: Help): string {
  const width = helper.helpWidth ?? 80;
  // Commander's own sums: two of indent, two between the columns.
  if (!description || width - termWidth - 4 >= helper.minWidthToWrap) return Help.prototype.formatItem.call(this, term, termWidth, description, helper);
  const anyWidth: Help = Object.assign(Object.create(helper) as Help, { minWidthToWrap: 1 });
  const wrapped = anyWidth.boxWrap(description, Math.max(1, width - NARROW_INDENT));
  return `  ${term}\n${wrapped.replace(/^/gm, " ".repeat(NARROW_INDENT))}`;
}

/**
 * Help text for a terminal `columns` wide: a line of prose too long for it
 * (the notes after the options, a usage line) is wrapped at spaces, where the
 * terminal would break it mid-word. Indented lines (examples, the option
 * lists commander has already fitted) are left as they are: a command line
 * cut in two could not be copied.
 */
export function wrapProse(text: string, columns: number): string {
  if (!(columns > 0)) return text;
  return text
    .split("\n")
    .map((line) => (line.length <= columns || /^\s/.test(line) ? line : wrapLine(line, columns)))
    .join("\n");
}

function wrapLine(line: string, columns: number): string {
  const rows: string[] = [];
  let row = "";
  for (const word of line.split(" ")) {
    if (row !== "" && row.length + 1 + word.length > columns) {
      rows.push(row);
      row = word;
    } else {
      row = row === "" ? word : `${row} ${word}`;
    }
  }
  return [...rows, row].join("\n");
}
