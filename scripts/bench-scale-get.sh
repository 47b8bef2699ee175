#!/usr/bin/env bash
# make bench-scale-get: cold Get of btree and hln at one size, side by side in one run, each beside
# the device read over its own data file and over a smaller file of DEVICE_BYTES (docs/benchmarks.md
# "At a billion keys", "Cold Get: what bounds it").
#
# Both engines' databases are loaded first and kept (at 10^9: about 27 GB each, so 55 GB and the
# device file), then for each thread count the runs alternate in rounds:
#
#   btree get, hln get, device on btree's file, device on hln's file, device on DEVICE_BYTES
#
# so that a change of the device's speed during the run shows as a change between rounds, not as a
# difference between engines. Each Get run is a new process (a clean open; its warm-up fills the
# inner nodes), on the gapped key set with 8-byte values and the same CACHE for both.
#
#   SIZE=1e9 scripts/bench-scale-get.sh
#   SIZE=1e8 ROUNDS=3 THREADS="1 16" scripts/bench-scale-get.sh
#   KEEP=1 FIRST_ROUND=3 THREADS="1 4 16" scripts/bench-scale-get.sh   (more rounds, same databases)
#
# Output: JSON lines appended to $OUT, labelled scale-get:<records>:<round>:<step>-t<threads>.
# The databases are deleted at the end unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-build-bench/client/bench/grove-bench}
SIZE=${SIZE:-1e9}
BASE=${BASE:-grove-bench-data/scale-get}
OUT=${OUT:-docs/bench-data/scale-get.jsonl}
CACHE=${CACHE:-1GiB}
WARMUP=${WARMUP:-15}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-15}
DEVICE_BYTES=${DEVICE_BYTES:-8GiB}
THREADS=${THREADS:-"1 16"}
ROUNDS=${ROUNDS:-2}
FIRST_ROUND=${FIRST_ROUND:-1}  # to add rounds to an earlier run's (KEEP=1 kept its databases)
KEEP=${KEEP:-0}
INSERT_BUDGET=${INSERT_BUDGET:-40M}

[ -x "$BIN" ] || { echo "bench-scale-get: $BIN not built (make bench-build)" >&2; exit 1; }
mkdir -p "$BASE" "$(dirname "$OUT")"
records=$SIZE

grove() {  # grove ENGINE LABEL ARGS...
  local engine=$1 label=$2
  shift 2
  echo "== $engine $records $label" >&2
  "$BIN" --target "embedded:$engine" --dir "$BASE/$engine" --keys gapped --records "$records" \
    --value-size 8 --cache-bytes "$CACHE" --label "scale-get:$records:$label" --json "$OUT" \
    --no-table --progress off "$@"
}

device() {  # device TARGET LABEL THREADS
  echo "== $1 $2" >&2
  "$BIN" --target "$1" --dir "$BASE/device" -w c --distribution uniform --threads "$3" \
    --duration "$SECONDS_PER_RUN" --records 1M --label "scale-get:$records:$2" --json "$OUT" \
    --no-table --progress off
}

for engine in btree hln; do
  if [ ! -f "$BASE/$engine/grove.data" ]; then
    rm -rf "$BASE/$engine"
    grove "$engine" load -w load --load-method bulk --insert-budget "$INSERT_BUDGET" --wal-sync none
  fi
done
du -sB1 "$BASE"/btree "$BASE"/hln >&2

for t in $THREADS; do
  for round in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
    for engine in btree hln; do
      grove "$engine" "$round:$engine-get-t$t" -w c --distribution uniform --threads "$t" \
        --warmup "$WARMUP" --duration "$SECONDS_PER_RUN"
    done
    for engine in btree hln; do
      device "device?file=$BASE/$engine/grove.data" "$round:device-$engine-file-t$t" "$t"
    done
    device "device?file_bytes=$DEVICE_BYTES" "$round:device-small-file-t$t" "$t"
  done
done

if [ "$KEEP" != 1 ]; then rm -rf "$BASE/btree" "$BASE/hln"; fi
