#!/usr/bin/env bash
# TreeLine's factor analysis and insert forecasting, in one run on this machine (docs/benchmarks.md,
# "TreeLine"). Not a test: nothing here runs in CI.
#
#   factors   1 KiB records (the paper's Fig. 8 setting), zipfian A, B, C, E, with the default
#             TreeLine beside each switch turned the other way: cache bypass, grouping off,
#             optimistic caching on, batched write-back off. btree beside them as the yardstick.
#   forecast  64-byte records on the clustered synthetic 'osm' key set (a stand-in for the paper's
#             taxi pick-ups: inserts land where the data is dense), loaded, then a fixed count of
#             50% read (latest) / 50% insert operations, forecasting off and on. Both runs do the
#             same inserts, so their reorganisation counts compare directly.
#
# Outputs docs/bench-data/treeline-factors.jsonl, treeline-forecast.jsonl and their -commands.txt;
# scripts/treeline_report.py --factors / --forecast prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data}
PARTS=${PARTS:-factors,forecast}
FRACTION=${FRACTION:-0.33}
THREADS=${THREADS:-4}
LOAD_THREADS=${LOAD_THREADS:-8}
DURATION=${DURATION:-12}
WARMUP=${WARMUP:-3}
# factors
F_RECORDS=${F_RECORDS:-1M}
F_VALUE=${F_VALUE:-1016}
F_WORKLOADS=${F_WORKLOADS:-load,a,b,c,e}
# forecast
P_RECORDS=${P_RECORDS:-1M}
P_VALUE=${P_VALUE:-56}
P_OPS=${P_OPS:-600K}
P_KEYS=${P_KEYS:-osm}
P_EPOCH=${P_EPOCH:-25000}
# Epochs a reorganisation leaves room for: the run's inserts (half of P_OPS) over the epoch, as the
# paper's run looks 100 epochs of 100k inserts ahead on 33M keys (a third of the data).
P_FUTURE=${P_FUTURE:-12}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
mkdir -p "$OUT" "$DATA"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

if [[ ,$PARTS, == *,factors,* ]]; then
  RESULTS=$OUT/treeline-factors.jsonl
  COMMANDS=$OUT/treeline-factors-commands.txt
  rm -f "$RESULTS"
  : >"$COMMANDS"
  for target in embedded:treeline "embedded:treeline?cache=false" \
    "embedded:treeline?grouping=false" "embedded:treeline?optimistic_caching=true" \
    "embedded:treeline?batched_writeback=false" embedded:btree; do
    dir="$DATA/tlf-${target//[:?=&]/-}"
    rm -rf "$dir"
    run "$BENCH" --target "$target" --dir "$dir" --records "$F_RECORDS" --value-size "$F_VALUE" \
      --cache-fraction "$FRACTION" --duration "$DURATION" --warmup "$WARMUP" --direct-io true \
      --threads "$THREADS" --load-threads "$LOAD_THREADS" --workloads "$F_WORKLOADS" --load-method bulk \
      --distribution zipfian --label treeline-factors --json "$RESULTS" --progress off
    rm -rf "$dir"
  done
  "$PYTHON" scripts/treeline_report.py --factors "$RESULTS"
fi

if [[ ,$PARTS, == *,forecast,* ]]; then
  RESULTS=$OUT/treeline-forecast.jsonl
  COMMANDS=$OUT/treeline-forecast-commands.txt
  rm -f "$RESULTS"
  : >"$COMMANDS"
  # The insert reserve holds every insert of the run (half of P_OPS) with room to spare.
  for forecasting in false true; do
    target="embedded:treeline?forecasting=$forecasting&forecast_epoch_inserts=$P_EPOCH"
    target+="&forecast_future_epochs=$P_FUTURE"
    dir="$DATA/tlp-$forecasting"
    rm -rf "$dir"
    run "$BENCH" --target "$target" --dir "$dir" --records "$P_RECORDS" --value-size "$P_VALUE" \
      --keys "$P_KEYS" --insert-budget "$P_OPS" --cache-fraction "$FRACTION" --direct-io true \
      --threads "$THREADS" --load-threads "$LOAD_THREADS" \
      --workloads load,config/workloads/read-insert.yaml --ops "$P_OPS" --warmup-ops 0 \
      --label treeline-forecast --json "$RESULTS" --progress off
    rm -rf "$dir"
  done
  "$PYTHON" scripts/treeline_report.py --forecast "$RESULTS"
fi
