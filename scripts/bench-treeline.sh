#!/usr/bin/env bash
# TreeLine against btree, RocksDB and the device, in one run on this machine (docs/benchmarks.md,
# "TreeLine").
#
#   LOAD (bulk by default, as the paper starts every run from a loaded database; LOAD_METHOD=put
#   inserts in random order instead), then YCSB A, B, C, F, D, E with uniform and zipfian
#   requests (D reads 'latest'); the memory budget is a third of the data (the paper's setting),
#   direct IO, wal.sync always for every engine. TreeLine gives a quarter of its budget to the
#   buffer pool and the rest to its record cache; btree and RocksDB get all of it as page/block
#   cache. The device pass reads random 4 KiB pages of a file as large as btree's data file.
#
# Every knob can be overridden from the environment, e.g. VALUE=1016 scripts/bench-treeline.sh.
# Outputs docs/bench-data/treeline-<VALUE>.jsonl and -commands.txt; scripts/treeline_report.py
# turns the JSON lines into the tables of docs/benchmarks.md. Not a test: nothing here runs in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data}
RECORDS=${RECORDS:-4M}                # 256 MiB of 64-byte records; use 1M for 1 KiB records
LOAD_METHOD=${LOAD_METHOD:-bulk}
VALUE=${VALUE:-56}                    # 64-byte records (8-byte keys); 1016: 1 KiB records
FRACTION=${FRACTION:-0.33}
THREADS=${THREADS:-4}
LOAD_THREADS=${LOAD_THREADS:-8}
DURATION=${DURATION:-12}
WARMUP=${WARMUP:-3}
INSERT_BUDGET=${INSERT_BUDGET:-50K}
WORKLOADS=${WORKLOADS:-load,a,b,c,f,d,e}
TARGETS=${TARGETS:-embedded:treeline embedded:btree rocksdb}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
RESULTS=$OUT/treeline-$VALUE.jsonl
COMMANDS=$OUT/treeline-$VALUE-commands.txt
mkdir -p "$OUT" "$DATA"
rm -f "$RESULTS"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

common=(--records "$RECORDS" --value-size "$VALUE" --cache-fraction "$FRACTION"
  --insert-budget "$INSERT_BUDGET" --load-method "$LOAD_METHOD" --duration "$DURATION" --warmup "$WARMUP" --direct-io true
  --label "treeline-$VALUE" --json "$RESULTS" --progress off)

for target in $TARGETS; do
  dir="$DATA/tl-${target//[:?=&]/-}"
  rm -rf "$dir"
  run "$BENCH" --target "$target" --dir "$dir" "${common[@]}" --threads "$THREADS" \
    --load-threads "$LOAD_THREADS" --workloads "$WORKLOADS" --distribution uniform,zipfian
done

file_bytes=$("$PYTHON" - "$RESULTS" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
load = [r for r in runs if r["target"] == "embedded:btree" and r["workload"] == "load"]
print(int(load[-1]["gauges"]["data_file_bytes"]) if load else 1 << 30)
PY
)
run "$BENCH" --target "device?file_bytes=$file_bytes" --dir "$DATA/tl-device" "${common[@]}" \
  --threads "$THREADS" --workloads c --distribution uniform
"$PYTHON" scripts/treeline_report.py "$RESULTS"
