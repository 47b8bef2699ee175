#!/usr/bin/env bash
# Builds Grove's libFuzzer targets with clang-14 (ASan + UBSan + libFuzzer) and runs each one for
# a while (docs/reliability.md, "Fuzzing").
#
#   scripts/fuzz.sh [--seconds N] [--jobs N] [--build-dir DIR] [--targets "page wal_reader ..."]
#   scripts/fuzz.sh --seeds          regenerate tests/fuzz/corpus/ from a real database
#
# Each target fuzzes a scratch corpus seeded from tests/fuzz/corpus/<target>/ (the committed seeds
# are never modified). A crashing, leaking or timing-out input is copied to
# tests/fuzz/regressions/<target>/, where the regression test (ctest -L fuzz) replays it on every
# build from then on, and the script exits 1. One JSON summary line per target.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
jobs=1
build=${FUZZ_BUILD_DIR:-build-fuzz}
targets="page wal_reader request recovery"
seeds=false
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --seeds) seeds=true; shift ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 is missing (make deps)" >&2; exit 1; }
generator=$(command -v ninja >/dev/null 2>&1 && echo "-G Ninja" || true)
if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DGROVE_SANITIZE=address,undefined -DGROVE_FUZZ=ON \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link
fi
fuzz_bins=""
for t in $targets; do fuzz_bins="$fuzz_bins fuzz_$t"; done
# shellcheck disable=SC2086
cmake --build "$build" -j "${JOBS:-2}" --target $fuzz_bins fuzz_make_seeds

if $seeds; then
  "$build/tests/fuzz/fuzz_make_seeds" tests/fuzz/corpus
  echo "fuzz.sh: seeds written to tests/fuzz/corpus/"
  exit 0
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in $targets; do
  work="$build/fuzz-work/$t"
  artifacts="$build/fuzz-artifacts/$t"
  mkdir -p "$work" "$artifacts"
  log="$build/fuzz-$t.log"
  rc=0
  "$build/tests/fuzz/fuzz_$t" "$work" "tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" -timeout=20 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || rc=$?
  # The last progress line carries the coverage; the final stats the run count.
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+$' || echo 0)
  speed=$(grep -Eo 'stat::average_exec_per_sec: *[0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+$' || echo 0)
  cov=$(echo "$last" | grep -Eo 'cov: [0-9]+' | grep -Eo '[0-9]+' || echo 0)
  ft=$(echo "$last" | grep -Eo 'ft: [0-9]+' | grep -Eo '[0-9]+' || echo 0)
  corp=$(echo "$last" | grep -Eo 'corp: [0-9]+' | grep -Eo '[0-9]+' || echo 0)
  found=$(find "$artifacts" -type f | wc -l)
  echo "{\"test\":\"fuzz\",\"target\":\"$t\",\"seconds\":$seconds,\"execs\":${runs:-0},\"execs_per_s\":${speed:-0},\"cov\":${cov:-0},\"ft\":${ft:-0},\"corpus\":${corp:-0},\"findings\":$found,\"exit\":$rc}"
  if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
    mkdir -p "tests/fuzz/regressions/$t"
    for f in "$artifacts"/*; do
      [ -f "$f" ] && cp "$f" "tests/fuzz/regressions/$t/" && echo "fuzz.sh: $t: finding $f -> tests/fuzz/regressions/$t/" >&2
    done
    echo "fuzz.sh: $t failed (exit $rc); log: $log" >&2
    tail -40 "$log" >&2
    status=1
  fi
done
exit $status
