#pragma once

// The key prefix AULID's projection strips (aulid.h): keys that start with the prefix P project
// to the 8 bytes after it, keys below P's range to 0 and keys above it to UINT64_MAX. Leaves whose
// keys project alike share a run, which a lookup walks leaf by leaf, so the prefix decides how
// far lookups walk. The first and last key's common prefix is the natural choice, and the only
// one when keys are spread evenly; but with clusters ("tenant-41/...", "tenant-42/user:...",
// "tenant-43/...") it can be the worst: "tenant-4" sends every key of the large middle cluster to
// the same projection and makes the whole cluster one run. ChoosePrefix weighs candidates by the
// walk they cause and keeps the cheapest.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grove/slice.h"

namespace grove::aulid {

// Proj(key) under `prefix` (aulid.h).
uint64_t ProjectPast(std::string_view prefix, Slice key);

// A leaf's smallest and largest key, in chain order; both empty for an empty leaf.
struct LeafKeys {
  std::string min, max;
};

// The longest prefix `a` and `b` share.
std::string CommonPrefix(std::string_view a, std::string_view b);

// Whether the boundary between two neighbouring leaves ends a run under `prefix`: both hold keys
// and those keys project apart (the rule splits, bulk loads and reindexes use).
bool ProjectsApart(const LeafKeys& left, const LeafKeys& right, std::string_view prefix);

// Leaves a uniform lookup walks, summed over the leaves: the sum over runs of (run length)^2,
// runs ending where ProjectsApart.
uint64_t WalkCost(const std::vector<LeafKeys>& leaves, std::string_view prefix);

// The prefix with the least WalkCost among: `current`, the common prefix of the smallest and the
// largest key, and (a few rounds) the common prefix of the keys of the longest run under the best
// so far. Ties keep `current` (no reindex for nothing), then the candidate found first.
std::string ChoosePrefix(const std::vector<LeafKeys>& leaves, const std::string& current);

}  // namespace grove::aulid
