#include "index/hln/leaf_layout.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "index/hln/hints.h"

namespace grove::hln {

size_t LeafImage::entries() const {
  size_t n = overflow.size();
  for (const auto& s : packed) n += s.size();
  return n;
}

size_t LeafImage::bytes() const {
  size_t b = 0;
  for (const Entry& e : overflow) b += e.bytes();
  for (const auto& s : packed) {
    for (const Entry& e : s) b += e.bytes();
  }
  return b;
}

namespace {

// Bin starts that fill each bin to capacity in order: succeeds whenever the sizes fit k bins in
// this order at all (an ordered greedy packing uses the fewest bins).
std::optional<std::vector<size_t>> PackGreedily(const std::vector<size_t>& sizes, int k,
                                                size_t capacity) {
  std::vector<size_t> starts(k + 1, sizes.size());
  size_t i = 0;
  for (int b = 0; b < k; ++b) {
    starts[b] = i;
    for (size_t bin = 0; i < sizes.size() && bin + sizes[i] <= capacity; ++i) bin += sizes[i];
  }
  if (i < sizes.size()) return std::nullopt;
  return starts;
}

// Distribute over byte sizes (see Distribute): evenly by bytes, or, when entries are so large
// that spreading evenly leaves too much for the last bin, bins filled in order.
std::optional<std::vector<size_t>> DistributeEvenly(const std::vector<size_t>& sizes, int k,
                                                    size_t capacity);

std::optional<std::vector<size_t>> DistributeSizes(const std::vector<size_t>& sizes, int k,
                                                   size_t capacity) {
  if (auto even = DistributeEvenly(sizes, k, capacity)) return even;
  return PackGreedily(sizes, k, capacity);
}

std::optional<std::vector<size_t>> DistributeEvenly(const std::vector<size_t>& sizes, int k,
                                                    size_t capacity) {
  size_t total = 0;
  for (size_t s : sizes) total += s;
  std::vector<size_t> starts(k + 1, sizes.size());
  size_t i = 0, cum = 0;
  for (int b = 0; b < k; ++b) {
    starts[b] = i;
    size_t bin = 0;
    if (b == k - 1) {
      for (; i < sizes.size(); ++i) bin += sizes[i];
      if (bin > capacity) return std::nullopt;
      break;
    }
    // The cumulative target for the end of bin b; take an entry while that brings the running
    // total closer to the target (ties go to the earlier bin).
    const double target = static_cast<double>(total) * (b + 1) / k;
    while (i < sizes.size()) {
      const size_t s = sizes[i];
      if (bin + s > capacity) break;
      if (static_cast<double>(cum) + static_cast<double>(s) / 2 > target) break;
      cum += s;
      bin += s;
      ++i;
    }
  }
  starts[k] = sizes.size();
  return starts;
}

std::vector<size_t> SizesOf(const std::vector<Entry>& entries) {
  std::vector<size_t> sizes;
  sizes.reserve(entries.size());
  for (const Entry& e : entries) sizes.push_back(e.bytes());
  return sizes;
}

}  // namespace

std::optional<std::vector<size_t>> Distribute(const std::vector<Entry>& entries, int k,
                                              size_t capacity) {
  return DistributeSizes(SizesOf(entries), k, capacity);
}

std::vector<Entry> LeafEntries(const std::vector<const char*>& subnodes, bool stash,
                               const LeafOrder& order) {
  std::vector<Entry> packed, overflow;
  for (size_t i = 0; i < subnodes.size(); ++i) {
    const SubnodeView s(subnodes[i]);
    auto& dst = stash && i == 0 ? overflow : packed;
    for (int j = 0; j < s.count(); ++j)
      dst.push_back({std::string(s.key(j)), std::string(s.cell(j))});
  }
  if (overflow.empty()) return packed;
  std::vector<Entry> all;
  all.reserve(packed.size() + overflow.size());
  std::merge(std::make_move_iterator(packed.begin()), std::make_move_iterator(packed.end()),
             std::make_move_iterator(overflow.begin()), std::make_move_iterator(overflow.end()),
             std::back_inserter(all),
             [&](const Entry& a, const Entry& b) { return order.Less(a.key, b.key); });
  return all;
}

std::optional<LeafImage> PlanNormal(std::vector<Entry> entries, int n) {
  auto starts = Distribute(entries, n, kSubnodeCapacity);
  if (!starts) return std::nullopt;
  LeafImage img;
  img.packed.resize(n);
  for (int b = 0; b < n; ++b) {
    for (size_t i = (*starts)[b]; i < (*starts)[b + 1]; ++i) {
      img.packed[b].push_back(std::move(entries[i]));
    }
  }
  return img;
}

std::optional<LeafImage> PlanStash(std::vector<Entry> entries, int n) {
  const int k = n - 1;
  const std::vector<size_t> sizes = SizesOf(entries);
  size_t total = 0;
  for (size_t s : sizes) total += s;
  // Evenly spaced entries go to the overflow subnode, so that the packed subnodes keep covering
  // the whole key range and the hints stay meaningful. Entry i goes there with `over` of them.
  auto overflows = [&](size_t i, size_t over, size_t* taken) {
    if (*taken < ((i + 1) * over) / entries.size()) {
      ++*taken;
      return true;
    }
    return false;
  };
  // Whether `over` overflow entries leave a packed part that fits: its bin starts, or nullopt.
  // *too_big is set when the overflow subnode itself cannot take them.
  auto attempt = [&](size_t over, bool* too_big) -> std::optional<std::vector<size_t>> {
    std::vector<size_t> packed_sizes;
    packed_sizes.reserve(entries.size() - over);
    size_t taken = 0, obytes = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (overflows(i, over, &taken)) {
        obytes += sizes[i];
      } else {
        packed_sizes.push_back(sizes[i]);
      }
    }
    *too_big = obytes > kSubnodeCapacity;
    if (*too_big) return std::nullopt;
    return DistributeSizes(packed_sizes, k, kSubnodeCapacity);
  };
  // The smallest `over` that works: at least what the packed subnodes cannot hold at all; more
  // overflow only makes the packed part easier to spread, so a binary search finds it.
  const size_t packed_room = static_cast<size_t>(k) * kSubnodeCapacity;
  const size_t avg = entries.empty() ? 1 : std::max<size_t>(1, total / entries.size());
  size_t lo = total > packed_room ? (total - packed_room) / avg : 0;
  size_t hi = entries.size();
  std::optional<std::vector<size_t>> best;
  size_t best_over = 0;
  while (lo <= hi) {
    const size_t mid = lo + (hi - lo) / 2;
    bool too_big = false;
    auto starts = attempt(mid, &too_big);
    if (starts) {
      best = std::move(starts);
      best_over = mid;
      if (mid == 0) break;
      hi = mid - 1;
    } else if (too_big) {
      if (mid == 0) break;
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  if (!best) return std::nullopt;
  LeafImage img;
  img.stash = true;
  img.packed.resize(k);
  size_t p = 0, taken = 0;
  int b = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (overflows(i, best_over, &taken)) {
      img.overflow.push_back(std::move(entries[i]));
      continue;
    }
    while (p >= (*best)[b + 1]) ++b;
    img.packed[b].push_back(std::move(entries[i]));
    ++p;
  }
  return img;
}

KeySpace::KeySpace(bool fnv, const core::Fences& fences, uint64_t floor, uint64_t ceiling)
    : fnv_(fnv) {
  if (fnv) {
    range_ = 18446744073709551616.0;  // 2^64
    return;
  }
  low_ = fences.has_low ? Project(fences.low) : std::min(floor, ceiling);
  const double high = fences.has_high ? static_cast<double>(Project(fences.high))
                                      : static_cast<double>(ceiling) + 1.0;
  range_ = high > static_cast<double>(low_) ? high - static_cast<double>(low_) : 0.0;
}

double KeySpace::Position(Slice key) const {
  if (range_ <= 0) return 0.0;
  const uint64_t p = fnv_ ? KeyHash(key) : Project(key);
  if (!fnv_ && p < low_) return 0.0;
  const double t = static_cast<double>(p - low_) / range_;
  return std::min(t, std::nextafter(1.0, 0.0));
}

uint64_t KeySpace::ProjectedAt(double position) const {
  if (range_ <= 0 || position <= 0) return low_;
  const double offset = std::round(std::min(position, 1.0) * range_);
  const double room = static_cast<double>(UINT64_MAX - low_);
  return offset >= room ? UINT64_MAX : low_ + static_cast<uint64_t>(offset);
}

std::vector<int> HintsFor(const LeafImage& image, const KeySpace& space, const HintParams& params) {
  std::vector<double> rb(image.packed.size(), 0.0);
  double last = 0.0;
  for (size_t i = 0; i < image.packed.size(); ++i) {
    if (!image.packed[i].empty()) last = space.Position(image.packed[i].back().key);
    rb[i] = last;
  }
  return CalcHints(rb, params);
}

}  // namespace grove::hln
