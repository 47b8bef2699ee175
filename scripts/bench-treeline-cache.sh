#!/usr/bin/env bash
# The record cache before and after its rebuild (docs/benchmarks.md, "TreeLine"): the same
# workloads on copies of the same starting database, with a grove-bench built from an older
# commit (OLD_BENCH) and from this tree (BENCH), alternating, each under `perf record` so that
# the share of CPU samples in the record cache can be compared. btree runs beside them with this
# tree's binary.
#
#   OLD_BENCH=/path/to/old/build-bench/client/bench/grove-bench scripts/bench-treeline-cache.sh
#
# Needs the starting databases scripts/bench-treeline.sh leaves (PARTS=load, VALUE=1016) and
# Debian's linux-perf. Outputs docs/bench-data/treeline-cache.jsonl, -commands.txt and
# treeline-cache-perf.txt (the top symbols of each profile). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
OLD_BENCH=${OLD_BENCH:?set OLD_BENCH to a grove-bench built from the commit to compare with}
OLD_LABEL=${OLD_LABEL:-before}
DATA=${DATA:-build-bench/data}
VALUE=${VALUE:-1016}
RECORDS=${RECORDS:-1M}
THREADS=${THREADS:-4}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
ROUNDS=${ROUNDS:-2}
WORKLOADS=${WORKLOADS:-c,b}

OUT=docs/bench-data
RESULTS=$OUT/treeline-cache.jsonl
COMMANDS=$OUT/treeline-cache-commands.txt
PERF=$OUT/treeline-cache-perf.txt
rm -f "$RESULTS"
# The commit OLD_BENCH was built from, when it sits in a git checkout.
OLD_COMMIT=${OLD_COMMIT:-$(git -C "$(dirname "$OLD_BENCH")" rev-parse --short HEAD 2>/dev/null ||
  echo unknown)}
echo "# \$OLD_BENCH ($OLD_LABEL): grove-bench built from commit $OLD_COMMIT" >"$COMMANDS"
: >"$PERF"

common=(--records "$RECORDS" --value-size "$VALUE" --cache-fraction 0.33 --insert-budget 200K
  --direct-io true --progress off --threads "$THREADS" --wal-sync always --duration "$DURATION"
  --warmup "$WARMUP" --workloads "$WORKLOADS" --distribution zipfian --json "$RESULTS")

one() {
  local label=$1 bench=$2 target=$3 golden=$4
  local dir="$DATA/tl-cache-run" data="$DATA/tl-cache-$label.perf"
  rm -rf "$dir"
  cp -a "$golden" "$dir"
  # The older binary is named by its variable: where it was built is no part of the result.
  local shown=$bench
  [ "$bench" = "$OLD_BENCH" ] && shown='$OLD_BENCH'
  echo "$shown --target $target --dir $dir ${common[*]} --label $label" >>"$COMMANDS"
  perf record -q -F 499 -g -o "$data" -- "$bench" --target "$target" --dir "$dir" "${common[@]}" \
    --label "$label" >/dev/null
  {
    echo "== $label ($target)"
    perf report -i "$data" --no-children --sort symbol --stdio 2>/dev/null |
      grep -E '^ +[0-9.]+%' | awk 'n++ < 12' | cut -c1-110
  } >>"$PERF"
  rm -rf "$dir" "$data"
}

for round in $(seq "$ROUNDS"); do
  one "$OLD_LABEL" "$OLD_BENCH" embedded:treeline "$DATA/tl-$VALUE-embedded-treeline-golden"
  one after "$BENCH" embedded:treeline "$DATA/tl-$VALUE-embedded-treeline-golden"
  one btree "$BENCH" embedded:btree "$DATA/tl-$VALUE-embedded-btree-golden"
done
