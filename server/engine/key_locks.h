#pragma once

// KeyLocks: striped reader-writer locks over keys.
//
// Writes lock the stripes of all their keys exclusively (sorted, so batches cannot deadlock), log,
// apply, and unlock. Two writes of one key therefore reach the index in the order of their log
// records, which is the order WAL replay applies them in. Writes to different stripes proceed in
// parallel and share group commits.
//
// DeleteRange locks every stripe (LockAll), in the same order, so that no other write is between
// its log append and its apply while it runs: replaying its record then removes exactly the keys
// it removed.
//
// BatchGet locks the stripes of its keys shared (sorted too) while it reads them, so that it sees
// each batch that wrote any of them entirely or not at all: no batch is part-way through applying
// to those keys while the shared locks are held. Get and scans take no stripe lock.

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

  void Lock(const std::vector<uint32_t>& stripes) GROVE_NO_THREAD_SAFETY_ANALYSIS {
    for (uint32_t s : stripes) mu_[s].Lock();
  }
  void Unlock(const std::vector<uint32_t>& stripes) GROVE_NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) mu_[*it].Unlock();
  }
  void LockAll() GROVE_NO_THREAD_SAFETY_ANALYSIS {
    for (SharedMutex& m : mu_) m.Lock();
  }
  void UnlockAll() GROVE_NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = mu_.rbegin(); it != mu_.rend(); ++it) it->Unlock();
  }
  void LockShared(const std::vector<uint32_t>& stripes) GROVE_NO_THREAD_SAFETY_ANALYSIS {
    for (uint32_t s : stripes) mu_[s].LockShared();
  }
  void UnlockShared(const std::vector<uint32_t>& stripes) GROVE_NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) mu_[*it].UnlockShared();
  }

 private:
  std::array<SharedMutex, kStripes> mu_;
};

}  // namespace grove
