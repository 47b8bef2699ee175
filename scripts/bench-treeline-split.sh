#!/usr/bin/env bash
# TreeLine's memory split, dirty_share and write-back batching (docs/benchmarks.md, "TreeLine: the
# memory split, dirty_share and write-back reads in one submission"), on the starting databases
# bench-treeline.sh loads (made here when missing), into docs/bench-data/treeline-split/:
#
#   1. 64 B records, wal.sync always, 4 threads: TreeLine (fixed split), btree, RocksDB, the
#      device, then TreeLine with buffer_pool_max_share 0.9.
#   2. The same at 1 KiB, 16 threads; then a dirty_share sweep (0.25, 1) there.
#   3. 1 KiB, wal.sync none, 16 threads (the paper's setting): TreeLine, btree, RocksDB; then a
#      buffer_pool_share sweep on A and F there (the pool bounds the dirty pages of write-backs).
#   4. With OLD_BENCH (a grove-bench built from an older commit): A and F at 1 KiB, 16 threads,
#      old and new in turns, twice, then btree (the write-back batch comparison).
#
# Then scripts/treeline_split_report.py writes docs/bench-data/treeline_split.md. ~1 h. Not a
# test: nothing here runs in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data}
OUT=docs/bench-data/treeline-split
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
mkdir -p "$OUT"
export BENCH DATA OUT

parts() {  # VALUE: load only when a starting database is missing
  for t in embedded-treeline embedded-btree rocksdb; do
    [ -d "$DATA/tl-$1-$t-golden" ] || { echo "load tables sweep"; return; }
  done
  echo "tables sweep"
}

VALUE=56 RECORDS=4M PARTS="$(parts 56)" SYNCS=always THREADS_LIST=4 \
  SWEEP_PARAM=buffer_pool_max_share SHARES=0.9 SWEEP_SYNC=always SWEEP_THREADS=4 \
  scripts/bench-treeline.sh
VALUE=1016 RECORDS=1M PARTS="$(parts 1016)" SYNCS=always THREADS_LIST=16 \
  SWEEP_PARAM=buffer_pool_max_share SHARES=0.9 SWEEP_SYNC=always SWEEP_THREADS=16 \
  scripts/bench-treeline.sh
VALUE=1016 RECORDS=1M PARTS=sweep SWEEP_PARAM=dirty_share SHARES="0.25 1" SWEEP_SYNC=always \
  SWEEP_THREADS=16 scripts/bench-treeline.sh
VALUE=1016 RECORDS=1M PARTS=tables SYNCS=none THREADS_LIST=16 scripts/bench-treeline.sh
VALUE=1016 RECORDS=1M PARTS=sweep SWEEP_PARAM=buffer_pool_share SHARES="0.05 0.15 0.3" \
  SWEEP_SYNC=none SWEEP_THREADS=16 WORKLOADS=a,f scripts/bench-treeline.sh

if [ -n "${OLD_BENCH:-}" ]; then
  res=$OUT/treeline-1016-writeback-batch.jsonl
  cmds=$OUT/treeline-1016-writeback-batch-commands.txt
  rm -f "$res"
  : >"$cmds"
  common=(--records 1M --value-size 1016 --keys dense --cache-fraction 0.33 --insert-budget 200K
    --direct-io true --progress off --threads 16 --wal-sync always --duration 8 --warmup 3
    --workloads a,f --distribution uniform,zipfian --json "$res")
  one() {  # bench target label: from a fresh copy of the target's starting database
    local dir=$DATA/tl-1016-run base=${2%%\?*}
    rm -rf "$dir"
    cp -a "$DATA/tl-1016-${base//[:?=&]/-}-golden" "$dir"
    echo "$1 --target $2 --dir $dir ${common[*]} --label $3" >>"$cmds"
    "$1" --target "$2" --dir "$dir" "${common[@]}" --label "$3"
    rm -rf "$dir"
  }
  for round in 1 2; do
    one "$OLD_BENCH" embedded:treeline before
    one "$BENCH" embedded:treeline after
  done
  one "$BENCH" embedded:btree btree
fi

"$PYTHON" scripts/treeline_split_report.py "$OUT" >docs/bench-data/treeline_split.md
