#pragma once

// Workload specifications: what a run does, phase by phase.
//
// A workload is LOAD (insert every record once) or a list of phases. A phase has an operation mix
// (proportions of read, update, insert, scan, read-modify-write), a request distribution, a
// scan-length distribution, and a length in operations or seconds. Phases run back to back on the
// same data, which expresses the papers' oscillating mixes (AHA-tree's 90/10 <-> 10/90 phases,
// SHORTCUT's read/insert phases) as well as the six YCSB workloads, which are one phase each:
//
//   A  50% read / 50% update                     zipfian
//   B  95% read / 5% update                      zipfian
//   C  100% read                                 zipfian
//   D  95% read / 5% insert                      latest
//   E  95% scan / 5% insert, length uniform 1..100  zipfian
//   F  50% read / 50% read-modify-write          zipfian
//
// The same definitions ship as YAML in config/workloads/ (ParseWorkloadYaml reads them; a test
// checks they equal the built-ins). docs/grove-bench.md documents the YAML fields.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grove/status.h"

namespace grove::bench {

// The first kNumMixOpTypes can be drawn from a phase's mix; the rest are what a trace replay
// (replay.h) adds: calls that carry several keys or a range.
enum class OpType : uint8_t {
  kRead = 0,
  kUpdate,
  kInsert,
  kScan,
  kRmw,
  kDelete,       // of an existing key (mix), or a traced Delete
  kBatchRead,    // a traced BatchGet: one operation, several keys
  kBatchWrite,   // a traced BatchInsert: puts and deletes applied as one
  kDeleteRange,  // a traced DeleteRange
};
inline constexpr int kNumMixOpTypes = 6;
inline constexpr int kNumOpTypes = 9;
// "read", "update", "insert", "scan", "rmw", "delete", "batch_read", "batch_write",
// "delete_range"
const char* OpTypeName(OpType type);

struct DistributionSpec {
  enum class Kind { kUniform, kZipfian, kLatest, kHotspot };
  Kind kind = Kind::kUniform;
  double theta = 0.99;  // zipfian and latest skew, in (0, 1)
  // Zipfian only. Scrambled (YCSB's default): item ranks are hashed over the keys, so hot keys are
  // scattered. Unscrambled: rank r is the r-th smallest loaded key, so the hot keys form a range
  // at the start of the key space (AHA-tree's zipfian hotspot).
  bool scrambled = true;
  // Hotspot only: hot_op_fraction of the requests go to a contiguous range holding
  // hot_data_fraction of the loaded keys (in key order) starting at hot_start (a fraction of the
  // key space; negative: a random start chosen from the seed), the rest go uniformly elsewhere.
  double hot_data_fraction = 0.2;
  double hot_op_fraction = 0.8;
  double hot_start = -1;
};
std::string DistributionName(const DistributionSpec& d);  // "zipfian(0.99)", "hotspot(1%,90%)"

struct ScanSpec {
  enum class Kind { kUniform, kZipfian, kConstant };
  Kind kind = Kind::kUniform;
  uint32_t min = 1;
  uint32_t max = 100;
  // When nonzero, a scan covers the key range [start, start + width) instead of a count of keys
  // (AHA-tree's range length is a width in the key space).
  uint64_t width = 0;
};

struct PhaseSpec {
  std::string name;
  std::array<double, kNumOpTypes> mix{};  // proportions, summing to 1
  DistributionSpec distribution;
  ScanSpec scan;
  uint64_t ops = 0;    // length in operations ...
  double seconds = 0;  // ... or in seconds; both 0: the command line's --ops / --duration
};

struct WorkloadSpec {
  std::string name;
  std::string description;
  bool is_load = false;
  std::vector<PhaseSpec> phases;  // empty for LOAD and for a replay
  std::string trace;              // a replay (replay.h) of this trace file instead of phases
};

// "load", "a".."f" (case-insensitive), or nothing.
bool IsBuiltinWorkload(std::string_view name);
StatusOr<WorkloadSpec> BuiltinWorkload(std::string_view name);

// Parses a workload YAML document; `origin` names it in error messages.
StatusOr<WorkloadSpec> ParseWorkloadYaml(const std::string& text, const std::string& origin);
StatusOr<WorkloadSpec> LoadWorkloadFile(const std::string& path);

// Checks proportions, lengths and parameters; errors name the phase and the field.
Status ValidateWorkload(const WorkloadSpec& w);

}  // namespace grove::bench
