#!/usr/bin/env bash
# make bench-scale: Grove at 10^7..10^9 records of 8-byte keys and 8-byte values (docs/benchmarks.md
# "At a billion keys"). For each size and engine, in this order, on one data directory:
#
#   load      bulk load of the gapped (sparse) key set: records/s, peak RSS, bytes on disk
#   get-tN    cold Get, uniform, N = 1, 4, 16 threads; each a new process, so its open is a clean
#             open and its warm-up fills the inner nodes; the device at the same queue depth after
#             (random 4 KiB reads of the engine's data file; DEVICE_BYTES of a file for RocksDB)
#   e         YCSB E uniform (95% scans of 1..100, 5% inserts), 16 threads
#   ins-tN    durable inserts of new keys (wal.sync always), N = 1, 4, 16 threads: throughput,
#             p99/p999, and the checkpoints that ran under them
#   crash     16 threads of durable inserts, kill -9 after CRASH_AFTER seconds, then an open:
#             recovery time and records replayed
#   admin     (Grove only; ADMIN=0 skips it) groved on the directory, `grovectl verify` (an
#             online check of the latest checkpoint, grove.v1.Admin/Verify), an online backup
#             through grovectl (grove.v1.Admin/Backup), then the directory is removed and the backup
#             restored with `grovectl restore`: its checksums, the copy, the open that replays its
#             log, and the verification of every page, each timed (OUT_ADMIN)
#
# One engine's directory at a time; it is deleted after its size (the report records how much
# disk each used). The memory budget is the same for every engine (CACHE).
#
#   scripts/bench-scale.sh                     SIZES="1e7 1e8 1e9" ENGINES="btree hln rocksdb"
#   SIZES=1e7 ENGINES=btree scripts/bench-scale.sh
#
# Output: JSON lines appended to $OUT (grove-bench's, labelled scale:<records>:<step>) and one line
# per directory to $OUT_DISK; scripts/scale_report.py turns them into docs/bench-data/scale.md.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-build-bench/client/bench/grove-bench}
GROVED=${GROVED:-build-bench/server/groved}
GROVECTL=${GROVECTL:-build-bench/client/grovectl}
SIZES=${SIZES:-"1e7 1e8 1e9"}
ENGINES=${ENGINES:-"btree hln rocksdb"}
BASE=${BASE:-grove-bench-data/scale}
OUT=${OUT:-docs/bench-data/scale.jsonl}
OUT_DISK=${OUT_DISK:-docs/bench-data/scale-disk.jsonl}
OUT_ADMIN=${OUT_ADMIN:-docs/bench-data/scale-admin.jsonl}
ADMIN=${ADMIN:-1}
PORT=${PORT:-7470}  # groved's gRPC port for the admin step (metrics on the next one)
CACHE=${CACHE:-1GiB}
WARMUP=${WARMUP:-15}         # seconds before each measured read run
SECONDS_PER_RUN=${SECONDS_PER_RUN:-15}
INSERT_SECONDS=${INSERT_SECONDS:-30}
CRASH_AFTER=${CRASH_AFTER:-40}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-10}
DEVICE_BYTES=${DEVICE_BYTES:-8GiB}
THREADS=${THREADS:-"1 4 16"}
INSERT_BUDGET=${INSERT_BUDGET:-40M}  # keys reserved for inserts (gapped keys cost no memory)

[ -x "$BIN" ] || { echo "bench-scale: $BIN not built (make bench-build)" >&2; exit 1; }
mkdir -p "$BASE" "$(dirname "$OUT")"

target_of() {  # target_of ENGINE [GROVE_PARAM=VALUE]
  case "$1" in
    rocksdb) echo rocksdb ;;
    *) echo "embedded:$1${2:+?$2}" ;;
  esac
}

run() {  # run LABEL ARGS...: one grove-bench process on the current engine's directory
  local label=$1
  shift
  echo "== $engine $records $label" >&2
  (exec_bench "$label" "$@")
}

exec_bench() {  # the same as the process itself (so that `exec_bench ... &` leaves its pid in $!)
  local label=$1
  shift
  exec "$BIN" --target "$target" --dir "$dir" --keys gapped --records "$records" --value-size 8 \
    --cache-bytes "$CACHE" --label "scale:$records:$label" --json "$OUT" --no-table \
    --progress off "$@"
}

now() { date +%s.%N; }

# The device beside a Grove engine reads the engine's own data file (the same span of the disk:
# a virtual disk's host may cache a small file); beside RocksDB, whose data is many files, a file
# of DEVICE_BYTES.
device_of() {
  case "$1" in
    rocksdb) echo "device?file_bytes=$DEVICE_BYTES" ;;
    *) echo "device?file=$dir/grove.data" ;;
  esac
}

admin_steps() {  # backup through groved, then restore (the directory goes first: disk)
  local gdir=$BASE/groved backups=$BASE/backups restored=$BASE/restored
  rm -rf "$gdir" "$backups" "$restored"
  mkdir -p "$gdir" "$backups"
  cat >"$gdir/groved.yaml" <<YAML
data_dir: $dir
create_if_missing: false
cache_bytes: $CACHE
index:
  variant: $engine
backup:
  dir: $backups
server:
  listen: 127.0.0.1:$PORT
  metrics_listen: 127.0.0.1:$((PORT + 1))
YAML
  echo "== $engine $records admin: backup through groved, restore" >&2
  "$GROVED" --config "$gdir/groved.yaml" >"$gdir/groved.log" 2>&1 &
  local pid=$! ready=0
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$((PORT + 1))/readyz" >/dev/null 2>&1 && { ready=1; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if [ "$ready" != 1 ]; then
    cat "$gdir/groved.log" >&2
    kill "$pid" 2>/dev/null || true
    return 1
  fi
  local tv t0 t1 t2 t3
  tv=$(now)
  "$GROVECTL" --addr "127.0.0.1:$PORT" -o json verify --wait 6h >"$gdir/verify.json" ||
    { kill "$pid"; return 1; }
  t0=$(now)
  "$GROVECTL" --addr "127.0.0.1:$PORT" -o json backup scale --wait 6h >"$gdir/backup.json" ||
    { kill "$pid"; return 1; }
  t1=$(now)
  kill -TERM "$pid"
  wait "$pid" || true
  local backup_bytes
  backup_bytes=$(du -sB1 "$backups/scale" | cut -f1)
  rm -rf "$dir"
  t2=$(now)
  "$GROVECTL" -o json restore "$backups/scale" "$restored" --cache "$CACHE" >"$gdir/restore.json"
  t3=$(now)
  python3 -c "
import json
b = json.load(open('$gdir/backup.json')); r = json.load(open('$gdir/restore.json'))
v = json.load(open('$gdir/verify.json'))
print(json.dumps({'engine': '$engine', 'records': $count, 'step': 'admin',
                  'verify_wall_seconds': $t0 - $tv, 'verify': v,
                  'backup_wall_seconds': $t1 - $t0, 'backup': b, 'backup_disk_bytes': $backup_bytes,
                  'restore_wall_seconds': $t3 - $t2, 'restore': r}))" >>"$OUT_ADMIN"
  rm -rf "$backups" "$restored" "$gdir"
}

for records in $SIZES; do
  count=$(python3 -c "print(int(float('$records')))")  # 1e8 -> 100000000 for the disk lines
  for engine in $ENGINES; do
    target=$(target_of "$engine")
    dir="$BASE/$engine"
    rm -rf "$dir"
    start=$(date +%s)
    run load -w load --load-method bulk --insert-budget "$INSERT_BUDGET" --wal-sync none
    load_done=$(date +%s)
    # Bytes on disk right after the load, and the files' apparent size.
    used=$(du -sB1 "$dir" | cut -f1)
    printf '{"engine":"%s","records":%s,"step":"load","disk_bytes":%s,"load_wall_seconds":%s}\n' \
      "$engine" "$count" "$used" \
      "$((load_done - start))" >>"$OUT_DISK"

    for t in $THREADS; do
      run "get-t$t" -w c --distribution uniform --threads "$t" --warmup "$WARMUP" \
        --duration "$SECONDS_PER_RUN"
      "$BIN" --target "$(device_of "$engine")" --dir "$BASE/device" -w c \
        --distribution uniform --threads "$t" --duration "$SECONDS_PER_RUN" --records 1M \
        --label "scale:$records:device-t$t" --json "$OUT" --no-table --progress off
    done
    run e -w e --distribution uniform --threads 16 --warmup "$WARMUP" --duration "$SECONDS_PER_RUN"
    # A checkpoint every CHECKPOINT_EVERY seconds at the latest, so that every size runs some
    # at the same write rate (left to the dirty-page trigger, a database the cache holds runs
    # none in a short run); RocksDB has no such knob and flushes as it always does.
    for t in $THREADS; do
      target=$(target_of "$engine" "checkpoint_interval_seconds=$CHECKPOINT_EVERY")
      run "ins-t$t" -w config/workloads/insert-only.yaml --wal-sync always --threads "$t" \
        --duration "$INSERT_SECONDS"
      target=$(target_of "$engine")
    done

    # Recovery: kill -9 under 16 threads of durable inserts, then open.
    echo "== $engine $records crash-load (kill -9 after $CRASH_AFTER s)" >&2
    (exec_bench crash-load -w config/workloads/insert-only.yaml --wal-sync always --threads 16 \
      --duration 3600) &
    pid=$!
    sleep "$CRASH_AFTER"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    run recover -w c --distribution uniform --threads 1 --ops 1000
    used=$(du -sB1 "$dir" | cut -f1)
    printf '{"engine":"%s","records":%s,"step":"end","disk_bytes":%s}\n' \
      "$engine" "$count" "$used" >>"$OUT_DISK"
    if [ "$ADMIN" = 1 ] && [ "$engine" != rocksdb ]; then admin_steps; fi
    rm -rf "$dir"
  done
done
echo "bench-scale: results in $OUT and $OUT_DISK" >&2
