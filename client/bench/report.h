#pragma once

// Report: one JSON object per run (written as one line) and a human table built from those
// objects, so that `grove-bench --print-table results.jsonl` reproduces the table of any run.
//
// The JSON fields are documented in docs/grove-bench.md ("JSON output"). Latencies are in
// microseconds; per-op IO figures divide the target's counter deltas over the measured interval
// by the operations in it.

#include <cstdio>
#include <map>
#include <string>

#include "bench/bench_options.h"
#include "bench/runner.h"
#include <nlohmann/json.hpp>

namespace grove::bench {

struct ReportContext {
  const BenchOptions* options = nullptr;
  std::string target_uri;
  std::map<std::string, std::string> target_config;
  std::map<std::string, std::string> machine;
  uint64_t data_bytes = 0;
  uint64_t cache_bytes = 0;
  uint64_t key_capacity = 0;
  uint32_t threads = 1;
  // Opening the target (Db::Open: recovery included) before the first run, and the process's
  // peak resident set by then.
  double open_seconds = 0;
  uint64_t open_peak_rss_bytes = 0;
};

nlohmann::json RunToJson(const RunResult& run, const ReportContext& context);

void PrintTableHeader(FILE* out);
// One row (plus one indented row per op type when the run mixes several).
void PrintTableRow(FILE* out, const nlohmann::json& run);

}  // namespace grove::bench
