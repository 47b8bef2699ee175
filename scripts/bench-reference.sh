#!/usr/bin/env bash
# The reference run behind the "10M keys" section of docs/benchmarks.md (`make bench-reference`):
# 10M 8-byte big-endian keys (1..10M) with 16-byte values, direct IO, cache = 1/8 of the data,
# btree. LOAD through Put (random order, 32 client threads so group commit can batch fsyncs)
# and through Db::BulkLoad, then uniform random Gets with 1 and 2 threads on each tree.
# Takes 30-60 minutes, most of it the Put load. Writes docs/bench-data/reference-10m.jsonl and
# -commands.txt, then regenerates docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
OUT=docs/bench-data
RESULTS=$OUT/reference-10m.jsonl
COMMANDS=$OUT/reference-10m-commands.txt
mkdir -p "$OUT" "$DATA"
rm -f "$RESULTS"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

# --insert-budget 0: the key set is exactly 1..10M (no keys held back for inserts).
common=(--target embedded:btree --records 10M --value-size 16 --cache-fraction 0.125
  --insert-budget 0 --direct-io true --json "$RESULTS")
reads=(--workloads c --distribution uniform --duration 60 --warmup 15)

if [ "${PUT:-1}" = 1 ]; then  # PUT=0 skips the Put-loaded tree (most of the run's time)
  run "$BENCH" "${common[@]}" --dir "$DATA/ref-put" --label put-tree --workloads load \
    --load-method put --threads 32
  for t in 1 2; do
    run "$BENCH" "${common[@]}" --dir "$DATA/ref-put" --label put-tree "${reads[@]}" --threads "$t"
  done
fi
run "$BENCH" "${common[@]}" --dir "$DATA/ref-bulk" --label bulk-tree --workloads load \
  --load-method bulk --threads 1
for t in 1 2; do
  run "$BENCH" "${common[@]}" --dir "$DATA/ref-bulk" --label bulk-tree "${reads[@]}" --threads "$t"
done
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
