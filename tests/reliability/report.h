#pragma once

// Run summaries of the reliability tests: one JSON object per line, printed to stdout (so ctest
// logs keep it) and appended to the file named by $GROVE_RELIABILITY_REPORT when that is set
// (scripts/reliability-report.sh collects them into docs/reliability.md's tables).
//
// Environment knobs shared by the reliability tests, for long runs:
//   GROVE_RELIABILITY_SCALE  multiplies the work of every sampled test (default 1)
//   GROVE_RELIABILITY_SEED   fixes the seed (default: a random one, printed in the summary)

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace grove::testing {

inline void EmitReport(const nlohmann::json& line) {
  const std::string text = line.dump();
  std::printf("RELIABILITY %s\n", text.c_str());
  std::fflush(stdout);
  if (const char* path = std::getenv("GROVE_RELIABILITY_REPORT"); path != nullptr && *path) {
    std::ofstream(path, std::ios::app) << text << "\n";
  }
}

inline uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* s = std::getenv(name);
  return s != nullptr && *s ? std::strtoull(s, nullptr, 10) : fallback;
}

inline uint64_t ReliabilityScale() {
  return std::max<uint64_t>(1, EnvU64("GROVE_RELIABILITY_SCALE", 1));
}

inline uint64_t ReliabilitySeed() {
  static const uint64_t seed = [] {
    const uint64_t s = EnvU64("GROVE_RELIABILITY_SEED", 0);
    return s != 0 ? s : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  }();
  return seed;
}

// p-th percentile (0..100) of unsorted samples; 0 for none.
template <typename T>
double Percentile(std::vector<T> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[std::min(i, v.size() - 1)]);
}

}  // namespace grove::testing
