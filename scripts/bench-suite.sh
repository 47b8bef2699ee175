#!/usr/bin/env bash
# The standard benchmark suite behind `make bench` and docs/benchmarks.md.
#
#   btree vs RocksDB vs the device, in one run on this machine:
#     LOAD, then YCSB A, B, C, F, D, E (each with uniform and zipfian requests; D reads 'latest'),
#     data about 8x the memory budget, direct IO, Grove's default durability (wal sync always)
#     for both engines; the device pass reads random 4 KiB pages at the same queue depth;
#     then Grove over gRPC against a no-op RPC on the same server (YCSB C, uniform).
#
# Runs in about 15 minutes on 2 cores. Every knob below can be overridden from the environment,
# e.g. RECORDS=2M DURATION=30 scripts/bench-suite.sh. Outputs:
#   docs/bench-data/suite.jsonl         the JSON lines of every run
#   docs/bench-data/suite-commands.txt  the exact commands
#   docs/img/bench-*.png                the plots (scripts/plot.py)
#   docs/benchmarks.md                  the report (scripts/bench_report.py)
# Benchmarks are not tests: nothing here runs in `make test` or CI.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
GROVED=${GROVED:-build-bench/server/groved}
DATA=${DATA:-build-bench/data}        # must be on the disk under test (O_DIRECT: not tmpfs)
RECORDS=${RECORDS:-500K}
VALUE=${VALUE:-100}
FRACTION=${FRACTION:-0.125}           # memory budget = 1/8 of records x (8 + VALUE) bytes
THREADS=${THREADS:-4}
LOAD_THREADS=${LOAD_THREADS:-8}
DURATION=${DURATION:-15}              # seconds per measured run
WARMUP=${WARMUP:-3}                   # seconds of unmeasured warm-up before each run
INSERT_BUDGET=${INSERT_BUDGET:-50K}
GRPC=${GRPC:-1}                       # 0 skips the gRPC part
PYTHON=${PYTHON:-/usr/bin/python3}    # Debian's, which has python3-matplotlib
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
RESULTS=$OUT/suite.jsonl
COMMANDS=$OUT/suite-commands.txt
mkdir -p "$OUT" docs/img "$DATA"
rm -f "$RESULTS"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

# --insert-budget: keys held back for D's and E's inserts (a few thousand at these rates); the
# loaded keys are then a random 1/1.1 of 1..1.1 x RECORDS.
common=(--records "$RECORDS" --value-size "$VALUE" --cache-fraction "$FRACTION"
  --insert-budget "$INSERT_BUDGET" --duration "$DURATION" --warmup "$WARMUP" --direct-io true --label make-bench --json "$RESULTS")

started=$(date +%s)
for target in embedded:btree rocksdb; do
  run "$BENCH" --target "$target" --dir "$DATA/${target//:/-}" "${common[@]}" \
    --threads "$THREADS" --load-threads "$LOAD_THREADS" --workloads load,a,b,c,f,d,e --distribution uniform,zipfian
done

# The device file is as large as the B-tree's data file, so reads span the same extent.
file_bytes=$("$PYTHON" - "$RESULTS" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
load = [r for r in runs if r["target"].startswith("embedded") and r["workload"] == "load"][-1]
print(int(load["gauges"]["data_file_bytes"]))
PY
)
for qd in "$THREADS" 1; do
  run "$BENCH" --target "device?file_bytes=$file_bytes" --dir "$DATA/device" "${common[@]}" \
    --threads "$qd" --workloads c --distribution uniform
done

if [ "$GRPC" = 1 ]; then
  # groved with the same memory budget, on free loopback ports, stopped at the end. The load
  # goes through BatchInsert in small batches: a batch must fit in the buffer pool's free frames
  # (pages are no-steal between checkpoints), see docs/grove-bench.md.
  read -r port mport cache < <("$PYTHON" - "$RECORDS" "$VALUE" "$FRACTION" <<'PY'
import socket, sys
def size(t):
    mult = {"K": 1e3, "M": 1e6, "G": 1e9}
    return float(t[:-1]) * mult[t[-1]] if t[-1] in mult else float(t)
ports = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ports.append(s.getsockname()[1]); s.close()
# The same budget grove-bench computes (CacheBytes): 4 KiB aligned, at least 1 MiB.
cache = max(1 << 20, int(size(sys.argv[1]) * (8 + float(sys.argv[2])) * float(sys.argv[3])) // 4096 * 4096)
print(ports[0], ports[1], cache)
PY
)
  rm -rf "$DATA/groved"
  mkdir -p "$DATA/groved"
  cat >"$DATA/groved/groved.yaml" <<YAML
data_dir: $DATA/groved/data
cache_bytes: $cache
server:
  listen: 127.0.0.1:$port
  metrics_listen: 127.0.0.1:$mport
YAML
  echo "$GROVED --config $DATA/groved/groved.yaml  # cache_bytes: $cache" >>"$COMMANDS"
  "$GROVED" --config "$DATA/groved/groved.yaml" >"$DATA/groved/groved.log" 2>&1 &
  groved_pid=$!
  trap 'kill $groved_pid 2>/dev/null || true' EXIT
  ready=0
  for _ in $(seq 150); do
    if curl -sf "http://127.0.0.1:$mport/readyz" >/dev/null 2>&1; then ready=1; break; fi
    kill -0 "$groved_pid" 2>/dev/null || break
    sleep 0.2
  done
  if [ "$ready" != 1 ]; then
    echo "groved did not become ready:" >&2
    cat "$DATA/groved/groved.log" >&2
    exit 1
  fi
  run "$BENCH" --target "grpc://127.0.0.1:$port" --dir "$DATA/grpc" "${common[@]}" \
    --threads "$THREADS" --load-threads 4 --load-method batch --batch-size 20 \
    --workloads load,c --distribution uniform
  run "$BENCH" --target "grpc-noop://127.0.0.1:$port" --dir "$DATA/grpc-noop" "${common[@]}" \
    --threads "$THREADS" --workloads c --distribution uniform
  kill "$groved_pid"
  wait "$groved_pid" || true
  trap - EXIT
fi
echo "# suite wall time: $(($(date +%s) - started)) s" >>"$COMMANDS"

run "$PYTHON" scripts/plot.py "$RESULTS" --out docs/img --prefix bench
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote docs/benchmarks.md, docs/img/bench-*.png and $RESULTS" >&2
