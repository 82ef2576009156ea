#!/usr/bin/env bash
# Installs the Debian packages the tests use (redis-server for the shared-bucket
# tests), when missing. As root it runs apt-get, saying so; otherwise it names
# the package to install and fails.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "tbucket tests: installing ${missing[*]} with apt-get" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "tbucket tests: ${missing[*]} is missing; install it (Debian: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
