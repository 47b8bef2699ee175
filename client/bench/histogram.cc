#include "bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace grove::bench {
namespace {

constexpr uint64_t kExact = uint64_t{1} << LatencyHistogram::kSubBits;  // 256 exact buckets
constexpr uint64_t kHalf = kExact / 2;                                  // sub-buckets per octave

}  // namespace

size_t LatencyHistogram::BucketOf(uint64_t v) {
  v = std::min(v, kMaxNanos);
  if (v < kExact) return static_cast<size_t>(v);
  const int e = 63 - std::countl_zero(v);  // v in [2^e, 2^(e+1)), e >= kSubBits
  const int shift = e - (kSubBits - 1);    // keeps the top kSubBits bits: v >> shift in [128, 256)
  return static_cast<size_t>(kExact + (e - kSubBits) * kHalf + ((v >> shift) - kHalf));
}

uint64_t LatencyHistogram::BucketLow(size_t b) {
  if (b < kExact) return b;
  const uint64_t octave = (b - kExact) / kHalf;  // e - kSubBits
  const uint64_t sub = (b - kExact) % kHalf;
  const int shift = static_cast<int>(octave) + 1;
  return (kHalf + sub) << shift;
}

uint64_t LatencyHistogram::BucketWidth(size_t b) {
  if (b < kExact) return 1;
  return uint64_t{1} << ((b - kExact) / kHalf + 1);
}

size_t LatencyHistogram::NumBuckets() { return BucketOf(kMaxNanos) + 1; }

void LatencyHistogram::Record(uint64_t nanos) {
  if (counts_.empty()) counts_.assign(NumBuckets(), 0);
  nanos = std::min(nanos, kMaxNanos);
  ++counts_[BucketOf(nanos)];
  ++count_;
  sum_ += nanos;
  min_ = std::min(min_, nanos);
  max_ = std::max(max_, nanos);
}

void LatencyHistogram::RecordMany(uint64_t nanos, uint64_t n) {
  if (n == 0) return;
  if (counts_.empty()) counts_.assign(NumBuckets(), 0);
  nanos = std::min(nanos, kMaxNanos);
  counts_[BucketOf(nanos)] += n;
  count_ += n;
  sum_ += nanos * n;
  min_ = std::min(min_, nanos);
  max_ = std::max(max_, nanos);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  if (counts_.empty()) counts_.assign(NumBuckets(), 0);
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::Clear() { *this = LatencyHistogram(); }

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= rank) {
      const uint64_t mid = BucketLow(b) + BucketWidth(b) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

}  // namespace grove::bench
