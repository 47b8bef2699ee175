#!/usr/bin/env bash
# scripts/configure.sh on a probe project: a failed configure leaves no cache behind, a cache left
# by an earlier failure (with another generator) does not stop the next configure, and a
# configured directory is left alone.
set -euo pipefail
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/configure.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(probe NONE)
if(EXISTS ${CMAKE_SOURCE_DIR}/package-missing)
  message(FATAL_ERROR "a required package is missing")
endif()
CMAKE
fail() { echo "FAIL: $*" >&2; exit 1; }

touch package-missing
if "$script" build >out.txt 2>&1; then fail "configure succeeded with a package missing"; fi
[ ! -e build/CMakeCache.txt ] || fail "a failed configure left build/CMakeCache.txt"
grep -q "make deps" out.txt || fail "the failure does not say which command to run: $(cat out.txt)"

# A cache from an earlier failed configure that chose another generator.
rm package-missing
mkdir -p build
printf 'CMAKE_GENERATOR:INTERNAL=Some Other Generator\n' > build/CMakeCache.txt
"$script" build >out.txt 2>&1 || fail "configure after a failed one: $(cat out.txt)"
[ -f build/build.ninja ] || [ -f build/Makefile ] || fail "no build files written"

touch package-missing  # a configured directory is not configured again
"$script" build >out.txt 2>&1 || fail "configuring a configured directory failed: $(cat out.txt)"
echo "configure_test: ok"
