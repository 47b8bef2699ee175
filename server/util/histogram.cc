#include "util/histogram.h"

#include <algorithm>
#include <cmath>

namespace grove {

void Histogram::Record(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // also catches NaN
  int bucket = 0;
  double bound = kFirstBoundSeconds;
  while (bucket < kBuckets && seconds > bound) {
    bound *= 2;
    ++bucket;
  }
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  double bound = kFirstBoundSeconds;
  for (int i = 0; i < kBuckets; ++i) {
    s.bounds.push_back(bound);
    bound *= 2;
  }
  for (const auto& c : counts_) s.counts.push_back(c.load(std::memory_order_relaxed));
  s.count = 0;
  for (uint64_t c : s.counts) s.count += c;
  s.sum = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) * 1e-9;
  return s;
}

void CountHistogram::Record(double value) {
  if (!(value >= 0)) value = 0;
  int bucket = 0;
  double bound = 1;
  while (bucket < kBuckets && value > bound) {
    bound *= 2;
    ++bucket;
  }
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(static_cast<uint64_t>(value), std::memory_order_relaxed);
}

HistogramSnapshot CountHistogram::Snapshot() const {
  HistogramSnapshot s;
  double bound = 1;
  for (int i = 0; i < kBuckets; ++i) {
    s.bounds.push_back(bound);
    bound *= 2;
  }
  for (const auto& c : counts_) s.counts.push_back(c.load(std::memory_order_relaxed));
  for (uint64_t c : s.counts) s.count += c;
  s.sum = static_cast<double>(sum_.load(std::memory_order_relaxed));
  return s;
}

double HistogramSnapshot::Percentile(double p) const {
  if (count == 0 || counts.empty()) return 0;
  const double target = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(count);
  double seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double next = seen + static_cast<double>(counts[i]);
    if (next >= target && counts[i] > 0) {
      const double lo = i == 0 ? 0 : bounds[i - 1];
      const double hi = i < bounds.size() ? bounds[i] : bounds.back() * 2;
      const double frac = (target - seen) / static_cast<double>(counts[i]);
      return lo + (hi - lo) * std::clamp(frac, 0.0, 1.0);
    }
    seen = next;
  }
  return bounds.empty() ? 0 : bounds.back();
}

}  // namespace grove
