#pragma once

// RunBench: one grove-bench invocation from parsed options to exit code. It resolves the
// workloads, builds the key set, opens the target, runs LOAD and the workloads in order, and
// writes the JSON lines and the table.
//
// Between invocations the data directory keeps a small state file (grove-bench-state.json) with
// the key set and the number of keys inserted so far, so that a later invocation without LOAD
// reads exactly the keys that exist. It refuses to run when the state does not match the
// options (another key set, seed or record count).

#include "bench/bench_options.h"

namespace grove::bench {

// 0: every run finished without errors; 1: some operation failed; 2: bad options or setup.
int RunBench(const BenchOptions& options);

}  // namespace grove::bench
