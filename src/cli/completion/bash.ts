import { allCommands, type CommandSpec, optionNames } from "./command-tree.js";
import { header, singleQuoteForShell } from "./shell-script.js";

// bash: one function walks the words typed so far to find the command path
// (skipping option values), then offers that command's options, subcommands,
// option values or file names. Plain case statements: bash 3.2 works too.

/** The bash completion script for the command tree. */
export function bashScript(root: CommandSpec): string {
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
      else if (option.keys) valueRows.push([patterns, "echo @keys"]);
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

# The shared buckets' names, from the store named on the line (--store) or the default one; nothing if it cannot say.
__tbucket_keys() {
  local store="" pattern='--store[= ]+([^ ]+)'
  # From the line as typed: COMP_WORDS splits sqlite:/path at the colon.
  [[ $COMP_LINE =~ $pattern ]] && store="\${BASH_REMATCH[1]}"
  "\${COMP_WORDS[0]}" completion --keys \${store:+--store "$store"} 2>/dev/null
}

# The values to offer for option $2 of command path $1: words, @files, @keys, or nothing.
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
  # tenant:api and sqlite:/path arrive as several words when : is in COMP_WORDBREAKS:
  # the word being completed is all of them, from COMP_WORDS[start] to the cursor's.
  local start=$COMP_CWORD cur="" i
  while ((start > 1)) && [[ \${COMP_WORDS[start]} == : || \${COMP_WORDS[start-1]} == : ]]; do ((start--)); done
  for ((i = start; i <= COMP_CWORD; i++)); do cur+="\${COMP_WORDS[i]}"; done
  COMPREPLY=()
  __tbucket_complete "$start" "$cur"
  # Bash replaces only what follows the last colon: offer that part of each candidate.
  if ((start < COMP_CWORD)) && [[ $cur == *:* ]]; then
    local typed="\${cur%"\${cur##*:}"}"
    for ((i = 0; i < \${#COMPREPLY[@]}; i++)); do COMPREPLY[i]="\${COMPREPLY[i]#"$typed"}"; done
  fi
}

# Fills COMPREPLY for the word $2, which starts at COMP_WORDS[$1].
__tbucket_complete() {
  local start=$1 cur=$2 prev="" opt="" path="" word i dashdash=0 positional=0 commands=1
  ((start > 0)) && prev="\${COMP_WORDS[start-1]}"
  for ((i = 1; i < start; i++)); do
    word="\${COMP_WORDS[i]}"
    if [[ $word == -- ]]; then dashdash=$i; break; fi
    # --rate=1mb arrives as three words when = is in COMP_WORDBREAKS: skip = and the value;
    # and sqlite:/path as three when : is: the colon and what follows belong to the word before.
    if [[ $word == = || $word == : ]]; then ((i++)); continue; fi
    if [[ $word == -* ]]; then
      if [[ "\${COMP_WORDS[i+1]}" != = ]] && __tbucket_takes_value "$path" "$word"; then ((i++)); fi
      # As commander reads it: after an option, a word is an operand (tbucket --stats run reads the file run), not a command.
      commands=0
      continue
    fi
    if ((positional == 0 && commands == 1)) && [[ " $(__tbucket_subcommands "$path") " == *" $word "* ]]; then
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
      ((start == dashdash + 1)) && COMPREPLY=($(compgen -c -- "$cur"))
    fi
    return
  fi

  if [[ $cur == = && $prev == -* ]]; then
    opt=$prev cur=""
  elif [[ $prev == = ]] && ((start >= 2)); then
    opt="\${COMP_WORDS[start-2]}"
  elif [[ $prev == -* ]] && __tbucket_takes_value "$path" "$prev"; then
    opt=$prev
  fi
  if [[ -n $opt ]]; then
    local values
    values=$(__tbucket_values "$path" "$opt")
    case $values in
      @files) return ;;
      @keys)
        compopt +o default 2>/dev/null
        COMPREPLY=($(compgen -W "$(__tbucket_keys)" -- "$cur"))
        ;;
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
  ((positional == 0 && commands == 1)) && words=$(__tbucket_subcommands "$path")
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
    keys)
      compopt +o default 2>/dev/null
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
      ((positional == 0)) && COMPREPLY+=($(compgen -W "$(__tbucket_keys)" -- "$cur"))
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
