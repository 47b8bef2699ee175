#!/usr/bin/env bash
# Cluster figures of docs/benchmarks.md ("Cluster: routing through etcd://"): YCSB C and A
# through the client's etcd:// routing against a cluster of 1 and of 3 groved nodes, and of 3
# nodes replicating every range by Raft on all three, beside one groved without cluster mode at
# grpc:// (the ratio is the routing's and the replication's cost); on the replicated cluster, the
# time from a leader's kill -9 to the first write acknowledged by the next (FAILOVERS times) and
# the time a replica added to a range (grovectl cluster add-replica) takes to install it and vote; then a range of
# MOVE_RECORDS keys moved from one node to another (grovectl cluster move) while YCSB A runs
# against it, with the clients' per-second p99 before, during and after the move. Every groved is
# the Release build with the same cache; etcd (Debian's etcd-server) and all nodes run on this
# machine's loopback, so the nodes share the same two cores: it measures what routing and a move
# cost, not what more machines would add. wal.sync: always, as shipped.
#
# Writes docs/bench-data/cluster.jsonl, cluster-commands.txt and the section cluster.md, then
# regenerates docs/benchmarks.md. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH:-build-bench/client/bench/grove-bench}
GROVED=${GROVED:-build-bench/server/groved}
GROVECTL=${GROVECTL:-build-bench/client/grovectl}
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
# Its own directory under DATA, removed at the end.
DATA=${DATA:-build-bench/data}/cluster-bench
RECORDS=${RECORDS:-500000}   # dense keys 1..RECORDS (8-byte big-endian)
VALUE=${VALUE:-100}
CACHE=${CACHE:-256MiB}       # per node
DURATION=${DURATION:-15}
THREADS=${THREADS:-1 16}
MOVE_RECORDS=${MOVE_RECORDS:-1000000}  # keys of the moved range
MOVE_THREADS=${MOVE_THREADS:-8}        # client threads running YCSB A during the move
MOVE_START=${MOVE_START:-15}           # seconds of the workload before the move starts
MOVE_WORKLOAD=${MOVE_WORKLOAD:-120}    # seconds the workload runs in all
FAILOVERS=${FAILOVERS:-5}              # leader kills on the replicated cluster
PARTS=${PARTS-routing failover move}  # which parts to run (the report keeps the others' rows; "" only rewrites the report)
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

OUT=docs/bench-data
# Each part has its own results and commands; a part that runs replaces only its own.
ROUTING_RESULTS=$OUT/cluster.jsonl
ROUTING_COMMANDS=$OUT/cluster-commands.txt
MOVE_RESULTS=$OUT/cluster-move.jsonl
MOVE_COMMANDS=$OUT/cluster-move-commands.txt
MOVE_REPORT=$OUT/cluster-move.txt
FAILOVER_REPORT=$OUT/cluster-failover.txt
FAILOVER_RESULTS=$OUT/cluster-failover.jsonl
FAILOVER_COMMANDS=$OUT/cluster-failover-commands.txt
mkdir -p "$OUT"
rm -rf "$DATA"
mkdir -p "$DATA"
has_part() { [[ " $PARTS " == *" $1 "* ]]; }
if has_part routing; then rm -f "$ROUTING_RESULTS"; : >"$ROUTING_COMMANDS"; fi
if has_part failover; then rm -f "$FAILOVER_RESULTS" "$FAILOVER_REPORT"; : >"$FAILOVER_COMMANDS"; fi
if has_part move; then rm -f "$MOVE_RESULTS" "$MOVE_REPORT"; : >"$MOVE_COMMANDS"; fi
RESULTS=$ROUTING_RESULTS
COMMANDS=$ROUTING_COMMANDS

run() {
  echo "$*" >>"$COMMANDS"
  echo "+ $*" >&2
  "$@"
}

# Free loopback ports: etcd client and peer, then gRPC and metrics of groved 0 (the plain one)
# and of nodes 1-4, then the Raft ports of nodes 1-4.
read -r -a ports < <("$PYTHON" - <<'PY'
import socket
socks = []
for _ in range(17):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(*[s.getsockname()[1] for s in socks])
PY
)
etcd_port=${ports[0]}
etcd_peer=${ports[1]}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

start_etcd() {
  "$ETCD" --name bench --data-dir "$DATA/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "bench=http://127.0.0.1:$etcd_peer" >"$DATA/etcd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster probe status >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  cat "$DATA/etcd.log" >&2
  exit 1
}

# start_node INDEX NAME CLUSTER [raft]: groved number INDEX (ports from the list) as node NAME of
# CLUSTER ("" = no cluster mode); with "raft", it hosts replicated ranges.
start_node() {
  local i=$1 name=$2 cluster=$3 raft=${4:-}
  local port=${ports[$((2 + 2 * i))]} mport=${ports[$((3 + 2 * i))]}
  local dir="$DATA/$cluster-$name"
  mkdir -p "$dir"
  cat >"$dir/groved.yaml" <<YAML
data_dir: $dir/data
cache_bytes: $CACHE
server:
  listen: 127.0.0.1:$port
  metrics_listen: 127.0.0.1:$mport
YAML
  if [ -n "$cluster" ]; then
    cat >>"$dir/groved.yaml" <<YAML
cluster:
  etcd_endpoints: ["127.0.0.1:$etcd_port"]
  name: $cluster
  node_name: $name
  advertise_address: 127.0.0.1:$port
YAML
  fi
  if [ -n "$raft" ]; then
    cat >>"$dir/groved.yaml" <<YAML
  raft:
    listen: 127.0.0.1:${ports[$((12 + i))]}
YAML
  fi
  echo "$GROVED --config $dir/groved.yaml" >>"$COMMANDS"
  "$GROVED" --config "$dir/groved.yaml" >>"$dir/groved.log" 2>&1 &
  pids+=($!)
  node_pid[$i]=$!
  for _ in $(seq 150); do
    curl -sf "http://127.0.0.1:$mport/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  cat "$dir/groved.log" >&2
  exit 1
}
stop_all_nodes() {
  # etcd is pids[0]; stop the rest.
  for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=("${pids[0]}")
}

# measure TARGET LABEL: load the records through TARGET, then C and A at each thread count.
measure() {
  local target=$1 label=$2
  local common=(--records "$RECORDS" --value-size "$VALUE" --json "$RESULTS" --progress off
    --insert-budget 0)
  run "$BENCH" --target "$target" --dir "$DATA/bench" "${common[@]}" --workloads load \
    --load-method put --load-threads 16 --label "$label"
  for t in $THREADS; do
    for w in c a; do
      run "$BENCH" --target "$target" --dir "$DATA/bench" "${common[@]}" --workloads "$w" \
        --threads "$t" --duration "$DURATION" --warmup 2 --label "$label"
    done
  done
}

start_etcd
third=$((RECORDS / 3))  # the 3-node layouts cut the keys in thirds
for c in $(has_part routing && echo "$ROUTING_COMMANDS") $(has_part failover && echo "$FAILOVER_COMMANDS") \
  $(has_part move && echo "$MOVE_COMMANDS"); do
  echo "$ETCD --data-dir $DATA/etcd ...  # single member on loopback" >>"$c"
done

if has_part routing; then
# 1. One groved, no cluster mode.
start_node 0 solo ""
measure "grpc://127.0.0.1:${ports[2]}" "single groved"
stop_all_nodes

# 2. A cluster of one node.
run "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster one init --owner n1
start_node 1 n1 one
measure "etcd://127.0.0.1:$etcd_port/one" "cluster, 1 node"
stop_all_nodes

# 3. A cluster of three nodes, the key space cut in thirds.
run "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster three --key-format u64 init \
  --owner n1 --split "$((third + 1))=n2" --split "$((2 * third + 1))=n3"
start_node 1 n1 three
start_node 2 n2 three
start_node 3 n3 three
measure "etcd://127.0.0.1:$etcd_port/three" "cluster, 3 nodes"
stop_all_nodes

# 4. The same three ranges, each replicated by Raft on all three nodes (one synced log per write:
#    the Raft log's).
run "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster rep --key-format u64 init \
  --owner n1 --split "$((third + 1))=n2" --split "$((2 * third + 1))=n3" --replicas n1,n2,n3
start_node 1 n1 rep raft
start_node 2 n2 rep raft
start_node 3 n3 rep raft
measure "etcd://127.0.0.1:$etcd_port/rep" "replicated, 3 nodes"
stop_all_nodes
fi

if has_part failover; then
RESULTS=$FAILOVER_RESULTS
COMMANDS=$FAILOVER_COMMANDS
# 5. Failovers and an install on a replicated cluster laid out as in 4, holding RECORDS keys.
run "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster fail --key-format u64 init \
  --owner n1 --split "$((third + 1))=n2" --split "$((2 * third + 1))=n3" --replicas n1,n2,n3
start_node 1 n1 fail raft
start_node 2 n2 fail raft
start_node 3 n3 fail raft
run "$BENCH" --target "etcd://127.0.0.1:$etcd_port/fail" --dir "$DATA/bench" --records "$RECORDS" \
  --value-size "$VALUE" --json "$RESULTS" --progress off --insert-budget 0 --workloads load \
  --load-method put --load-threads 16 --label "failover load"

# metric NODE NAME RANGE: the value of NAME{range="RANGE"} at node NODE's metrics port ("" if none).
metric() {
  { curl -sf "http://127.0.0.1:${ports[$((3 + 2 * $1))]}/metrics" 2>/dev/null || true; } |
    awk -v m="$2{range=\"$3\"}" '$1 == m {print $2}'
}
leader_of() {  # the node index leading range $1, or nothing
  for n in 1 2 3; do
    if [ "$(metric "$n" grove_raft_leader "$1")" = "1" ]; then echo "$n"; return 0; fi
  done
  return 0
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Failover: kill -9 the leader of the first range (it holds key 1), then put until one is acknowledged
# (each a grovectl through etcd://, which finds the new leader); restart the node and wait until it
# holds the range again.
echo "FAILOVER election_timeout_ms=1000" >>"$FAILOVER_REPORT"
# The id of the first range (the one holding key 1): ranges are listed in key order.
first_range=$("$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster fail --key-format u64 -o json status |
  "$PYTHON" -c 'import json, sys
print(next(j["range"] for j in map(json.loads, sys.stdin) if "range" in j))')
for f in $(seq "$FAILOVERS"); do
  l=""; for _ in $(seq 100); do l=$(leader_of "$first_range"); [ -n "$l" ] && break; sleep 0.1; done
  [ -n "$l" ] || { echo "no leader of range $first_range" >&2; exit 1; }
  kill -9 "${node_pid[$l]}"; wait "${node_pid[$l]}" 2>/dev/null || true
  t0=$(now_ms)
  for _ in $(seq 1000); do
    "$GROVECTL" --addr "etcd://127.0.0.1:$etcd_port/fail" --key-format u64 put 1 "failover-$f" \
      >/dev/null 2>&1 && break
  done
  echo "FAILOVER kill_to_first_write_ms=$(($(now_ms) - t0)) killed=n$l" >>"$FAILOVER_REPORT"
  start_node "$l" "n$l" fail raft
  sleep 3
done
echo "$GROVECTL --addr etcd://127.0.0.1:$etcd_port/fail --key-format u64 put 1 ...  # after kill -9 of the first range's leader, until acknowledged ($FAILOVERS times)" >>"$COMMANDS"
# Install: a fourth node joins the first range (grovectl cluster add-replica): its replica
# starts empty, the leader's log is truncated behind snapshots, so it installs the range from
# another replica over gRPC, catches up as a standby, then votes. grovectl reports the time from
# the request to the vote.
start_node 4 n4 fail raft
for _ in $(seq 100); do
  "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster fail status 2>/dev/null |
    grep -q "n4.*up" && break
  sleep 0.2
done
add_log="$DATA/add-replica.log"
echo "$GROVECTL cluster --etcd 127.0.0.1:$etcd_port --cluster fail add-replica '' n4 --catch-up-timeout 1800  # the first range, $third keys" >>"$COMMANDS"
"$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster fail add-replica "" n4 \
  --catch-up-timeout 1800 >"$add_log" 2>&1 || { cat "$add_log" >&2; exit 1; }
cat "$add_log" >&2
seconds=$(sed -n 's/.*votes (after \([0-9.]*\) s).*/\1/p' "$add_log")
echo "INSTALL add_replica_s=$seconds records=$third value_bytes=$VALUE" >>"$FAILOVER_REPORT"
cat "$FAILOVER_REPORT" >&2
stop_all_nodes
fi

if has_part move; then
RESULTS=$MOVE_RESULTS
COMMANDS=$MOVE_COMMANDS
# 4. A move: MOVE_RECORDS keys on m1 (one range: the load goes through BatchInsert), YCSB A
#    running, the range moved to m2 after MOVE_START seconds; the workload runs until well after.
run "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster move init --owner m1
start_node 1 m1 move
start_node 2 m2 move
move_target="etcd://127.0.0.1:$etcd_port/move"
run "$BENCH" --target "$move_target" --dir "$DATA/bench" --records "$MOVE_RECORDS" \
  --value-size "$VALUE" --json "$RESULTS" --progress off --insert-budget 0 --workloads load \
  --load-method batch --batch-size 500 --load-threads 4 --label "move load"
move_log="$DATA/move.log"
(
  sleep "$MOVE_START"
  start=$(date +%s%N)
  echo "$GROVECTL cluster --etcd 127.0.0.1:$etcd_port --cluster move move '' m2  # ${MOVE_START} s into the workload below" >>"$COMMANDS"
  "$GROVECTL" cluster --etcd "127.0.0.1:$etcd_port" --cluster move move "" m2 >"$move_log" 2>&1
  end=$(date +%s%N)
  echo "MOVE start_s=$MOVE_START duration_ms=$(((end - start) / 1000000))" >>"$move_log"
) &
mover=$!
run "$BENCH" --target "$move_target" --dir "$DATA/bench" --records "$MOVE_RECORDS" \
  --value-size "$VALUE" --json "$RESULTS" --progress off --insert-budget 0 --workloads a \
  --threads "$MOVE_THREADS" --duration "$MOVE_WORKLOAD" --label "during move"
wait "$mover"
cat "$move_log" >&2
cp "$move_log" "$MOVE_REPORT"
stop_all_nodes
fi
cleanup
trap - EXIT

"$PYTHON" - "$ROUTING_RESULTS" "$ROUTING_COMMANDS" "$MOVE_RESULTS" "$MOVE_COMMANDS" \
  "$MOVE_REPORT" "$FAILOVER_REPORT" "$FAILOVER_COMMANDS" >"$OUT/cluster.md" <<'PY'
import json, os, sys
def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
runs = lines(sys.argv[1])
move_runs = lines(sys.argv[3])
print("## Cluster: routing through etcd://")
print()
print("Generated by `scripts/bench-cluster.sh`: YCSB C (reads) and A (50% reads, 50% durable "
      "updates), zipfian, through the client library at `grpc://` against one groved without "
      "cluster mode, and at `etcd://` against clusters of 1 and 3 groved nodes (the 3 nodes own a "
      "third of the keys each). Every node has the same cache, which holds its data; etcd, the "
      "nodes and the clients share this machine's two cores, so the 3-node rows show routing's "
      "cost and the CPU three servers take, not the capacity three machines would add.")
print()
print("| setup | workload | client threads | ops/s | p50 µs | p99 µs | ÷ single groved |")
print("|---|---|--:|--:|--:|--:|--:|")
base = {}
for r in runs:
    if r.get("label") == "single groved" and r["workload"] != "load":
        base[(r["workload"], r["config"]["threads"])] = r["throughput"]
order = {"single groved": 0, "cluster, 1 node": 1, "cluster, 3 nodes": 2,
         "replicated, 3 nodes": 3}
rows = sorted((r for r in runs if r["workload"] != "load" and r.get("label") in order),
              key=lambda r: (r["workload"], r["config"]["threads"], order[r["label"]]))
for r in rows:
    k = (r["workload"], r["config"]["threads"])
    lat = r["latency_us"]
    ratio = f"{r['throughput'] / base[k]:.2f}" if k in base and base[k] else "–"
    print(f"| {r['label']} | {r['workload'].upper()} | {k[1]} | {r['throughput']:,.0f} | "
          f"{lat['p50_us']:.0f} | {lat['p99_us']:.0f} | {ratio} |")
print()
import re
failover = open(sys.argv[6]).read() if os.path.exists(sys.argv[6]) else ""
kills = [int(x) for x in re.findall(r"kill_to_first_write_ms=(\d+)", failover)]
install = re.search(r"INSTALL add_replica_s=([0-9.]+) records=(\d+) value_bytes=(\d+)", failover)
if kills:
    kills_sorted = sorted(kills)
    print(f"**Replicated cluster.** The `replicated, 3 nodes` rows run the same three ranges, each "
          f"replicated by Raft on all three nodes (election timeout 1000 ms, randomised to "
          f"1-2 s): a write is acknowledged once a majority's Raft logs hold it (synced) and the "
          f"leader applied it, and every read waits for a barrier at the leader (a Raft entry "
          f"synced by a majority, shared by the reads that arrive while the one before it runs). "
          f"What bounds these rows: the latency of synced Raft log appends, all three nodes "
          f"syncing to the same virtual disk (the device's fdatasync latency was not measured in "
          f"this run). A read waits one to two barrier rounds whatever the load, so closed-loop "
          f"clients are bound by that latency even when one barrier serves several reads; reads "
          f"without a log entry (a leader lease, with its clock assumption) are the step that "
          f"would lift it. The unreplicated rows are bound by the two cores that the "
          f"nodes, etcd and the clients share. There is no device or RocksDB baseline in this "
          f"section: its baseline is one groved without cluster mode, measured in the same run. "
          f"In a second run of the script (part "
          f"`failover`) the same layout was loaded with the same keys; then the leader of the "
          f"first range was killed with kill -9 {len(kills)} times; the "
          f"first write acknowledged by the next leader came "
          f"{', '.join(f'{k / 1000:.2f}' for k in kills)} s after the kill (median "
          f"{kills_sorted[len(kills) // 2] / 1000:.2f} s, target at most 3 election timeouts, "
          f"3 s; each try is a grovectl process through `etcd://`, about 30 ms).")
    if install:
        seconds = float(install.group(1))
        records, value = int(install.group(2)), int(install.group(3))
        size = records * (8 + value)
        print(f" Then a fourth node joined the first range (`grovectl cluster add-replica`): "
              f"its replica started empty, installed the range ({records:,} keys, "
              f"{size / 1e6:.0f} MB of keys and values) from another replica over gRPC, caught "
              f"up as a standby and voted **{seconds:.1f} s** after the request "
              f"({size / 1e6 / max(seconds, 1e-3):.0f} MB/s), the cost of a snapshot install "
              f"at this size.")
    print()
    print("Commands of the failovers and the install:")
    print()
    print("```")
    print(open(sys.argv[7]).read().strip())
    print("```")
    print()
print("Commands (from the repository root, after `make bench-build`):")
print()
print("```")
print(open(sys.argv[2]).read().strip())
print("```")
import re
move = [r for r in move_runs if r.get("label") == "during move"]
log = open(sys.argv[5]).read() if os.path.exists(sys.argv[5]) else ""
m = re.search(r"MOVE start_s=(\d+) duration_ms=(\d+)", log)
if move and m:
    r = move[0]
    start, dur = int(m.group(1)), int(m.group(2)) / 1000
    detail = r.get("timeline_detail", [])
    def window(lo, hi):
        return [d for d in detail if lo <= d["t"] < hi]
    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if xs else float("nan")
    before, during, after = window(2, start), window(start, start + dur), \
        window(start + dur + 1, 1e9)
    print()
    print(f"**A range move under load.** {r['config']['records']:,} keys of "
          f"{r['config']['value_bytes']} B in one range on node m1, moved to m2 with "
          f"`grovectl cluster move` while YCSB A (zipfian, {r['config']['threads']} client "
          f"threads through `etcd://`) ran against it; the move started {start} s into the "
          f"workload and took **{dur:.1f} s**. Per-second figures of the clients:")
    print()
    print("| window | seconds | median ops/s | median p99 µs | worst p99 µs |")
    print("|---|--:|--:|--:|--:|")
    for name, w in (("before the move", before), ("during the move", during),
                    ("after the move", after)):
        if not w:
            continue
        print(f"| {name} | {len(w)} | {med([d['ops_per_sec'] for d in w]):,.0f} | "
              f"{med([d['p99_us'] for d in w]):,.0f} | {max(d['p99_us'] for d in w):,.0f} |")
    print()
    print("The mover's report:")
    print()
    print("```")
    print("\n".join(l for l in log.strip().splitlines() if not l.startswith("MOVE ")))
    print("```")
    print()
    print("Commands of the move:")
    print()
    print("```")
    print(open(sys.argv[4]).read().strip())
    print("```")
PY
"$PYTHON" scripts/bench_report.py --out docs/benchmarks.md
echo "wrote $OUT/cluster.md and docs/benchmarks.md" >&2
