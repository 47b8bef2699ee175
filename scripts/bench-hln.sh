#!/usr/bin/env bash
# HLN figures of docs/benchmarks.md ("HLN-tree: huge leaves"): btree and hln bulk loaded with the
# same keys (8-byte keys, 8-byte values), inner-node memory at 64 KiB / 256 KiB / 1 MiB leaves,
# YCSB C (uniform) with every inner node cached, and btree again with its inner-node share limited
# to hln's inner-node memory at 64 KiB leaves; extra subnode reads per lookup by hint bits.
#
# Writes docs/bench-data/hln.jsonl, hln-commands.txt and the section hln.md, then regenerates
# docs/benchmarks.md. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
DATA=${DATA:-build-bench/data/hln}
RECORDS=${RECORDS:-15.6M}
KEYS=${KEYS:-sparse}
CACHE_PAGES=${CACHE_PAGES:-16384}   # 64 MiB
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-5}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
RESULTS=$OUT/hln.jsonl
COMMANDS=$OUT/hln-commands.txt
mkdir -p "$OUT"
rm -rf "$DATA" "$RESULTS"
mkdir -p "$DATA"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

cache=$((CACHE_PAGES * 4096))
common=(--records "$RECORDS" --keys "$KEYS" --value-size 8 --cache-bytes "$cache"
  --direct-io true --json "$RESULTS" --progress off --insert-budget 0)
reads=(-w c --distribution uniform --duration "$DURATION" --warmup "$WARMUP")

# Every inner node cached: an inner-node share of the whole cache.
run "$BENCH" --target "embedded:btree?inner_cache_fraction=0.9" --dir "$DATA/btree" "${common[@]}" \
  -w load --load-method bulk --label "btree"
run "$BENCH" --target "embedded:btree?inner_cache_fraction=0.9" --dir "$DATA/btree" "${common[@]}" \
  "${reads[@]}" --label "btree"
for leaf in 16 64 256; do
  run "$BENCH" --target "embedded:hln?leaf_pages=$leaf&inner_cache_fraction=0.9" \
    --dir "$DATA/hln-$leaf" "${common[@]}" -w load --load-method bulk --label "hln leaf_pages=$leaf"
  run "$BENCH" --target "embedded:hln?leaf_pages=$leaf&inner_cache_fraction=0.9" \
    --dir "$DATA/hln-$leaf" "${common[@]}" "${reads[@]}" --label "hln leaf_pages=$leaf"
done

# btree with as much inner-node memory as hln at 64 KiB leaves.
hln_inner=$("$PYTHON" - "$RESULTS" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [r for r in runs if r.get("label") == "hln leaf_pages=16" and r["workload"] == "load"][-1]
print(int(r["gauges"]["index_inner_pages"]))
PY
)
fraction=$("$PYTHON" -c "print(max($hln_inner, 1) / $CACHE_PAGES)")
run "$BENCH" --target "embedded:btree?inner_cache_fraction=$fraction" --dir "$DATA/btree" \
  "${common[@]}" "${reads[@]}" --label "btree limited to hln's inner memory"

# Extra subnode reads by hint bits, at 1 MiB leaves (the paper's Table 3).
for bits in 0 2 8; do
  run "$BENCH" --target "embedded:hln?leaf_pages=256&hint_bits=$bits&inner_cache_fraction=0.9" \
    --dir "$DATA/hln-256-h$bits" "${common[@]}" -w load --load-method bulk \
    --label "hln leaf_pages=256 hint_bits=$bits"
  run "$BENCH" --target "embedded:hln?leaf_pages=256&hint_bits=$bits&inner_cache_fraction=0.9" \
    --dir "$DATA/hln-256-h$bits" "${common[@]}" "${reads[@]}" \
    --label "hln leaf_pages=256 hint_bits=$bits"
done

"$PYTHON" scripts/hln_report.py "$RESULTS" "$COMMANDS" >"$OUT/hln.md"
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote $OUT/hln.md and docs/benchmarks.md" >&2
