import { allCommands, type CommandSpec, optionNames } from "./command-tree.js";
import { header } from "./shell-script.js";

// fish: a helper finds the command path from the words typed so far; each
// option and subcommand is offered when the path is the one it belongs to.

const fishQuote = (text: string) => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

/** The fish completion script for the command tree. */
export function fishScript(root: CommandSpec): string {
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
      lines.push(`complete -c tbucket -n ${fishQuote(`${when}; and __tbucket_offers_commands`)} -a ${fishQuote(sub.path.at(-1)!)} -d ${fishQuote(sub.description)}`);
    }
    for (const option of spec.options) {
      const flags = [option.short ? `-s ${option.short.slice(1)}` : "", option.long ? `-l ${option.long.slice(2)}` : ""].filter(Boolean);
      let value = "";
      if (option.value === "required") value = option.files ? " -r -F" : option.keys ? " -x -a '(__tbucket_keys)'" : option.choices.length > 0 ? ` -x -a ${fishQuote(option.choices.join(" "))}` : " -x";
      lines.push(`complete -c tbucket -n ${fishQuote(`${when}; and not __tbucket_after_dashdash`)} ${flags.join(" ")}${value} -d ${fishQuote(option.description)}`);
    }
    if (spec.operands.kind === "files") lines.push(`complete -c tbucket -n ${fishQuote(when)} -F`);
    if (spec.operands.kind === "keys") lines.push(`complete -c tbucket -n ${fishQuote(`${when}; and not __tbucket_has_operand`)} -a '(__tbucket_keys)'`);
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

# Prints the command path (e.g. "key set"), whether an operand was typed, and whether an option was, from the words so far.
function __tbucket_walk
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ""
    set -l operand 0
    set -l option 0
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
                # As commander reads it: after an option, a word is an operand (tbucket --stats run reads the file run), not a command.
                set option 1
            case '*'
                if test $operand = 0; and test $option = 0; and contains -- $word (__tbucket_subcommands "$path")
                    set path (string trim -- "$path $word")
                else
                    set operand 1
                end
        end
    end
    printf '%s\\n' "$path" $operand $option
end

function __tbucket_path_is
    set -l walked (__tbucket_walk)
    test "$walked[1]" = "$argv[1]"
end

function __tbucket_has_operand
    set -l walked (__tbucket_walk)
    test "$walked[2]" = 1
end

function __tbucket_offers_commands
    set -l walked (__tbucket_walk)
    test "$walked[2]" = 0; and test "$walked[3]" = 0
end

function __tbucket_after_dashdash
    contains -- -- (commandline -opc)
end

# The shared buckets' names, from the store named on the line (--store) or the default one; nothing if it cannot say.
function __tbucket_keys
    set -l tokens (commandline -opc)
    set -l store
    for i in (seq (count $tokens))
        if test "$tokens[$i]" = --store; and test $i -lt (count $tokens)
            set store $tokens[(math $i + 1)]
        else if string match -q -- '--store=*' $tokens[$i]
            set store (string replace -- --store= '' $tokens[$i])
        end
    end
    if test -n "$store"
        $tokens[1] completion --keys --store $store 2>/dev/null
    else
        $tokens[1] completion --keys 2>/dev/null
    end
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
