#!/usr/bin/env bash
# Installs the Debian packages the tests use, when missing: redis-server for
# the shared-bucket tests, zsh and fish for the completion tests, strace to
# show that a pipe starts no process, curl as the client that honours
# Retry-After in the proxy's and run's tests. As root it
# runs apt-get, saying so; otherwise it names the packages to install and fails.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
command -v fish >/dev/null 2>&1 || missing+=(fish)
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "tbucket tests: installing ${missing[*]} with apt-get" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "tbucket tests: ${missing[*]} missing; install them (Debian: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
