import { Help, type Command, type Option } from "commander";
import type { CompletionShell } from "../commands/completion.js";
import { EXIT } from "../errors.js";
import { writeStandardOutput } from "../standard-streams.js";
import { version } from "../version.js";

/** Writes the completion script for `shell` to standard output; resolves to the exit status. */
export function printCompletion(program: Command, shell: CompletionShell): number {
  const tree = describeCommandTree(program);
  const script = shell === "bash" ? bashScript(tree) : shell === "zsh" ? zshScript(tree) : fishScript(tree);
  writeStandardOutput(script);
  return EXIT.ok;
}

// ---------------------------------------------------------------------------
// The command tree, read from commander: the scripts are generated from it, so
// a new command or option shows up in completion without anyone editing this.

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
  repeatable: boolean;
}

export interface CommandSpec {
  /** Names from the root: [] for tbucket itself, ["key", "set"] for `tbucket key set`. */
  path: string[];
  description: string;
  options: OptionSpec[];
  subcommands: CommandSpec[];
  /** What the words after the options are: file names, a command to launch, given words, or free text. */
  operands: { kind: "files" | "command" | "words" | "none"; values: string[] };
}

const help = new Help();

/** Walks the commander program; the default command's options and operands count as the root's. */
export function describeCommandTree(program: Command): CommandSpec {
  return describeCommand(program, []);
}

function describeCommand(command: Command, path: string[]): CommandSpec {
  const subcommands = help.visibleCommands(command);
  const children = subcommands.map((sub) => describeCommand(sub, [...path, sub.name()]));
  const spec: CommandSpec = {
    path,
    description: command.description(),
    options: help.visibleOptions(command).map(describeOption),
    subcommands: children,
    operands: describeOperands(command),
  };
  // commander keeps the default command's name in a private field: `tbucket -r 1mb file` is `tbucket pipe ...`.
  const defaultName = (command as unknown as { _defaultCommandName?: string | null })._defaultCommandName;
  const defaultChild = children.find((child) => child.path.at(-1) === defaultName);
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
    repeatable: option.variadic,
  };
}

function describeOperands(command: Command): CommandSpec["operands"] {
  const args = command.registeredArguments;
  // A command with subcommands takes its first word as one of them (`key [subcommand]`).
  if (args.length === 0 || command.commands.length > 0) return { kind: "none", values: [] };
  const names = args.map((arg) => arg.name());
  if (names.some((name) => /file|path|dir/i.test(name))) return { kind: "files", values: [] };
  if (names[0] === "command") return { kind: "command", values: [] };
  return { kind: "words", values: args.flatMap((arg) => arg.argChoices ?? []) };
}

function allCommands(root: CommandSpec): CommandSpec[] {
  return [root, ...root.subcommands.flatMap(allCommands)];
}

function optionNames(option: OptionSpec): string[] {
  return [option.short, option.long].filter((name): name is string => name !== undefined);
}

function header(shell: string, comment: string, loadNow: string, loadForGood: string): string {
  return [
    `${comment} ${shell} completion for tbucket ${version()}, generated by \`tbucket completion ${shell}\`.`,
    `${comment} Load it now:   ${loadNow}`,
    `${comment} Or for good:   ${loadForGood}`,
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------
// bash: one function walks the words typed so far to find the command path
// (skipping option values), then offers that command's options, subcommands,
// option values or file names. Plain case statements: bash 3.2 works too.

const singleQuoteForShell = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

function bashScript(root: CommandSpec): string {
  const commands = allCommands(root);
  const key = (spec: CommandSpec) => singleQuoteForShell(spec.path.join(" "));
  const cases = (rows: Array<[string, string]>) => rows.map(([pattern, body]) => `    ${pattern}) ${body} ;;`).join("\n");

  const subcommandCases = cases(
    commands.filter((spec) => spec.subcommands.length > 0).map((spec) => [key(spec), `echo ${singleQuoteForShell(spec.subcommands.map((sub) => sub.path.at(-1)).join(" "))}`]),
  );
  const optionCases = cases(commands.map((spec) => [key(spec), `echo ${singleQuoteForShell(spec.options.flatMap(optionNames).join(" "))}`]));
  const takesValue = commands.flatMap((spec) =>
    spec.options.filter((option) => option.value === "required").flatMap((option) => optionNames(option).map((name) => singleQuoteForShell(`${spec.path.join(" ")}:${name}`))),
  );
  const valueRows: Array<[string, string]> = [];
  for (const spec of commands) {
    for (const option of spec.options) {
      if (option.value === "none") continue;
      const patterns = optionNames(option).map((name) => singleQuoteForShell(`${spec.path.join(" ")}:${name}`)).join("|");
      if (option.files) valueRows.push([patterns, "echo @files"]);
      else if (option.choices.length > 0) valueRows.push([patterns, `echo ${singleQuoteForShell(option.choices.join(" "))}`]);
    }
  }
  const operandCases = cases(commands.map((spec) => [key(spec), `echo ${singleQuoteForShell([spec.operands.kind, ...spec.operands.values].join(" "))}`]));

  return `${header("bash", "#", "source <(tbucket completion bash)", "tbucket completion bash > ~/.local/share/bash-completion/completions/tbucket")}
__tbucket_subcommands() {
  case "$1" in
${subcommandCases}
  esac
}

__tbucket_options() {
  case "$1" in
${optionCases}
  esac
}

# Succeeds when option $2 of command path $1 takes its value from the next word.
__tbucket_takes_value() {
  case "$1:$2" in
    ${takesValue.length > 0 ? takesValue.join("|") : "''"}) return 0 ;;
  esac
  return 1
}

# The values to offer for option $2 of command path $1: words, @files, or nothing.
__tbucket_values() {
  case "$1:$2" in
${cases(valueRows)}
  esac
}

# What command path $1 takes after its options: files, command, none, or words followed by the words.
__tbucket_operands() {
  case "$1" in
${operandCases}
  esac
}

_tbucket() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" opt="" path="" word i dashdash=0 positional=0
  ((COMP_CWORD > 0)) && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if [[ $word == -- ]]; then dashdash=$i; break; fi
    # --rate=1mb arrives as three words when = is in COMP_WORDBREAKS: skip = and the value.
    if [[ $word == = ]]; then ((i++)); continue; fi
    if [[ $word == -* ]]; then
      if [[ "\${COMP_WORDS[i+1]}" != = ]] && __tbucket_takes_value "$path" "$word"; then ((i++)); fi
      continue
    fi
    if ((positional == 0)) && [[ " $(__tbucket_subcommands "$path") " == *" $word "* ]]; then
      path="\${path:+$path }$word"
    else
      positional=1
    fi
  done

  local operands
  operands=$(__tbucket_operands "$path")
  if ((dashdash > 0)); then
    # After --: the command to launch, then its own arguments (files by default).
    if [[ $operands == command ]]; then
      if declare -F _command_offset >/dev/null; then _command_offset $((dashdash + 1)); return; fi
      ((COMP_CWORD == dashdash + 1)) && COMPREPLY=($(compgen -c -- "$cur"))
    fi
    return
  fi

  if [[ $cur == = && $prev == -* ]]; then
    opt=$prev cur=""
  elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
    opt="\${COMP_WORDS[COMP_CWORD-2]}"
  elif [[ $prev == -* ]] && __tbucket_takes_value "$path" "$prev"; then
    opt=$prev
  fi
  if [[ -n $opt ]]; then
    local values
    values=$(__tbucket_values "$path" "$opt")
    case $values in
      @files) return ;;
      "") compopt +o default 2>/dev/null ;; # a rate, a size, a duration: nothing to guess
      *) COMPREPLY=($(compgen -W "$values" -- "$cur")) ;;
    esac
    return
  fi

  if [[ $cur == -* ]]; then
    compopt +o default 2>/dev/null
    COMPREPLY=($(compgen -W "$(__tbucket_options "$path")" -- "$cur"))
    return
  fi
  local words=""
  ((positional == 0)) && words=$(__tbucket_subcommands "$path")
  case $operands in
    files)
      # Commands and file names together; with no command matching, bash's own file completion.
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
      if ((\${#COMPREPLY[@]} > 0)); then
        compopt -o filenames 2>/dev/null
        local IFS=$'\\n'
        COMPREPLY+=($(compgen -f -- "$cur"))
      fi
      ;;
    command)
      compopt +o default 2>/dev/null
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
      ((positional == 0)) && COMPREPLY+=($(compgen -c -- "$cur"))
      ;;
    words*)
      compopt +o default 2>/dev/null
      COMPREPLY=($(compgen -W "$words \${operands#words}" -- "$cur"))
      ;;
    *)
      compopt +o default 2>/dev/null
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
      ;;
  esac
}

complete -o default -F _tbucket tbucket
`;
}

// ---------------------------------------------------------------------------
// zsh: one _arguments function per command, dispatching to its subcommands.

function zshFunctionName(spec: CommandSpec): string {
  return ["_tbucket", ...spec.path.map((name) => name.replace(/[^\w]/g, "_"))].join("__");
}

/** Text inside an _arguments `[description]` or a `:message:`, inside single quotes. */
function zshEscape(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/'/g, `'\\''`).replace(/([[\]:])/g, "\\$1");
}

function zshOptionSpecs(option: OptionSpec): string[] {
  const names = optionNames(option);
  const exclusive = option.repeatable ? "*" : names.length > 1 ? `(${names.join(" ")})` : "";
  let value = "";
  if (option.value !== "none") {
    const action = option.files ? "_files" : option.choices.length > 0 ? `(${option.choices.map(zshEscape).join(" ")})` : " ";
    value = `${option.value === "optional" ? "::" : ":"}${zshEscape(option.valueName)}:${action}`;
  }
  return names.map((name) => `'${exclusive}${name}[${zshEscape(option.description)}]${value}'`);
}

function zshFunction(spec: CommandSpec): string {
  const lines = spec.options.flatMap(zshOptionSpecs);
  const hasSubcommands = spec.subcommands.length > 0;
  if (hasSubcommands) lines.push(`'1: :->command'`, `'*:: :->args'`);
  else if (spec.operands.kind === "files") lines.push(`'*:file:_files'`);
  else if (spec.operands.kind === "command") lines.push(`'1:command:_command_names -e'`, `'*::arguments:_normal'`);
  else if (spec.operands.kind === "words") lines.push(`'*:argument:${spec.operands.values.length > 0 ? `(${spec.operands.values.map(zshEscape).join(" ")})` : " "}'`);

  const body = [`${zshFunctionName(spec)}() {`, `  local curcontext="$curcontext" state state_descr line ret=1`, `  typeset -A opt_args`];
  body.push(`  _arguments -s -S -C \\`, ...lines.map((line) => `    ${line} \\`), `    && ret=0`);
  if (hasSubcommands) {
    const described = spec.subcommands.map((sub) => `    '${zshEscape(sub.path.at(-1)!)}:${zshEscape(sub.description).replace(/\\:/g, ":")}'`);
    const fallback = spec.operands.kind === "files" ? "_files && ret=0" : "_message 'no more arguments'";
    body.push(
      `  case $state in`,
      `    command)`,
      `      local -a commands=(`,
      ...described.map((line) => `  ${line}`),
      `      )`,
      `      _describe -t commands 'tbucket command' commands && ret=0`,
      ...(spec.operands.kind === "files" ? [`      _files && ret=0`] : []),
      `      ;;`,
      `    args)`,
      `      curcontext="\${curcontext%:*:*}:tbucket-$words[1]:"`,
      `      case $words[1] in`,
      ...spec.subcommands.map((sub) => `        ${singleQuoteForShell(sub.path.at(-1)!)}) ${zshFunctionName(sub)} && ret=0 ;;`),
      `        *) ${fallback} ;;`,
      `      esac`,
      `      ;;`,
      `  esac`,
    );
  }
  body.push(`  return ret`, `}`);
  return body.join("\n");
}

function zshScript(root: CommandSpec): string {
  return `#compdef tbucket
${header("zsh", "#", "source <(tbucket completion zsh)   (after compinit)", 'tbucket completion zsh > "${fpath[1]}/_tbucket"')}
${allCommands(root).map(zshFunction).join("\n\n")}

# Autoloaded from $fpath: complete now. Sourced: register the function.
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _tbucket "$@"
else
  compdef _tbucket tbucket
fi
`;
}

// ---------------------------------------------------------------------------
// fish: a helper finds the command path from the words typed so far; each
// option and subcommand is offered when the path is the one it belongs to.

const fishQuote = (text: string) => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

function fishScript(root: CommandSpec): string {
  const commands = allCommands(root);
  const takesValue = (spec: CommandSpec) => spec.options.filter((option) => option.value === "required").flatMap(optionNames);
  const caseBlock = (label: (spec: CommandSpec) => string[]) =>
    commands
      .map((spec) => [spec, label(spec)] as const)
      .filter(([, words]) => words.length > 0)
      .map(([spec, words]) => `        case ${fishQuote(spec.path.join(" "))}\n            printf '%s\\n' ${words.map(fishQuote).join(" ")}`)
      .join("\n");

  const lines: string[] = [];
  for (const spec of commands) {
    const when = `__tbucket_path_is ${fishQuote(spec.path.join(" "))}`;
    for (const sub of spec.subcommands) {
      lines.push(`complete -c tbucket -n ${fishQuote(`${when}; and not __tbucket_has_operand`)} -a ${fishQuote(sub.path.at(-1)!)} -d ${fishQuote(sub.description)}`);
    }
    for (const option of spec.options) {
      const flags = [option.short ? `-s ${option.short.slice(1)}` : "", option.long ? `-l ${option.long.slice(2)}` : ""].filter(Boolean);
      let value = "";
      if (option.value === "required") value = option.files ? " -r -F" : option.choices.length > 0 ? ` -x -a ${fishQuote(option.choices.join(" "))}` : " -x";
      lines.push(`complete -c tbucket -n ${fishQuote(`${when}; and not __tbucket_after_dashdash`)} ${flags.join(" ")}${value} -d ${fishQuote(option.description)}`);
    }
    if (spec.operands.kind === "files") lines.push(`complete -c tbucket -n ${fishQuote(when)} -F`);
    if (spec.operands.kind === "words" && spec.operands.values.length > 0) {
      lines.push(`complete -c tbucket -n ${fishQuote(when)} -a ${fishQuote(spec.operands.values.join(" "))}`);
    }
    if (spec.operands.kind === "command") {
      lines.push(`complete -c tbucket -n ${fishQuote(`${when}; and __tbucket_after_dashdash`)} -a '(__tbucket_complete_launched)'`);
    }
  }

  return `${header("fish", "#", "tbucket completion fish | source", "tbucket completion fish > ~/.config/fish/completions/tbucket.fish")}
function __tbucket_subcommands
    switch "$argv[1]"
${caseBlock((spec) => spec.subcommands.map((sub) => sub.path.at(-1)!))}
    end
end

# Options of command path $argv[1] that take their value from the next word.
function __tbucket_value_options
    switch "$argv[1]"
${caseBlock(takesValue)}
    end
end

# Prints the command path (e.g. "key set") and whether an operand was typed, from the words so far.
function __tbucket_walk
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ""
    set -l operand 0
    set -l skip 0
    for word in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        if test "$word" = --
            break
        end
        switch $word
            case '-*'
                if not string match -q -- '*=*' $word; and contains -- $word (__tbucket_value_options "$path")
                    set skip 1
                end
            case '*'
                if test $operand = 0; and contains -- $word (__tbucket_subcommands "$path")
                    set path (string trim -- "$path $word")
                else
                    set operand 1
                end
        end
    end
    printf '%s\\n' "$path" $operand
end

function __tbucket_path_is
    set -l walked (__tbucket_walk)
    test "$walked[1]" = "$argv[1]"
end

function __tbucket_has_operand
    set -l walked (__tbucket_walk)
    test "$walked[2]" = 1
end

function __tbucket_after_dashdash
    contains -- -- (commandline -opc)
end

# The command after -- completes as if typed alone: its name, then its own arguments.
function __tbucket_complete_launched
    set -l tokens (commandline -opc) (commandline -ct)
    set -l index (contains -i -- -- $tokens)
    __fish_complete_subcommand --commandline $tokens[(math $index + 1)..-1]
end

complete -c tbucket -f
${lines.join("\n")}
`;
}
