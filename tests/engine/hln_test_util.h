#pragma once

// Helpers for the engine-level hln tests: options for a Db with variant `hln`. Checks of the state
// against a std::map model are the conformance suite's (conformance/cases.h).

#include <map>
#include <string>

#include "conformance/cases.h"
#include "engine/db_test_util.h"
#include "index/registry.h"

namespace grove::testing {

using HlnParams = std::map<std::string, std::string>;

// A small Db with index.variant = "hln"; the cache holds at least 32 leaves of the chosen size.
inline Options HlnOptions(const std::string& dir, const HlnParams& params) {
  Options o = SmallOptions(dir);
  o.index.variant = "hln";
  o.index.params = params;
  uint64_t leaf_pages = 16;
  if (auto it = params.find("leaf_pages"); it != params.end()) leaf_pages = std::stoull(it->second);
  o.cache_bytes = std::max<uint64_t>(o.cache_bytes, 32 * leaf_pages * 4096);
  o.direct_io = false;  // the page cache keeps the many rereads of these tests cheap
  return o;
}

// The most operations a batch may have and still fit the cache's write room at once at its worst
// case (two whole leaves per operation; WorstCaseWritePages).
inline uint64_t MaxBatchEntries(const Options& o) {
  const uint64_t per_op = (*IndexRegistry::Builtins()).PagesPerOp(o.index.variant, o.index.params);
  const uint64_t room = WriteRoomPages(o);
  return room > 8 + per_op ? (room - 8) / per_op : 1;
}

inline std::string ParamsName(const HlnParams& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

}  // namespace grove::testing
