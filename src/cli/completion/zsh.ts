import { allCommands, type CommandSpec, type OptionSpec, optionNames } from "./command-tree.js";
import { header, singleQuoteForShell } from "./shell-script.js";

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
    const action = option.files ? "_files" : option.keys ? "_tbucket_keys" : option.choices.length > 0 ? `(${option.choices.map(zshEscape).join(" ")})` : " ";
    value = `${option.value === "optional" ? "::" : ":"}${zshEscape(option.valueName)}:${action}`;
  }
  return names.map((name) => `'${exclusive}${name}[${zshEscape(option.description)}]${value}'`);
}

function zshFunction(spec: CommandSpec): string {
  const lines = spec.options.flatMap(zshOptionSpecs);
  const hasSubcommands = spec.subcommands.length > 0;
  if (hasSubcommands) lines.push(`'1: :->command'`, `'*:: :->args'`);
  else if (spec.operands.kind === "files") lines.push(`'*:file:_files'`);
  else if (spec.operands.kind === "keys") lines.push(`'1:key:_tbucket_keys'`);
  else if (spec.operands.kind === "command") lines.push(`'1:command:_command_names -e'`, `'*::arguments:_normal'`);
  else if (spec.operands.kind === "words") lines.push(`'*:argument:${spec.operands.values.length > 0 ? `(${spec.operands.values.map(zshEscape).join(" ")})` : " "}'`);

  const body = [`${zshFunctionName(spec)}() {`, `  local curcontext="$curcontext" state state_descr line ret=1`, `  typeset -A opt_args`];
  // The command as typed (./bin/tbucket too), for _tbucket_keys: the functions below see it, as zsh scopes locals.
  if (spec.path.length === 0) body.push(`  local tbucket_program=$words[1]`);
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
      `      # As commander reads it: after an option, a word is an operand (tbucket --stats run reads the file run), not a command.
      (( \${#opt_args} == 0 )) && _describe -t commands 'tbucket command' commands && ret=0`,
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

/** The zsh completion script for the command tree (autoloadable from $fpath, or sourced). */
export function zshScript(root: CommandSpec): string {
  return `#compdef tbucket
${header("zsh", "#", "source <(tbucket completion zsh)   (after compinit)", 'tbucket completion zsh > "${fpath[1]}/_tbucket"')}
# The shared buckets' names, from the store named on the line (--store) or the default one; nothing if it cannot say.
_tbucket_keys() {
  local store="" i
  for (( i = 1; i < CURRENT; i++ )); do
    [[ $words[i] == --store ]] && store=$words[i+1]
    [[ $words[i] == --store=* ]] && store=\${words[i]#--store=}
  done
  local -a keys
  keys=(\${(f)"$(\${tbucket_program:-tbucket} completion --keys \${store:+--store} \${store:+$store} 2>/dev/null)"})
  compadd -a keys
}

${allCommands(root).map(zshFunction).join("\n\n")}

# Autoloaded from $fpath: complete now. Sourced: register the function.
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _tbucket "$@"
else
  compdef _tbucket tbucket
fi
`;
}
