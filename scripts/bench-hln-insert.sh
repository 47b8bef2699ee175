#!/usr/bin/env bash
# HLN figures of docs/benchmarks.md ("HLN-tree: insert-built trees"): btree, hln and hln with
# `hash: fnv` built by inserting every key in random order (the paper's split phase, which bulk
# loading skips), on a uniform and a skewed key set. Reports fill grade, inner-node memory,
# splits, rebalances and write amplification of the load, then YCSB C (uniform and zipfian),
# A, B, D and E with a cache smaller than the data, and btree again with its inner-node share
# limited to hln's inner-node memory.
#
# The load runs with a cache that holds the whole tree and `wal.sync: none`, so that it takes
# minutes rather than hours on one disk; the workloads then reopen the tree with CACHE_PAGES and
# `wal.sync: always`. Writes docs/bench-data/hln-insert.jsonl, hln-insert-commands.txt and the
# section hln-insert.md, then regenerates docs/benchmarks.md. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data/hln-insert}
RECORDS=${RECORDS:-15.6M}
KEYSETS=${KEYSETS:-sparse lognormal}
LEAF_PAGES=${LEAF_PAGES:-16}
LOAD_CACHE_PAGES=${LOAD_CACHE_PAGES:-524288}  # 2 GiB
CACHE_PAGES=${CACHE_PAGES:-16384}             # 64 MiB
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-5}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
RESULTS=$OUT/hln-insert.jsonl
COMMANDS=$OUT/hln-insert-commands.txt
mkdir -p "$OUT"
rm -rf "$DATA" "$RESULTS"
mkdir -p "$DATA"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

common=(--records "$RECORDS" --value-size 8 --direct-io true --json "$RESULTS" --progress off
  --insert-budget 2M)
load=(-w load --load-method batch --batch-size 1000 --key-order random --wal-sync none
  --cache-bytes $((LOAD_CACHE_PAGES * 4096)))
runs=(--cache-bytes $((CACHE_PAGES * 4096)) --wal-sync always --duration "$DURATION"
  --warmup "$WARMUP")

trees=(btree "hln?leaf_pages=$LEAF_PAGES" "hln?leaf_pages=$LEAF_PAGES&hash=fnv")
target_of() {
  local sep='?'
  [[ $1 == *'?'* ]] && sep='&'
  echo "embedded:$1${sep}inner_cache_fraction=0.9"
}
label_of() {
  local l="$1 ${2/\?/ }"
  echo "${l//&/ }"
}
dir_of() { echo "$DATA/$1-${2//[?&=]/-}"; }

for keys in $KEYSETS; do
  for tree in "${trees[@]}"; do
    args=(--target "$(target_of "$tree")" --dir "$(dir_of "$keys" "$tree")" --keys "$keys"
      "${common[@]}" --label "$(label_of "$keys" "$tree")")
    run "$BENCH" "${args[@]}" "${load[@]}"
    run "$BENCH" "${args[@]}" "${runs[@]}" -w c --distribution uniform,zipfian
  done

  # btree with as much inner-node memory as hln (its load) has, on the same data as above.
  hln_inner=$("$PYTHON" - "$RESULTS" "$(label_of "$keys" "${trees[1]}")" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [r for r in runs if r.get("label") == sys.argv[2] and r["workload"] == "load"][-1]
print(int(r["gauges"]["index_inner_pages"]))
PY
)
  fraction=$("$PYTHON" -c "print(max($hln_inner, 1) / $CACHE_PAGES)")
  run "$BENCH" --target "embedded:btree?inner_cache_fraction=$fraction" \
    --dir "$(dir_of "$keys" btree)" --keys "$keys" "${common[@]}" "${runs[@]}" \
    -w c --distribution uniform,zipfian --label "$keys btree limited to hln's inner memory"

  # Workloads with writes last: D and E insert, A and B update.
  for tree in "${trees[@]}"; do
    run "$BENCH" --target "$(target_of "$tree")" --dir "$(dir_of "$keys" "$tree")" --keys "$keys" \
      "${common[@]}" --label "$(label_of "$keys" "$tree")" "${runs[@]}" -w b,a,d,e
  done
done

"$PYTHON" scripts/hln_insert_report.py "$RESULTS" "$COMMANDS" >"$OUT/hln-insert.md"
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote $OUT/hln-insert.md and docs/benchmarks.md" >&2
