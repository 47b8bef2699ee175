#!/usr/bin/env bash
# AHA-tree figures of docs/benchmarks.md ("AHA-tree: adapting to a hot range"): aha (down- and
# side-split, batch and tree insert) against btree and RocksDB at the same memory, one run, one
# thread, direct IO:
#   load                 RECORDS random inserts (the write-heavy phase; ops/s over time)
#   aha-hot-scan         range searches of 1000 keys, 99% on a 1% hotspot, 60 s: the timeline
#                        shows aha's unstable phase while it adapts, then its stable phase
#   aha-hot-update       updates on the hotspot only, 20 s
#   aha-hot-scan-after   the searches again, 40 s (aha adapts again)
#   oscillate            90/10 then 10/90 range search/update, twice, 60 s phases, each on a 1%
#                        hotspot at a new random start (aha detects each)
#   aha-wide-update      updates over 30% of the keys (more than the memory), 20 s
# Then aha alone with hotspots two and four times as large (aha-hot-scan-2pct, -4pct), for the
# adaptation time and work against the hotspot's size, and the raw device's random reads (the
# physical ceiling).
#
# Writes docs/bench-data/aha.jsonl, aha-commands.txt and the section aha.md (with
# docs/img/aha-*.png), then regenerates docs/benchmarks.md. Not a test: about 50 minutes at 2M.
#
# PARTS selects what runs (default "hot oscillate"):
#   hot         the above
#   oscillate   the paper's regime, hot ranges larger than memory: OSC_TARGETS (aha, btree and
#               RocksDB) each loaded once, then oscillate-{5,15,30}pct.yaml (90/10 <-> 10/90 on
#               hotspots of 5%, 15% and 30% of the data, 30 s phases), oscillate.yaml (1%, in
#               memory) and the updates over 30% of the keys, with the device beside them:
#               aha-oscillate.jsonl, aha-oscillate-commands.txt, aha-oscillate.md and
#               docs/img/aha-oscillate-*.png. About 35 minutes at 2M.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
# Its own directory under DATA (on the disk under test; O_DIRECT: not tmpfs), removed at the end.
DATA=${DATA:-build-bench/data}/aha
RECORDS=${RECORDS:-2M}
VALUE=${VALUE:-128}                   # the paper's 128-byte values
FRACTION=${FRACTION:-0.1}             # memory budget: a tenth of the data
KEYS=${KEYS:-dense}                   # any key set grove-bench offers
TARGETS=${TARGETS:-embedded:aha embedded:aha?split=side embedded:aha?insert=tree embedded:btree rocksdb}
OSC_TARGETS=${OSC_TARGETS:-embedded:aha embedded:btree rocksdb}
# The oscillate part's workloads (names under config/workloads), and the name and title of its
# results, so that a partial rerun can sit beside the full one.
OSC_WORKLOADS=${OSC_WORKLOADS:-oscillate-5pct oscillate-15pct oscillate-30pct oscillate aha-wide-update}
OSC_NAME=${OSC_NAME:-aha-oscillate}
OSC_TITLE=${OSC_TITLE:-AHA-tree: oscillating beyond memory}
PARTS=${PARTS:-hot oscillate}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
W=config/workloads
mkdir -p "$OUT" "$DATA"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

dir_of() { echo "$DATA/${1//[:?=&]/-}"; }

# The raw device's random reads over a file the size of btree's, in the same run.
device() {
  local file_bytes
  file_bytes=$("$PYTHON" - "$RESULTS" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
load = [r for r in runs if r["target"] == "embedded:btree" and r["workload"] == "load"]
print(int(load[-1]["gauges"]["data_file_bytes"]) if load else 1 << 30)
PY
)
  run "$BENCH" --target "device?file_bytes=$file_bytes" --dir "$DATA/device" --records "$RECORDS" \
    --value-size "$VALUE" --duration 8 --warmup 2 --direct-io true --threads 1 --workloads c \
    --distribution uniform --json "$RESULTS" --progress off --label "aha device"
  rm -rf "$DATA/device"
}

# Starts the results NAME.jsonl and NAME-commands.txt, and the options every run of them shares.
begin_results() {
  RESULTS=$OUT/$1.jsonl
  COMMANDS=$OUT/$1-commands.txt
  rm -f "$RESULTS"
  : >"$COMMANDS"
  common=(--records "$RECORDS" --value-size "$VALUE" --keys "$KEYS" --load-method put
    --cache-fraction "$FRACTION" --direct-io true --wal-sync none --threads 1 --json "$RESULTS"
    --progress off)
}

hot_part() {
  begin_results aha

  for target in $TARGETS; do
    dir=$(dir_of "$target")
    rm -rf "$dir"
    run "$BENCH" --target "$target" --dir "$dir" "${common[@]}" \
      --workloads "load,$W/aha-hot-scan.yaml,$W/aha-hot-update.yaml,$W/aha-hot-scan-after.yaml,$W/oscillate.yaml,$W/aha-wide-update.yaml" \
      --label "aha 1pct"
    rm -rf "$dir"
  done

  for size in 2pct 4pct; do
    dir=$(dir_of embedded:aha)-$size
    rm -rf "$dir"
    run "$BENCH" --target embedded:aha --dir "$dir" "${common[@]}" \
      --workloads "load,$W/aha-hot-scan-$size.yaml" --label "aha $size"
    rm -rf "$dir"
  done
  device
  "$PYTHON" scripts/aha_report.py "$RESULTS" "$COMMANDS" --img docs/img >"$OUT/aha.md"
}

oscillate_part() {
  begin_results "$OSC_NAME"
  local workloads="load" w
  for w in $OSC_WORKLOADS; do workloads="$workloads,$W/$w.yaml"; done
  for target in $OSC_TARGETS; do
    dir=$(dir_of "$target")
    rm -rf "$dir"
    run "$BENCH" --target "$target" --dir "$dir" "${common[@]}" \
      --workloads "$workloads" --timeline-counters page_reads,page_writes --label "aha oscillate"
    rm -rf "$dir"
  done
  device
  "$PYTHON" scripts/aha_report.py "$RESULTS" "$COMMANDS" --img docs/img --part oscillate \
    --title "$OSC_TITLE" --name "$OSC_NAME" >"$OUT/$OSC_NAME.md"
}

for part in $PARTS; do
  case $part in
    hot) hot_part ;;
    oscillate) oscillate_part ;;
    *) echo "unknown part $part (hot, oscillate)" >&2; exit 2 ;;
  esac
done
rm -rf "$DATA"

"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote docs/benchmarks.md" >&2
