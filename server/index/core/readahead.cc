#include "index/core/readahead.h"

#include <algorithm>

namespace grove::core {

ScanReadahead::ScanReadahead(BufferPool* pool, const CursorOptions& options)
    : options_(options), budget_(options.readahead_pages) {
  if (budget_ > 0) batch_ = std::make_unique<PrefetchBatch>(pool);
}

void ScanReadahead::Visited(size_t entries, size_t page_entries) {
  ++pages_;
  entries_ += entries;
  page_entries_ += std::max(entries, page_entries);
}

size_t ScanReadahead::Window() const {
  if (budget_ == 0 || pages_ == 0) return 0;
  const bool bounded = options_.reverse ? !options_.lower.empty() : options_.has_upper;
  if (options_.expected_entries > 0) {
    if (entries_ >= options_.expected_entries) return 0;
    const uint64_t left = options_.expected_entries - entries_;
    // At least one entry per page, so a run of empty pages does not make the estimate infinite.
    const uint64_t per_page = std::max<uint64_t>(1, page_entries_ / pages_);
    return static_cast<size_t>(std::min<uint64_t>(budget_, (left + per_page - 1) / per_page));
  }
  if (bounded) return budget_;
  return static_cast<size_t>(
      std::min<uint64_t>(budget_, uint64_t{1} << std::min<uint64_t>(pages_, 20)));
}

void ScanReadahead::Issue(const std::vector<PageId>& next) {
  if (!batch_) return;
  const size_t n = std::min(next.size(), Window());
  const auto window_end = next.begin() + static_cast<std::ptrdiff_t>(n);
  if (batch_->issued() > 0) {
    batch_->Retain(
        [&](PageId id) { return std::find(next.begin(), window_end, id) != window_end; });
  }
  if (n == 0) return;
  // Past the last page looked at (not found: a new parent, or the scan jumped: all are new).
  size_t from = 0;
  if (last_looked_at_ != kInvalidPageId) {
    const auto it = std::find(next.begin(), next.end(), last_looked_at_);
    if (it != next.end()) from = std::min(n, static_cast<size_t>(it - next.begin()) + 1);
  }
  if (from == n) return;
  size_t considered = 0;
  batch_->Issue(next.data() + from, n - from, &considered);
  // Pages left out because the side pool ran out are offered again next time.
  if (considered > 0) last_looked_at_ = next[from + considered - 1];
}

void NextChildren(const ParentLatch& p, const CursorOptions& options, size_t max,
                  std::vector<Slice>* out) {
  out->clear();
  const InnerNodeView n(p.data());
  if (!options.reverse) {
    for (int j = p.child + 1; j < n.count() && out->size() < max; ++j) {
      if (options.has_upper && n.key(j) >= Slice(options.upper)) break;  // j starts at key(j)
      out->push_back(n.payload(j));
    }
  } else {
    for (int j = p.child - 1; j >= 0 && out->size() < max; --j) {
      if (!options.lower.empty() && n.key(j + 1) <= Slice(options.lower)) break;  // ends there
      out->push_back(n.payload(j));
    }
  }
}

}  // namespace grove::core
