#pragma once

// What a variant declares to the registry (registry.h): its name, parameters, page types and
// factories, and the helpers variants parse their parameters with. Kept apart from the registry
// so that variants build on it without depending on the registry, which depends on them.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

namespace grove {

using ParamMap = std::map<std::string, std::string>;

struct ParamSpec {
  std::string name;
  std::string default_value;
  bool layout = false;  // persisted and fixed for the life of the data directory
  std::string help;     // allowed values and meaning
};

struct PageTypeClaim {
  uint16_t type = 0;  // >= kFirstIndexPageType
  std::string name;   // for messages: "hln subnode"
};

struct VariantSpec {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  // The page types only this variant writes (shared ones are claimed by their layer).
  std::vector<PageTypeClaim> page_types;
  std::function<StatusOr<std::unique_ptr<Index>>(const IndexContext&, const ParamMap&)> create;
  std::function<StatusOr<std::unique_ptr<Index>>(const IndexContext&, const ParamMap&, Slice)> open;
  // Index::PagesDirtiedPerOp() for resolved parameters, known before the index is open (groved's
  // startup check of its write room). Empty: kDefaultPagesPerOp.
  std::function<uint64_t(const ParamMap&)> pages_per_op;
  // The share of Options::cache_bytes that goes to the buffer pool for resolved parameters; the
  // rest is the variant's own memory (IndexContext::memory_bytes: TreeLine's record cache). Empty:
  // all of it is the buffer pool.
  std::function<double(const ParamMap&)> buffer_pool_share;
  // The share the buffer pool may grow to at run time, taking it from the variant's own memory
  // (BufferPool::SetCapacityPages; TreeLine's memory split). Empty, or not above the share: the
  // pool keeps its size.
  std::function<double(const ParamMap&)> buffer_pool_max_share;
  // The least the buffer pool gets whatever the share, but never more than a quarter of
  // cache_bytes by this rule: a share chosen for large budgets still leaves a small one a working
  // pool (pages in flight for every writer and write-back, dirty pages until a checkpoint).
  uint64_t min_buffer_pool_bytes = 0;
};

inline constexpr uint16_t kFirstIndexPageType = 16;

// Helpers for variants parsing their parameters; errors name the parameter.
StatusOr<double> ParseDoubleParam(const ParamMap& params, const std::string& name, double lo,
                                  double hi);
StatusOr<uint64_t> ParseUintParam(const ParamMap& params, const std::string& name, uint64_t lo,
                                  uint64_t hi);
// Bulk loads: entry #`index` must come after `prev` (unless it is the first) and be within the
// limits. The error names the entry.
Status CheckBulkEntry(uint64_t index, Slice prev, Slice key, size_t cell_bytes, size_t max_key,
                      size_t max_cell);

StatusOr<std::string> ParseEnumParam(const ParamMap& params, const std::string& name,
                                     const std::vector<std::string>& allowed);

}  // namespace grove
