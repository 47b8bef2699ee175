#!/usr/bin/env bash
# The advisor's validation (docs/benchmarks.md, "The advisor"): six workloads built from
# config/workloads, one per variant's niche and a mixed one. For each:
#   1. trace  groved (btree, from the Release build) holds RECORDS records (bulk loaded once by
#             grove-bench embedded and copied for each workload); grove-bench runs the workload
#             over gRPC for TRACE_SECONDS per phase while `grovectl trace start --sample SAMPLE`
#             records it;
#   2. advise `grovectl advise` on that trace with RECORDS/s synthesised records and MEMORY/s of
#             memory (the same share of the data), timed, where s is SCALE or less: the largest
#             at which MEMORY/s still holds MIN_MEMORY (default 8 MiB: budgets of a few MiB
#             do not scale every variant's structures with them; TreeLine's buffer pool share
#             has a floor of its own);
#   3. truth  every candidate at RECORDS records and the workload's MEMORY runs the workload
#             itself (embedded, bulk loaded, DURATION seconds per phase after a warm-up), ROUNDS
#             times in turns (every candidate once, then again), timed; beside them in every
#             round, REFERENCES (RocksDB at the same budget) and the raw device's random 4 KiB
#             reads at THREADS deep over a file the size of btree's, so each ratio has its
#             baseline and ceiling from the same minutes.
# The pick passes when it reaches 90% of the best candidate's throughput in the truth runs, and
# the advice when it took at most a tenth of the truth runs' time.
#
# Writes docs/bench-data/advisor.jsonl (truth runs), advisor-advice.jsonl (one advice per
# workload), advisor-times.txt, advisor-commands.txt and the section advisor.md, then regenerates
# docs/benchmarks.md. Not a test. WORKLOADS picks a subset by name. TRUTH=0 keeps the truth runs
# of an earlier run (advisor.jsonl, advisor-times.txt and their commands) and redoes steps 1 and
# 2 only, for a change of the advisor that cannot change the truth. KEYS picks the key set
# (grove-bench --keys) and NAME the files' stem (advisor.*), so a second setting keeps its own.
set -euo pipefail
set -f  # candidate URIs hold "?": never globs
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
GROVED=${GROVED:-build-bench/server/groved}
GROVECTL=${GROVECTL:-build-bench/client/grovectl}
DATA=${DATA:-build-bench/data}/advisor
RECORDS=${RECORDS:-2M}
VALUE=${VALUE:-100}
KEYS=${KEYS:-dense}
NAME=${NAME:-advisor}
SCALE=${SCALE:-4}
MIN_MEMORY=${MIN_MEMORY:-$((8 << 20))}
ROUNDS=${ROUNDS:-2}
TRUTH=${TRUTH:-1}
SAMPLE=${SAMPLE:-0.25}
TRACE_SECONDS=${TRACE_SECONDS:-10}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-3}
THREADS=${THREADS:-4}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
CANDIDATES=${CANDIDATES:-embedded:btree embedded:btree?prefetch=shortcut embedded:hln embedded:treeline embedded:aulid embedded:aha}
REFERENCES=${REFERENCES:-rocksdb}
DEVICE=${DEVICE:-1}

# name | workload | --distribution | memory as a share of the data
ALL_WORKLOADS="
skewed-points|config/workloads/ycsb-a.yaml|zipfian|0.1
hot-range-burst|config/workloads/hot-range-burst.yaml||0.1
inserts-little-memory|config/workloads/read-insert-50.yaml||0.03
cold-points|config/workloads/ycsb-c.yaml|uniform|0.03
scans|config/workloads/scan-100.yaml||0.1
mixed|config/workloads/mixed.yaml||0.1
"
WORKLOADS=${WORKLOADS:-$(echo "$ALL_WORKLOADS" | cut -d'|' -f1 | xargs)}

OUT=docs/bench-data
RESULTS=$OUT/$NAME.jsonl
ADVICE=$OUT/$NAME-advice.jsonl
TIMES=$OUT/$NAME-times.txt
COMMANDS=$OUT/$NAME-commands.txt
mkdir -p "$OUT"
rm -rf "$DATA"
mkdir -p "$DATA/traces"
truth_commands=
if [ "$TRUTH" = 0 ]; then
  [ -s "$RESULTS" ] && [ -s "$TIMES" ] || { echo "TRUTH=0 needs the truth runs of an earlier run" >&2; exit 1; }
  truth_commands=$(grep -- '--workloads load,' "$COMMANDS" || true)
else
  : >"$RESULTS"
  : >"$TIMES"
fi
: >"$ADVICE"
[ "$TRUTH" = 0 ] || rm -f "$TIMES.failed"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}
now() { date +%s.%N; }
records_n=$("$PYTHON" -c "
import re,sys
t='$RECORDS'; m=re.fullmatch(r'([0-9.]+)([KMG]?)',t)
print(int(float(m.group(1))*{'':1,'K':10**3,'M':10**6,'G':10**9}[m.group(2)]))")
data_bytes=$((records_n * (8 + VALUE)))

read -r port mport < <("$PYTHON" - <<'PY'
import socket
ports = []
socks = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ports.append(s.getsockname()[1]); socks.append(s)
print(*ports)
PY
)
groved_pid=
trap '[ -n "$groved_pid" ] && kill $groved_pid 2>/dev/null || true' EXIT

# The traced groved's starting database: bulk loaded once, copied for each workload.
base=$DATA/groved-base
run "$BENCH" --target embedded:btree --dir "$base" --records "$RECORDS" --value-size "$VALUE" \
  --keys "$KEYS" --load-method bulk --workloads load --progress off --no-table

for name in $WORKLOADS; do
  line=$(echo "$ALL_WORKLOADS" | grep "^$name|")
  IFS='|' read -r _ workload dist share <<<"$line"
  memory=$("$PYTHON" -c "print(max(1 << 20, int($data_bytes * $share) // 4096 * 4096))")
  scale=$("$PYTHON" -c "print(max(1.0, min($SCALE, $memory / $MIN_MEMORY)))")
  advise_memory=$("$PYTHON" -c "print(max(1 << 20, int($data_bytes * $share / $scale) // 4096 * 4096))")
  advise_records=$("$PYTHON" -c "print(int($records_n / $scale))")
  distflag=()
  [ -n "$dist" ] && distflag=(--distribution "$dist")

  # 1. The trace, through groved.
  gdir=$DATA/groved-$name
  mkdir -p "$gdir/bench"
  cp -r "$base" "$gdir/data"
  rm "$gdir/data/grove-bench-state.json"
  # grove-bench over gRPC finds the keys the bulk load wrote through its state file.
  "$PYTHON" -c "
import json
s = json.load(open('$base/grove-bench-state.json'))
s['target'] = 'grpc://127.0.0.1:$port'
json.dump(s, open('$gdir/bench/grove-bench-state.json', 'w'))"
  cat >"$gdir/groved.yaml" <<YAML
data_dir: $gdir/data
cache_bytes: $memory
trace:
  dir: $DATA/traces
server:
  listen: 127.0.0.1:$port
  metrics_listen: 127.0.0.1:$mport
YAML
  echo "$GROVED --config $gdir/groved.yaml  # cache_bytes: $memory" >>"$COMMANDS"
  "$GROVED" --config "$gdir/groved.yaml" >"$gdir/groved.log" 2>&1 &
  groved_pid=$!
  for _ in $(seq 150); do
    curl -sf "http://127.0.0.1:$mport/readyz" >/dev/null 2>&1 && break
    kill -0 "$groved_pid" 2>/dev/null || { cat "$gdir/groved.log" >&2; exit 1; }
    sleep 0.2
  done
  target="grpc://127.0.0.1:$port"
  run "$GROVECTL" --addr "127.0.0.1:$port" trace start --sample "$SAMPLE" --out "$name"
  run "$BENCH" --target "$target" --dir "$gdir/bench" --records "$RECORDS" --value-size "$VALUE" \
    --keys "$KEYS" --progress off --no-table --workloads "$workload" "${distflag[@]}" --threads 16 \
    --duration "$TRACE_SECONDS" --label "advisor traced run"
  run "$GROVECTL" --addr "127.0.0.1:$port" trace stop
  kill "$groved_pid"
  wait "$groved_pid" || true
  groved_pid=
  rm -rf "$gdir/data"
  trace=$DATA/traces/$name.trace

  # 2. The advice.
  t0=$(now)
  # shellcheck disable=SC2086
  run "$GROVECTL" -o json advise --trace "$trace" --memory "$advise_memory" \
    --records "$advise_records" --value-size "$VALUE" --threads "$THREADS" \
    --scratch "$DATA/advise" --no-progress \
    --candidates "$(echo $CANDIDATES | tr ' ' ',')" >"$DATA/advice.json"
  t1=$(now)
  "$PYTHON" -c "
import json,sys
a=json.load(open('$DATA/advice.json')); a['workload']='$name'; a['wall_seconds']=$t1-$t0
a['trace_bytes']=$(stat -c %s "$trace"); a['advise_memory']=$advise_memory
print(json.dumps(a))" >>"$ADVICE"

  # 3. The truth: every candidate on the workload itself, at full size.
  [ "$TRUTH" = 0 ] && continue
  # truth_seconds counts the candidates' runs only: the comparison the advice stands in for.
  truth_seconds=0
  for round in $(seq "$ROUNDS"); do
    for c in $CANDIDATES $REFERENCES; do
      rm -rf "$DATA/truth"
      t0=$(now)
      # A candidate that cannot run at this budget (treeline's smallest pool) is reported missing.
      run "$BENCH" --target "$c" --dir "$DATA/truth" --records "$RECORDS" --value-size "$VALUE" \
        --keys "$KEYS" --cache-bytes "$memory" --direct-io true --wal-sync always \
        --load-method bulk --workloads "load,$workload" "${distflag[@]}" --threads "$THREADS" \
        --duration "$DURATION" --warmup "$WARMUP" --json "$RESULTS" --progress off --no-table \
        --label "advisor $name round $round" ||
        echo "$name $c failed" >>"$TIMES.failed"
      t1=$(now)
      case " $CANDIDATES " in
        *" $c "*) truth_seconds=$("$PYTHON" -c "print($truth_seconds + $t1 - $t0)") ;;
      esac
    done
    [ "$DEVICE" = 1 ] || continue
    # The device's ceiling: random 4 KiB reads, THREADS deep, over a file the size of btree's.
    file_bytes=$("$PYTHON" - "$RESULTS" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
load = [r for r in runs if r["target"] == "embedded:btree" and r["workload"] == "load"]
print(int(load[-1]["gauges"]["data_file_bytes"]) if load else 1 << 30)
PY
)
    rm -rf "$DATA/device"
    run "$BENCH" --target "device?file_bytes=$file_bytes" --dir "$DATA/device" \
      --records "$RECORDS" --value-size "$VALUE" --duration 8 --warmup 2 --direct-io true \
      --threads "$THREADS" --workloads c --distribution uniform --json "$RESULTS" --progress off \
      --no-table --label "advisor $name round $round"
    rm -rf "$DATA/device"
  done
  rm -rf "$DATA/truth"
  echo "$name truth_seconds $truth_seconds memory $memory" >>"$TIMES"
done
trap - EXIT
rm -rf "$base"

if [ -n "$truth_commands" ]; then
  { echo "# the truth runs, from an earlier run of this script:"; echo "$truth_commands"; } >>"$COMMANDS"
fi
"$PYTHON" scripts/advisor_report.py "$RESULTS" "$ADVICE" "$TIMES" "$COMMANDS" \
  --keys "$KEYS" --value-size "$VALUE" --min-memory "$MIN_MEMORY" >"$OUT/$NAME.md"
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
