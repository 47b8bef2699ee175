#pragma once

// KeyLocks: striped locks that keep writes to the same key in LSN order. A write locks the stripes
// of all its keys (sorted, so batches cannot deadlock), logs, applies, and unlocks. Two writes of
// one key therefore reach the index in the order of their log records, which is the order WAL
// replay applies them in. Writes to different stripes proceed in parallel and share group commits.

#include <algorithm>
#include <array>
#include <functional>
#include <string_view>
#include <vector>

#include "grove/slice.h"

#include "util/mutex.h"

namespace grove {

class KeyLocks {
 public:
  static constexpr size_t kStripes = 1024;

  // The sorted, distinct stripes of `keys`.
  static std::vector<uint32_t> StripesOf(const std::vector<Slice>& keys) {
    std::vector<uint32_t> s;
    s.reserve(keys.size());
    for (Slice k : keys)
      s.push_back(static_cast<uint32_t>(std::hash<std::string_view>()(k) % kStripes));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
  }

  void Lock(const std::vector<uint32_t>& stripes) NO_THREAD_SAFETY_ANALYSIS {
    for (uint32_t s : stripes) mu_[s].Lock();
  }
  void Unlock(const std::vector<uint32_t>& stripes) NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) mu_[*it].Unlock();
  }

 private:
  std::array<Mutex, kStripes> mu_;
};

}  // namespace grove
