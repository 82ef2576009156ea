#!/usr/bin/env bash
# The suite must pass on a loaded 2-core machine every time, from a clone anywhere. This runs
# ROUNDS rounds of two suites side by side, each in a fresh clone of HEAD in a 0700 folder,
# beside two CPU hogs, and prints each suite's count and the tests that failed.
#
#   bash scripts/soak.sh [ROUNDS]     # default 3 rounds (six suites), about 15 min a round
#
# node_modules and the native part (build/) are copied from this checkout (npm ci, which CI runs,
# makes both); dist is built anew.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
here=$(pwd)
work=$(mktemp -d)
chmod 700 "$work"
hogs=()
cleanup() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

failed_suites=0
for round in $(seq 1 "$rounds"); do
  pids=()
  for side in a b; do
    clone="$work/$round$side"
    git clone -q "$here" "$clone"
    cp -a "$here/node_modules" "$clone/"
    [ -d "$here/build" ] && cp -a "$here/build" "$clone/"
    (cd "$clone" && npm run build >/dev/null 2>&1)
  done
  hogs=()
  for _ in 1 2; do
    node -e 'for (;;) {}' &
    hogs+=($!)
  done
  for side in a b; do
    clone="$work/$round$side"
    (cd "$clone" && TBUCKET_TEST_REPORT="$clone/report.json" npx vitest run >"$clone/log" 2>&1 || true) &
    pids+=($!)
  done
  wait "${pids[@]}"
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  hogs=()
  for side in a b; do
    report="$work/$round$side/report.json"
    node -e '
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      console.log(`round ${process.argv[2]}: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
      for (const file of r.testResults) for (const t of file.assertionResults) {
        if (t.status !== "failed") continue;
        console.log(`  FAILED ${file.name.replace(/.*\/test\//, "test/")}: ${t.fullName}`);
        for (const message of t.failureMessages) console.log(message.slice(0, 3000).replace(/^/gm, "    "));
      }
      process.exit(r.numFailedTests > 0 ? 1 : 0);
    ' "$report" "$round$side" || failed_suites=$((failed_suites + 1))
  done
done
echo "$failed_suites of $((rounds * 2)) suites had failures"
[ "$failed_suites" -eq 0 ]
