#!/usr/bin/env bash
# AULID figures of docs/benchmarks.md ("AULID: learned inner nodes"): aulid against btree,
# btree with SHORTCUT prefetch and RocksDB, bulk loaded with the same 8-byte keys and 8-byte
# values, at memory budgets (fractions of the records' bytes) where the B+-tree's inner nodes do
# not fit, where they fit, and where AULID's fit too. The paper's workloads, one thread:
#   W1 lookups (c, uniform)            W2 scans of 100 records (scan-100.yaml)
#   W4/W5/W6 read/insert 90/10, 50/50, 10/90 (read-insert-*.yaml)
#   W3 inserts of new keys (insert-only.yaml), random order; sorted order on its own data set.
# Then the hard key sets (osm, fb) for btree and aulid: W1 and W3 at the smallest budget.
# The raw device's random 4 KiB reads at queue depth 1 ride along (the physical ceiling).
#
# PARTS (default "budgets sorted hard device") picks what runs; the results of a run without
# `budgets` are added to the existing files.
#
# Writes docs/bench-data/aulid.jsonl, aulid-commands.txt and the section aulid.md, then
# regenerates docs/benchmarks.md. Not a test: 30-40 minutes at 50M records.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data/aulid}   # on the disk under test (O_DIRECT: not tmpfs)
RECORDS=${RECORDS:-50M}
FRACTIONS=${FRACTIONS:-0.005 0.05 0.2}
HARD_KEYS=${HARD_KEYS:-osm fb}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
INSERT_BUDGET=${INSERT_BUDGET:-8M}
TARGETS=${TARGETS:-embedded:aulid embedded:btree embedded:btree?prefetch=shortcut rocksdb}
PARTS=${PARTS:-budgets sorted hard device}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
RESULTS=$OUT/aulid.jsonl
COMMANDS=$OUT/aulid-commands.txt
W=config/workloads
mkdir -p "$OUT" "$DATA"
has() { [[ " $PARTS " == *" $1 "* ]]; }
if has budgets; then
  rm -f "$RESULTS"
  : >"$COMMANDS"
fi

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

# The index is measured, not the log: wal.sync none (the paper's indexes have no log).
common=(--records "$RECORDS" --value-size 8 --insert-budget "$INSERT_BUDGET" --load-method bulk
  --duration "$DURATION" --warmup "$WARMUP" --direct-io true --wal-sync none --threads 1
  --distribution uniform --json "$RESULTS" --progress off)
workloads="c,$W/scan-100.yaml,$W/read-insert-90.yaml,$W/read-insert-50.yaml,$W/read-insert-10.yaml,$W/insert-only.yaml"

dir_of() { echo "$DATA/${1//[:?=&]/-}-$2"; }

# Every budget gets a fresh bulk load, so that the inserts of the budget before do not count.
has budgets && for fraction in $FRACTIONS; do
  for target in $TARGETS; do
    dir=$(dir_of "$target" sparse)
    rm -rf "$dir"
    run "$BENCH" --target "$target" --dir "$dir" --keys sparse --cache-fraction "$fraction" \
      "${common[@]}" --workloads "load,$workloads" --label "aulid sparse $fraction"
    rm -rf "$dir"
  done
done

# W3 in key order: appends above the loaded keys.
fraction=${FRACTIONS%% *}
has sorted && for target in $TARGETS; do
  dir=$(dir_of "$target" sorted)
  rm -rf "$dir"
  run "$BENCH" --target "$target" --dir "$dir" --keys sparse --key-order sorted \
    --cache-fraction "$fraction" "${common[@]}" --workloads "load,$W/insert-only.yaml" \
    --label "aulid sparse-sorted $fraction"
  rm -rf "$dir"
done

has hard && for keys in $HARD_KEYS; do
  for target in embedded:aulid embedded:btree; do
    dir=$(dir_of "$target" "$keys")
    rm -rf "$dir"
    run "$BENCH" --target "$target" --dir "$dir" --keys "$keys" --cache-fraction "$fraction" \
      "${common[@]}" --workloads "load,c,$W/insert-only.yaml" --label "aulid $keys $fraction"
    rm -rf "$dir"
  done
done

if has device; then
  file_bytes=$("$PYTHON" - "$RESULTS" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
load = [r for r in runs if r["target"] == "embedded:btree" and r["workload"] == "load"]
print(int(load[-1]["gauges"]["data_file_bytes"]) if load else 1 << 30)
PY
)
  run "$BENCH" --target "device?file_bytes=$file_bytes" --dir "$DATA/device" --records "$RECORDS" \
    --value-size 8 --duration "$DURATION" --warmup "$WARMUP" --direct-io true --threads 1 \
    --workloads c --distribution uniform --json "$RESULTS" --progress off --label "aulid device"
fi
rm -rf "$DATA"

"$PYTHON" scripts/aulid_report.py "$RESULTS" "$COMMANDS" --img docs/img >"$OUT/aulid.md"
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote $OUT/aulid.md and docs/benchmarks.md" >&2
