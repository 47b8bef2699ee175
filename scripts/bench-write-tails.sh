#!/usr/bin/env bash
# make bench-write-tails: durable inserts and their tails at memory budgets from 16 MiB to 1 GiB,
# Grove beside RocksDB (docs/benchmarks.md "At a billion keys", write tails at any budget).
#
# The setting of the issue that found the 94 ms p999: 200K records of 100-byte values, sparse keys,
# `wal.sync: always`, the engine's default checkpoint triggers (no interval is forced). For each
# budget and engine, in this order, on a fresh directory:
#
#   load      the records, inserted through the engine (not bulk-loaded), unsynced, with
#             INSERT_BUDGET new keys reserved so that no insert run turns into updates
#   ins-tN    durable inserts of new keys for SECONDS_PER_RUN, N = 1, 4, 16 threads
#
# Each engine's directory is deleted after its budget. Output: grove-bench's JSON lines appended
# to $OUT, labelled tails:<budget>:<engine>:<step>; scripts/write_tails_report.py makes the table.
#
#   scripts/bench-write-tails.sh        BUDGETS="16MiB 64MiB 256MiB 1GiB" ENGINES="btree hln rocksdb"
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-build-bench/client/bench/grove-bench}
BUDGETS=${BUDGETS:-"16MiB 64MiB 256MiB 1GiB"}
ENGINES=${ENGINES:-"btree hln rocksdb"}
RECORDS=${RECORDS:-200K}
VALUE_SIZE=${VALUE_SIZE:-100}
THREADS=${THREADS:-"1 4 16"}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-20}
INSERT_BUDGET=${INSERT_BUDGET:-3M}  # new keys reserved at the load for the insert runs
BASE=${BASE:-grove-bench-data/tails}
OUT=${OUT:-docs/bench-data/scale-tails.jsonl}

[ -x "$BIN" ] || { echo "bench-write-tails: $BIN not built (make bench-build)" >&2; exit 1; }
mkdir -p "$BASE" "$(dirname "$OUT")"

for budget in $BUDGETS; do
  for engine in $ENGINES; do
    case "$engine" in
      rocksdb) target=rocksdb ;;
      *) target="embedded:$engine" ;;
    esac
    dir="$BASE/$engine"
    rm -rf "$dir"
    common=(--target "$target" --dir "$dir" --keys sparse --records "$RECORDS"
      --value-size "$VALUE_SIZE" --cache-bytes "$budget" --json "$OUT" --no-table --progress off)
    echo "== $budget $engine load" >&2
    "$BIN" "${common[@]}" -w load --insert-budget "$INSERT_BUDGET" --wal-sync none \
      --label "tails:$budget:$engine:load"
    for t in $THREADS; do
      echo "== $budget $engine ins-t$t" >&2
      "$BIN" "${common[@]}" -w config/workloads/insert-only.yaml --wal-sync always --threads "$t" \
        --duration "$SECONDS_PER_RUN" --label "tails:$budget:$engine:ins-t$t"
    done
    rm -rf "$dir"
  done
done
echo "bench-write-tails: results in $OUT" >&2
