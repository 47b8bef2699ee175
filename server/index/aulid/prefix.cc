// Choosing AULID's key prefix by the leaf walk it causes (prefix.h).

#include "index/aulid/prefix.h"

#include <algorithm>

namespace grove::aulid {

namespace {

struct RunCost {
  uint64_t cost = 0;
  size_t longest_first = 0, longest_last = 0;  // the longest run's leaves, inclusive
};

RunCost Measure(const std::vector<LeafKeys>& leaves, std::string_view prefix) {
  RunCost r;
  size_t start = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const bool last = i + 1 == leaves.size();
    const bool ends = last || ProjectsApart(leaves[i], leaves[i + 1], prefix);
    if (!ends) continue;
    const uint64_t n = i - start + 1;
    r.cost += n * n;
    if (n > r.longest_last - r.longest_first + 1) {
      r.longest_first = start;
      r.longest_last = i;
    }
    start = i + 1;
  }
  return r;
}

}  // namespace

std::string CommonPrefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return std::string(a.substr(0, i));
}

bool ProjectsApart(const LeafKeys& left, const LeafKeys& right, std::string_view prefix) {
  return !left.max.empty() && !right.min.empty() &&
         ProjectPast(prefix, left.max) < ProjectPast(prefix, right.min);
}

uint64_t ProjectPast(std::string_view prefix, Slice key) {
  if (prefix.empty()) return Project(key);
  const Slice head = key.substr(0, prefix.size());
  if (head < prefix) return 0;
  if (head > prefix) return UINT64_MAX;
  return Project(key.substr(prefix.size()));
}

uint64_t WalkCost(const std::vector<LeafKeys>& leaves, std::string_view prefix) {
  return Measure(leaves, prefix).cost;
}

std::string ChoosePrefix(const std::vector<LeafKeys>& leaves, const std::string& current) {
  // The smallest and largest key (empty leaves hold none).
  std::string_view lo, hi;
  for (const LeafKeys& l : leaves) {
    if (l.min.empty()) continue;
    if (lo.empty()) lo = l.min;
    hi = l.max;
  }
  std::string best = current;
  RunCost best_cost = Measure(leaves, best);
  std::vector<std::string> tried{current};
  auto consider = [&](std::string candidate) {
    if (std::find(tried.begin(), tried.end(), candidate) != tried.end()) return false;
    const RunCost c = Measure(leaves, candidate);
    tried.push_back(candidate);
    if (c.cost >= best_cost.cost) return false;
    best = std::move(candidate);
    best_cost = c;
    return true;
  };
  if (!lo.empty()) consider(CommonPrefix(lo, hi));
  // Narrowing onto the longest run: its keys' common prefix spreads them over their own 8
  // bytes (and folds the keys outside it into the runs at 0 and UINT64_MAX).
  for (int round = 0; round < 4; ++round) {
    std::string_view run_lo, run_hi;
    for (size_t i = best_cost.longest_first; i <= best_cost.longest_last && i < leaves.size();
         ++i) {
      if (leaves[i].min.empty()) continue;
      if (run_lo.empty()) run_lo = leaves[i].min;
      run_hi = leaves[i].max;
    }
    if (run_lo.empty() || best_cost.longest_last == best_cost.longest_first) break;
    if (!consider(CommonPrefix(run_lo, run_hi))) break;
  }
  return best;
}

}  // namespace grove::aulid
