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

// Wall-clock milliseconds since the Unix epoch, for expiry times that must mean the same after a
// restart.
inline uint64_t NowUnixMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace grove
