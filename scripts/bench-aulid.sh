#!/usr/bin/env bash
# AULID figures of docs/benchmarks.md ("AULID: learned inner nodes"): aulid beside btree and
# RocksDB on the same 8-byte keys with 8-byte values, in both regimes:
#   min        the paper's setting: the smallest pool (1 MiB), nothing of the index cached;
#   FRACTION   memory budgets as fractions of the records' bytes (0.5%, 2%, 5%, 20%): where
#              btree's inner nodes fit, then aulid's, then part of the leaves.
# on several key sets (KEYSETS; any key set grove-bench offers works). The paper's workloads,
# one thread, uniform requests:
#   W1 lookups (c)            W2 scans of 100 records (scan-100.yaml)
#   W4/W5/W6 read/insert 90/10, 50/50, 10/90 (read-insert-*.yaml)
#   W3 inserts of new keys (insert-only.yaml), random order; sorted order (appends) on its own
#   data set at the smallest budget and at 0.5%.
# Each key set and target is bulk loaded once; every budget starts from a fresh copy of that
# load, so the inserts of one budget never reach the next, and the targets of one budget run
# back to back. The raw device's random 4 KiB reads
# at queue depth 1 ride along (the physical ceiling of one read per lookup).
#
# PARTS (default "budgets sorted device") picks what runs; a run without `budgets` adds to the
# existing results.
#
# Writes docs/bench-data/$NAME.jsonl, $NAME-commands.txt and the section $NAME.md (NAME: aulid),
# then regenerates docs/benchmarks.md. Not a test: about 15 minutes per key set at 50M records.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
# Its own directory under DATA (on the disk under test; O_DIRECT: not tmpfs), removed at the end.
DATA=${DATA:-build-bench/data}/aulid
RECORDS=${RECORDS:-50M}
KEYSETS=${KEYSETS:-sparse osm lognormal}
BUDGETS=${BUDGETS:-min 0.005 0.02 0.05 0.2}
MIN_CACHE=${MIN_CACHE:-1MiB}           # the smallest cache_bytes a database accepts
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
INSERT_BUDGET=${INSERT_BUDGET:-8M}
TARGETS=${TARGETS:-embedded:aulid embedded:btree rocksdb}
PARTS=${PARTS:-budgets sorted device}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

# NAME: the results' base name under docs/bench-data (another name keeps aulid.md, e.g. for a
# run of one key set after a layout change), TITLE the generated section's title.
NAME=${NAME:-aulid}
TITLE=${TITLE:-AULID: learned inner nodes}
OUT=docs/bench-data
RESULTS=$OUT/$NAME.jsonl
COMMANDS=$OUT/$NAME-commands.txt
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
common=(--records "$RECORDS" --value-size 8 --insert-budget "$INSERT_BUDGET" --direct-io true
  --wal-sync none --threads 1 --distribution uniform --json "$RESULTS" --progress off)
timed=(--duration "$DURATION" --warmup "$WARMUP")
workloads="c,$W/scan-100.yaml,$W/read-insert-90.yaml,$W/read-insert-50.yaml,$W/read-insert-10.yaml,$W/insert-only.yaml"

slug() { local t=${1//[:?=&]/-}; echo "$t"; }
memory() { if [ "$1" = min ]; then echo "--cache-bytes $MIN_CACHE"; else echo "--cache-fraction $1"; fi; }

golden() { echo "$DATA/$(slug "$1")-$2-golden"; }

# Budget-major: the targets of one budget run one after another, so that each ratio compares
# runs minutes apart at most on a device whose speed drifts.
has budgets && for keys in $KEYSETS; do
  for target in $TARGETS; do
    rm -rf "$(golden "$target" "$keys")"
    # The load's own budget is a middling one; the figures of the load are its shape and size.
    run "$BENCH" --target "$target" --dir "$(golden "$target" "$keys")" --keys "$keys" \
      --cache-fraction 0.05 --load-method bulk "${common[@]}" --workloads load \
      --label "aulid $keys load"
  done
  for budget in $BUDGETS; do
    for target in $TARGETS; do
      dir="$DATA/run"
      rm -rf "$dir"
      cp -a "$(golden "$target" "$keys")" "$dir"
      # shellcheck disable=SC2046
      run "$BENCH" --target "$target" --dir "$dir" --keys "$keys" $(memory "$budget") \
        "${common[@]}" "${timed[@]}" --workloads "$workloads" --label "aulid $keys $budget"
      rm -rf "$dir"
    done
  done
  for target in $TARGETS; do rm -rf "$(golden "$target" "$keys")"; done
done

# W3 in key order: appends above the loaded keys, from a fresh load.
has sorted && for budget in min 0.005; do
  for target in $TARGETS; do
    dir="$DATA/$(slug "$target")-sorted"
    rm -rf "$dir"
    # shellcheck disable=SC2046
    run "$BENCH" --target "$target" --dir "$dir" --keys sparse --key-order sorted \
      $(memory "$budget") --load-method bulk "${common[@]}" "${timed[@]}" \
      --workloads "load,$W/insert-only.yaml" --label "aulid sparse-sorted $budget"
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
    --value-size 8 "${timed[@]}" --direct-io true --threads 1 \
    --workloads c --distribution uniform --json "$RESULTS" --progress off --label "aulid device"
fi
rm -rf "$DATA"

"$PYTHON" scripts/aulid_report.py "$RESULTS" "$COMMANDS" --img docs/img --title "$TITLE" \
  >"$OUT/$NAME.md"
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote $OUT/$NAME.md and docs/benchmarks.md" >&2
