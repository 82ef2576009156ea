#!/usr/bin/env zsh
# Usage: zsh zsh-complete.zsh <completion script> <command line typed so far>
# Types the line into an interactive zsh in a pseudo-terminal, presses Tab, and prints
# the candidates zsh's completion system offers, one a line (compadd is wrapped to print them).
# The technique is zsh-capture-completion's (github.com/Valodim/zsh-capture-completion, MIT):
# a NUL line before and after the completion widget marks where the candidates are.
zmodload zsh/zpty || { print -u2 'zsh/zpty is missing'; exit 1 }
local script=$1 typed=$2
zpty z zsh -f -i
local line
zpty -w z "PROMPT=''; autoload -U compinit && compinit -u -D; source ${(q)script}"
zpty -w z "zstyle ':completion:*' list-grouped false; zstyle ':completion:*' insert-tab false; bindkey '^I' complete-word"
zpty -w z 'null-line () { echo -E - $'"'"'\0'"'"' }; compprefuncs=( null-line ); comppostfuncs=( null-line exit )'
zpty -w z 'compadd () {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
  typeset -a __hits
  builtin compadd -A __hits "$@"
  local h; for h in $__hits; do echo -E - "$h"; done
}'
zpty -w z "echo ready"
repeat 20; do zpty -r z line; [[ $line == ready* ]] && break; done
zpty -w -n z "$typed"$'\t'
integer started=0
while zpty -r z line; do
  if [[ $line == *$'\0'* ]]; then (( started++ )) && break || continue; fi
  (( started )) && print -r -- ${line%$'\r'}
done
zpty -d z
