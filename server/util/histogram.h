#pragma once

// A lock-free latency histogram with fixed exponential buckets (10 us .. ~84 s, factor 2), cheap
// enough for the write path. Snapshot() converts to the public HistogramSnapshot (seconds).
//
// Thread safety: Record() and Snapshot() may run concurrently; a snapshot may miss in-flight
// records but never sees torn counts.

#include <array>
#include <atomic>
#include <cstdint>

#include "grove/stats.h"

namespace grove {

class Histogram {
 public:
  static constexpr int kBuckets = 24;  // finite buckets; one more for +Inf
  static constexpr double kFirstBoundSeconds = 1e-5;

  void Record(double seconds);
  void RecordNanos(uint64_t nanos) { Record(static_cast<double>(nanos) * 1e-9); }
  HistogramSnapshot Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_nanos_{0};
};

// The same for counts (records per sync): buckets 1, 2, 4, ... 2^kBuckets-1, then +Inf.
class CountHistogram {
 public:
  static constexpr int kBuckets = 16;

  void Record(double value);
  HistogramSnapshot Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets + 1> counts_{};
  std::atomic<uint64_t> sum_{0};
};

}  // namespace grove
