#pragma once

// LatencyHistogram: an HDR-style log-linear histogram of nanosecond latencies.
//
// Values below 2^kSubBits are counted exactly. Above, every power-of-two range [2^e, 2^(e+1)) is
// split into 2^(kSubBits-1) equal sub-buckets, so a reported percentile is within 1/128 (0.8%) of
// the true value whatever its magnitude: 1 µs and 10 s are resolved equally well, which fixed
// exponential buckets (a factor of 2 apart) cannot do for p99 comparisons between engines.
// Values above kMaxNanos (about 4.9 hours) are clamped to it.
//
// Thread safety: none. Each worker thread owns its histograms; they are merged after the run.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace grove::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 8;
  static constexpr uint64_t kMaxNanos = (uint64_t{1} << 44) - 1;

  void Record(uint64_t nanos);
  // n samples of `nanos` at once (the interval histograms of the timeline).
  void RecordMany(uint64_t nanos, uint64_t n);
  void Merge(const LatencyHistogram& other);
  void Clear();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double Mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }
  // The value at percentile p (0..100): the midpoint of the bucket holding the ceil(p% * count)-th
  // smallest value, clamped to [min, max]. 0 when empty.
  uint64_t Percentile(double p) const;

  // Bucket geometry, exposed for tests.
  static size_t BucketOf(uint64_t nanos);
  static uint64_t BucketLow(size_t bucket);
  static uint64_t BucketWidth(size_t bucket);
  static size_t NumBuckets();

 private:
  std::vector<uint64_t> counts_;  // allocated on the first Record or Merge
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace grove::bench
