#!/usr/bin/env bash
# gRPC figures of docs/benchmarks.md ("Over gRPC: Get and Put on loopback"): groved from the
# Release build on free loopback ports, loaded through BatchInsert, then Get (YCSB C, uniform) and
# Put (new keys, config/workloads/insert-only.yaml) at 1 and several client threads over the
# Batch stream (one client shared by the threads) and over unary calls (a client per thread),
# and the no-op RPC (a health check) as the ceiling of the RPC stack. wal.sync: always, as
# shipped. The CPU time of groved and of grove-bench over each run (warm-up included) goes to
# grpc-cpu.txt, for CPU per call.
#
# Writes docs/bench-data/grpc.jsonl, grpc-commands.txt and the section grpc.md, then regenerates
# docs/benchmarks.md. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
GROVED=${GROVED:-build-bench/server/groved}
DATA=${DATA:-build-bench/data/grpc-bench}
RECORDS=${RECORDS:-1M}
VALUE=${VALUE:-100}
CACHE=${CACHE:-256MiB}
DURATION=${DURATION:-10}
THREADS=${THREADS:-1 4 16 64}   # client threads of each RPC's runs
BATCH=${BATCH:-20}               # mutations per BatchInsert
EMBEDDED_THREADS=${EMBEDDED_THREADS:-1 4 16 64}  # threads of the embedded insert runs
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
RESULTS=$OUT/grpc.jsonl
COMMANDS=$OUT/grpc-commands.txt
mkdir -p "$OUT"
rm -rf "$DATA" "$RESULTS"
mkdir -p "$DATA"
: >"$COMMANDS"

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

CPU=$OUT/grpc-cpu.txt
: >"$CPU"
# CPU seconds (user + system) of groved so far.
server_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$groved_pid/stat"
}
# CPU seconds of this shell's finished children between two `times` outputs (its second line;
# `times` must run in this shell, not in a command substitution's subshell).
children_delta() {
  awk 'FNR == 2 {
    s = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] }
    if (NR == FNR) a = s; else b = s
  } END { print b - a }' "$1" "$2"
}
# run, with the CPU both processes spent on it appended to $CPU as "label threads server client".
measured() {
  local label=$1 threads=$2
  shift 2
  local s0
  s0=$(server_cpu)
  times >"$DATA/times0"
  run "$@"
  times >"$DATA/times1"
  echo "$label $threads $(awk -v a="$s0" -v b="$(server_cpu)" 'BEGIN{print b - a}') \
$(children_delta "$DATA/times0" "$DATA/times1")" >>"$CPU"
}

read -r port mport < <("$PYTHON" - <<'PY'
import socket
ports = []
socks = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ports.append(s.getsockname()[1]); socks.append(s)
print(*ports)
PY
)
# Starts groved on data directory $1 (config $DATA/groved.yaml pointed at it).
start_groved() {
  cat >"$DATA/groved.yaml" <<YAML
data_dir: $1
cache_bytes: $CACHE
server:
  listen: 127.0.0.1:$port
  metrics_listen: 127.0.0.1:$mport
YAML
  "$GROVED" --config "$DATA/groved.yaml" >"$DATA/groved.log" 2>&1 &
  groved_pid=$!
  for _ in $(seq 150); do
    curl -sf "http://127.0.0.1:$mport/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$groved_pid" 2>/dev/null || { cat "$DATA/groved.log" >&2; exit 1; }
    sleep 0.2
  done
}
stop_groved() {
  kill "$groved_pid"
  wait "$groved_pid" || true
}
trap 'kill $groved_pid 2>/dev/null || true' EXIT
echo "$GROVED --config $DATA/groved.yaml  # cache_bytes: $CACHE, the embedded defaults otherwise" >>"$COMMANDS"
start_groved "$DATA/data"

common=(--records "$RECORDS" --value-size "$VALUE" --json "$RESULTS" --progress off
  --duration "$DURATION" --warmup 2)
target="grpc://127.0.0.1:$port"
run "$BENCH" --target "$target" --dir "$DATA/bench" "${common[@]}" --workloads load \
  --load-method batch --batch-size 100 --load-threads 4 --insert-budget 2M --label grpc
for t in $THREADS; do
  for transport in stream unary; do
    sfx=$([ "$transport" = stream ] && echo "" || echo " unary")
    measured "grpc get$sfx" "$t" "$BENCH" --target "$target" --dir "$DATA/bench" "${common[@]}" \
      --workloads c --distribution uniform --threads "$t" --grpc-transport "$transport" \
      --label "grpc get$sfx"
    measured "grpc put$sfx" "$t" "$BENCH" --target "$target" --dir "$DATA/bench" "${common[@]}" \
      --workloads config/workloads/insert-only.yaml --threads "$t" --grpc-transport "$transport" \
      --label "grpc put$sfx"
  done
  measured "grpc no-op" "$t" "$BENCH" --target "grpc-noop://127.0.0.1:$port" --dir "$DATA/noop" \
    "${common[@]}" --workloads c --threads "$t" --label "grpc no-op"
done
stop_groved
# BatchInsert: a load through batches of $BATCH mutations, each into a groved of its own.
for t in $THREADS; do
  rm -rf "$DATA/batch"
  echo "$GROVED --config $DATA/groved.yaml  # data_dir: $DATA/batch" >>"$COMMANDS"
  start_groved "$DATA/batch"
  run "$BENCH" --target "$target" --dir "$DATA/batch-$t" --records 200K --value-size "$VALUE" \
    --json "$RESULTS" --progress off --workloads load --load-method batch --batch-size "$BATCH" \
    --threads "$t" --load-threads "$t" --label "grpc batch"
  stop_groved
done
trap - EXIT
# The engine itself, embedded, with the same records, cache and wal.sync: always, beside RocksDB:
# what Put over gRPC compares with.
for target in embedded:btree rocksdb; do
  for t in $EMBEDDED_THREADS; do
    rm -rf "$DATA/embedded"
    run "$BENCH" --target "$target" --dir "$DATA/embedded" "${common[@]}" --cache-bytes "$CACHE" \
      --direct-io true --wal-sync always --workloads load,config/workloads/insert-only.yaml \
      --load-method batch --batch-size 100 --load-threads 4 --insert-budget 2M --threads "$t" \
      --label "embedded insert"
  done
done
rm -rf "$DATA/embedded"

"$PYTHON" scripts/grpc_report.py "$RESULTS" "$COMMANDS" "$CPU" "$DURATION" 2 >"$OUT/grpc.md"
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote $OUT/grpc.md and docs/benchmarks.md" >&2
