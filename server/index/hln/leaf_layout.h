#pragma once

// Planning a leaf's content (pure functions, no pages): how rebalancing, stash conversion and
// splits spread a leaf's entries over its subnodes, and where a key falls in the leaf's range.
//
// Entries are variable-sized, so "evenly" is by bytes: subnode b ends where the running total of
// cell bytes comes closest to (b + 1) / k of the whole. For fixed-size entries this is the
// paper's "fill levels differ by at most one".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grove/slice.h"

#include "index/core/inner_node.h"
#include "index/hln/hints.h"
#include "index/hln/subnode.h"

namespace grove::hln {

struct Entry {
  std::string key, cell;
  size_t bytes() const { return SlottedPageView::CellBytes(key.size(), cell.size()); }
};

// A leaf's content as it will be written.
struct LeafImage {
  bool stash = false;
  std::vector<std::vector<Entry>> packed;  // n subnodes, or n - 1 packed subnodes of a stash node
  std::vector<Entry> overflow;             // stash nodes only (subnode 0)

  size_t entries() const;
  size_t bytes() const;
};

// Start index of each of k bins over `entries` (k + 1 values, the last = entries.size()), spread
// evenly by bytes; nullopt when some bin would exceed `capacity`.
std::optional<std::vector<size_t>> Distribute(const std::vector<Entry>& entries, int k,
                                              size_t capacity);

// Every entry of a leaf in leaf order, from its subnode pages in subnode order (a stash node's
// overflow subnode, page 0, merged in).
std::vector<Entry> LeafEntries(const std::vector<const char*>& subnodes, bool stash,
                               const LeafOrder& order);

// A normal leaf of n subnodes. nullopt when the entries cannot be spread so that every subnode
// fits.
std::optional<LeafImage> PlanNormal(std::vector<Entry> entries, int n);

// A stash node (paper §2.4): entries spread evenly over the n - 1 packed subnodes when they fit;
// otherwise evenly spaced entries move to the overflow subnode until the rest fits. nullopt when
// the overflow subnode would be too small as well.
std::optional<LeafImage> PlanStash(std::vector<Entry> entries, int n);

// Where keys fall in a leaf's range, as fractions in [0, 1): the projection (grove::Project) of
// the key relative to the leaf's fences, or KeyHash(key) / 2^64 with hash: fnv (the leaf range is
// then the whole hash space). A leaf without a lower (upper) fence, the first (last) one, starts
// at `floor` (ends just above `ceiling`): the smallest (largest) projection ever inserted, so
// that the edge leaves of a key space far smaller than 2^64 are not squeezed towards 0.
class KeySpace {
 public:
  KeySpace(bool fnv, const core::Fences& fences, uint64_t floor = 0, uint64_t ceiling = UINT64_MAX);
  double Position(Slice key) const;
  // The projected key (Project(), the first 8 bytes) at `position` in [0, 1]: the inverse of
  // Position for key order. Meaningless for fnv, where positions are hash positions.
  uint64_t ProjectedAt(double position) const;

 private:
  bool fnv_;
  uint64_t low_ = 0;
  double range_ = 0;  // high - low; 0 when the fences share their first 8 bytes
};

// The hints for `image` (over its packed subnodes). Empty subnodes end where the previous one did.
std::vector<int> HintsFor(const LeafImage& image, const KeySpace& space, const HintParams& params);

}  // namespace grove::hln
