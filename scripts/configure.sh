#!/usr/bin/env bash
# Configures a CMake build directory: scripts/configure.sh DIR [cmake arguments...]
#
# A directory counts as configured once CMake has written its build files; then there is nothing
# to do (the build re-runs CMake when a CMakeLists.txt changes). A configure that fails (a package missing) removes the cache it left, so the
# next attempt starts clean, with whichever generator is installed by then, instead of every later
# build stopping at "loading 'build.ninja'" or at a generator mismatch.
set -uo pipefail

dir=$1
shift
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi

if [ -f "$dir/build.ninja" ] || [ -f "$dir/Makefile" ]; then
  exit 0
fi
rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
if ! cmake -S . -B "$dir" "${gen[@]}" "$@"; then
  rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  echo "configure: CMake failed in $dir (removed its cache); 'make deps' installs every package" \
    "Grove needs, then run the same command again" >&2
  exit 1
fi
