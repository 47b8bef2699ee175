#!/usr/bin/env bash
# TreeLine against btree, RocksDB and the device, in the TreeLine paper's protocol, on this
# machine (docs/benchmarks.md, "TreeLine").
#
#   1. load: each engine bulk-loads RECORDS records (RocksDB ingests SST files) and is then aged
#      by AGE uniform updates of loaded records in batches (grove-bench --age; the paper's 40M
#      updates on 33M keys, "so RocksDB has several levels"), and settles (a checkpoint; a flush
#      and the compaction backlog). This is the starting database of every run.
#   2. tables: for every wal.sync mode in SYNCS (always: equal durability, Grove's default; none:
#      the paper's setting, which runs with the log off) and thread count in THREADS_LIST, every
#      engine runs YCSB A, B, C, F, D, E with uniform and zipfian requests (D reads 'latest') on a
#      fresh copy of its starting database; beside them, the device's random 4 KiB reads at the
#      same queue depth. One JSON-lines file per table.
#   3. sweep: one TreeLine parameter, SWEEP_PARAM (default buffer_pool_share: the rest of the
#      budget is the record cache) over SHARES, on the same workloads, SWEEP_SYNC and
#      SWEEP_THREADS, each value from a fresh copy.
#
# Memory: a third of the data for every engine (the paper's setting). TreeLine splits it by
# buffer_pool_share; btree gives it all to its buffer pool; RocksDB splits it as the paper's
# Table 3 does (two memtables of 15.7% each, 68.6% block cache; docs/grove-bench.md). Direct IO.
#
# Every knob can be overridden from the environment, e.g. VALUE=1016 RECORDS=1M PARTS=tables.
# Outputs docs/bench-data/treeline-<VALUE>-load.jsonl, treeline-<VALUE>-<sync>-t<threads>.jsonl,
# treeline-<VALUE>-sweep.jsonl (another SWEEP_PARAM: treeline-<VALUE>-sweep-<param>.jsonl) and a
# -commands.txt beside each; scripts/treeline_report.py turns
# them into the tables of docs/benchmarks.md. Not a test: nothing here runs in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data}
VALUE=${VALUE:-56}                    # 64-byte records (8-byte keys); 1016: 1 KiB records
RECORDS=${RECORDS:-4M}                # 256 MiB of 64-byte records; use 1M for 1 KiB records
KEYS=${KEYS:-dense}                   # any grove-bench key set; not dense: in the file names
AGE=${AGE:-$RECORDS}                  # uniform updates after the load
FRACTION=${FRACTION:-0.33}
SYNCS=${SYNCS:-always none}
THREADS_LIST=${THREADS_LIST:-4 16}
LOAD_THREADS=${LOAD_THREADS:-8}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-3}
INSERT_BUDGET=${INSERT_BUDGET:-200K}
WORKLOADS=${WORKLOADS:-a,b,c,f,d,e}
TARGETS=${TARGETS:-embedded:treeline embedded:btree rocksdb}
SWEEP_PARAM=${SWEEP_PARAM:-buffer_pool_share}
SHARES=${SHARES:-0.02 0.05 0.1 0.25}
SWEEP_SYNC=${SWEEP_SYNC:-none}
SWEEP_THREADS=${SWEEP_THREADS:-4}
PARTS=${PARTS:-load tables sweep}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=${OUT:-docs/bench-data}  # where the JSON lines and commands go
mkdir -p "$OUT" "$DATA"
# File and directory names: the record size, and the key set when it is not the default.
SET=$VALUE
[ "$KEYS" = dense ] || SET+="-$KEYS"
[ "$FRACTION" = 0.33 ] || SET+="-m$FRACTION"

run() {
  local commands=$1
  shift
  echo "$*" >>"$commands"
  echo "+ $*" >&2
  "$@"
}

slug() { local t=${1%%\?*}; echo "${t//[:?=&]/-}"; }
golden() { echo "$DATA/tl-$SET-$(slug "$1")-golden"; }
has() { [[ " $PARTS " == *" $1 "* ]]; }

common=(--records "$RECORDS" --value-size "$VALUE" --keys "$KEYS" --cache-fraction "$FRACTION"
  --insert-budget "$INSERT_BUDGET" --direct-io true --progress off)

# A fresh copy of `target`'s starting database in `dir`.
fresh_copy() {
  local target=$1 dir=$2
  rm -rf "$dir"
  cp -a "$(golden "$target")" "$dir"
}

if has load; then
  results=$OUT/treeline-$SET-load.jsonl
  commands=$OUT/treeline-$SET-load-commands.txt
  rm -f "$results"
  : >"$commands"
  for target in $TARGETS; do
    dir=$(golden "$target")
    rm -rf "$dir"
    # The age step is no measurement of its own: unsynced, for every engine alike.
    run "$commands" "$BENCH" --target "$target" --dir "$dir" "${common[@]}" \
      --load-method bulk --load-threads "$LOAD_THREADS" --age "$AGE" --batch-size 1000 \
      --wal-sync none --workloads load --label "treeline-$SET-load" --json "$results"
  done
fi

run_table() {
  local sync=$1 threads=$2 results=$3 commands=$4 targets=$5 label=$6
  for target in $targets; do
    local base=${target%%\?*}
    local dir="$DATA/tl-$SET-run"
    fresh_copy "$base" "$dir"
    run "$commands" "$BENCH" --target "$target" --dir "$dir" "${common[@]}" --threads "$threads" \
      --wal-sync "$sync" --duration "$DURATION" --warmup "$WARMUP" --workloads "$WORKLOADS" \
      --distribution uniform,zipfian --label "$label" --json "$results"
    rm -rf "$dir"
  done
}

if has tables; then
  for sync in $SYNCS; do
    for threads in $THREADS_LIST; do
      results=$OUT/treeline-$SET-$sync-t$threads.jsonl
      commands=$OUT/treeline-$SET-$sync-t$threads-commands.txt
      rm -f "$results"
      : >"$commands"
      run_table "$sync" "$threads" "$results" "$commands" "$TARGETS" "treeline-$SET-$sync-t$threads"
      file_bytes=$("$PYTHON" - "$OUT/treeline-$SET-load.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
load = [r for r in runs if r["target"] == "embedded:btree" and r["workload"] in ("load", "age")]
print(int(load[-1]["gauges"]["data_file_bytes"]) if load else 1 << 30)
PY
)
      run "$commands" "$BENCH" --target "device?file_bytes=$file_bytes" --dir "$DATA/tl-device" \
        "${common[@]}" --threads "$threads" --duration "$DURATION" --warmup "$WARMUP" \
        --workloads c --distribution uniform --label "treeline-$SET-$sync-t$threads" \
        --json "$results"
      "$PYTHON" scripts/treeline_report.py "$results"
    done
  done
fi

if has sweep; then
  name=treeline-$SET-sweep
  [ "$SWEEP_PARAM" = buffer_pool_share ] || name+="-$SWEEP_PARAM"
  results=$OUT/$name.jsonl
  commands=$OUT/$name-commands.txt
  rm -f "$results"
  : >"$commands"
  targets=""
  for share in $SHARES; do targets+=" embedded:treeline?$SWEEP_PARAM=$share"; done
  run_table "$SWEEP_SYNC" "$SWEEP_THREADS" "$results" "$commands" "$targets" "$name"
  "$PYTHON" scripts/treeline_report.py --sweep "$results"
fi
