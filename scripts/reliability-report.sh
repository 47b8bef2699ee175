#!/usr/bin/env bash
# Runs the reliability suite (ctest -L reliability) with its JSON summaries collected, then prints
# them as the Markdown tables of docs/reliability.md.
#
#   scripts/reliability-report.sh [--build-dir DIR] [--json FILE] [extra ctest arguments]
#
# Long runs: GROVE_RELIABILITY_SCALE=N (N times the sampled work), GROVE_CRASH_POINTS=all (every
# IO of the crash and IO-error workloads), GROVE_TORTURE_CYCLES=N.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
json=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) break ;;
  esac
done
[ -n "$json" ] || json=$(mktemp /tmp/grove-reliability-XXXXXX.jsonl)
: >"$json"
rc=0
start=$(date +%s)
GROVE_RELIABILITY_REPORT=$(realpath "$json") ctest --test-dir "$build" -L reliability \
  --output-on-failure "$@" || rc=$?
echo "reliability suite: $(( $(date +%s) - start )) s, ctest exit $rc; JSON lines in $json"
python3 scripts/reliability_tables.py "$json"
exit $rc
