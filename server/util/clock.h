#pragma once

#include <chrono>
#include <cstdint>

namespace grove {

// Monotonic nanoseconds, for latencies and intervals.
inline uint64_t NowNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace grove
