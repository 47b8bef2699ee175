#include "index/treeline/forecast.h"

#include <algorithm>

namespace grove::treeline {

InsertForecaster::InsertForecaster(const Options& options) : o_(options), rng_(0x7e1) {
  sample_.reserve(10 * static_cast<size_t>(o_.partitions));
}

void InsertForecaster::RebuildEdges() {
  std::vector<uint64_t> sorted = sample_;
  std::sort(sorted.begin(), sorted.end());
  edges_.assign(o_.partitions + 1, 0);
  for (uint32_t i = 1; i < o_.partitions; ++i) {
    edges_[i] = sorted[i * sorted.size() / o_.partitions];
  }
  edges_.back() = UINT64_MAX;
  counts_.assign(o_.partitions, 0);
}

void InsertForecaster::RecordInsert(uint64_t key) {
  MutexLock lock(&mu_);
  ++seen_;
  const size_t cap = 10 * static_cast<size_t>(o_.partitions);
  if (sample_.size() < cap) {
    sample_.push_back(key);
  } else {
    const uint64_t j = rng_() % seen_;
    if (j < cap) sample_[j] = key;
  }
  if (edges_.empty()) {
    if (sample_.size() == cap) RebuildEdges();  // the first histogram starts with a full sample
    return;
  }
  const size_t p = std::upper_bound(edges_.begin() + 1, edges_.end() - 1, key) - edges_.begin() - 1;
  ++counts_[p];
  if (++in_epoch_ >= o_.epoch_inserts) {
    frozen_edges_ = edges_;
    frozen_counts_ = counts_;
    ++epochs_;
    in_epoch_ = 0;
    RebuildEdges();
  }
}

double InsertForecaster::Forecast(uint64_t low, uint64_t high) const {
  MutexLock lock(&mu_);
  if (frozen_counts_.empty() || high <= low) return 0;
  double sum = 0;
  for (size_t i = 0; i < frozen_counts_.size(); ++i) {
    const uint64_t a = frozen_edges_[i], b = frozen_edges_[i + 1];
    const uint64_t lo = std::max(a, low), hi = std::min(b, high);
    if (hi <= lo || frozen_counts_[i] == 0) continue;
    const double width = static_cast<double>(b - a);
    const double overlap = static_cast<double>(hi - lo);
    sum += static_cast<double>(frozen_counts_[i]) * (width > 0 ? overlap / width : 1.0);
  }
  return sum * o_.future_epochs;
}

uint64_t InsertForecaster::finished_epochs() const {
  MutexLock lock(&mu_);
  return epochs_;
}

}  // namespace grove::treeline
