#pragma once

// BenchOptions: everything one grove-bench invocation was asked to do, parsed from the command
// line (CLI11) into this struct; nothing lives in globals. docs/grove-bench.md lists the flags.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/replay.h"
#include "bench/runner.h"
#include "bench/target.h"

namespace grove::bench {

struct BenchOptions {
  std::string target = "embedded:btree";
  TargetOptions target_options;  // dir, memory budget, IO and durability settings
  std::vector<std::string> workloads{"load", "c"};
  std::vector<std::string> distributions;  // overrides; each workload runs once per entry
  std::optional<double> zipf_theta;

  uint64_t records = 100000;
  std::string keys = "dense";
  std::string key_order = "random";
  uint32_t value_min = 100;
  uint32_t value_max = 100;
  std::optional<uint64_t> insert_budget;

  uint32_t threads = 1;
  uint32_t load_threads = 0;  // 0: --threads
  LoadMethod load_method = LoadMethod::kPut;
  uint32_t batch_size = 1000;
  uint64_t age_updates = 0;  // --age: uniform updates after LOAD (0: none)
  uint64_t ops = 0;
  double duration = 0;
  uint64_t warmup_ops = 0;
  double warmup_seconds = 0;
  double rate = 0;
  bool settle_after_load = true;
  ReplayOptions replay;  // trace:FILE workloads (--replay-*)

  std::optional<uint64_t> cache_bytes;
  std::optional<double> cache_fraction;
  uint64_t seed = 1;

  std::string json_path;  // append JSON lines here; "-" = stdout
  bool table = true;
  std::string progress = "auto";  // auto | on | off
  std::string label;
  double timeline_interval = 1.0;
  std::vector<std::string> timeline_counters;  // --timeline-counters
  std::string print_table;                     // only print the table of this JSON-lines file
  std::string command_line;                    // as invoked, for the report
};

// Parses argv. Returns nullopt after printing help or an error; *exit_code says how to exit.
std::optional<BenchOptions> ParseCommandLine(int argc, char** argv, int* exit_code);

// The raw data size the memory budget is a fraction of: records x (8-byte key + mean value).
uint64_t DataBytes(const BenchOptions& o);
// The memory budget in bytes (from --cache-bytes or --cache-fraction, 4 KiB aligned).
uint64_t CacheBytes(const BenchOptions& o);

}  // namespace grove::bench
