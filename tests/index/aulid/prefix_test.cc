// ChoosePrefix and WalkCost (index/aulid/prefix.h) on leaf key ranges built by hand.

#include "index/aulid/prefix.h"

#include <functional>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace grove::aulid {
namespace {

// Leaves of `per_leaf` consecutive keys from key(0), key(1), ... key(n - 1).
std::vector<LeafKeys> Leaves(uint64_t n, uint64_t per_leaf,
                             const std::function<std::string(uint64_t)>& key) {
  std::vector<LeafKeys> out;
  for (uint64_t i = 0; i < n; i += per_leaf) {
    out.push_back({key(i), key(std::min(n, i + per_leaf) - 1)});
  }
  return out;
}

std::vector<LeafKeys> Concat(std::vector<LeafKeys> a, const std::vector<LeafKeys>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefixTest, ProjectionPastThePrefixIsMonotone) {
  EXPECT_EQ(ProjectPast("", "abcdefghij"), Project("abcdefghij"));
  EXPECT_EQ(ProjectPast("tenant-", "tenant-42/user"), Project("42/user"));
  EXPECT_EQ(ProjectPast("tenant-", "tenans"), 0u);
  EXPECT_EQ(ProjectPast("tenant-", "tenant"), 0u);
  EXPECT_EQ(ProjectPast("tenant-", "tenanu"), UINT64_MAX);
}

TEST(PrefixTest, WalkCostSumsTheSquaresOfTheRuns) {
  // Keys sharing their first 8 bytes: under no prefix all leaves are one run, under the shared
  // prefix every leaf is a run of its own.
  const auto leaves = Leaves(1000, 100, [](uint64_t i) { return fmt::format("user:{:010d}", i); });
  EXPECT_EQ(WalkCost(leaves, ""), 100u);
  EXPECT_EQ(WalkCost(leaves, "user:00000"), 10u);
  // An empty leaf ends no run: it and both its neighbours are one run.
  auto with_empty = leaves;
  with_empty.insert(with_empty.begin() + 3, LeafKeys{});
  EXPECT_EQ(WalkCost(with_empty, "user:00000"), 3u * 3u + 8u);
}

TEST(PrefixTest, TheCommonPrefixIsTakenWhenItShortensTheWalk) {
  const auto leaves = Leaves(1000, 100, [](uint64_t i) { return fmt::format("user:{:010d}", i); });
  EXPECT_EQ(ChoosePrefix(leaves, ""), "user:0000000");
  EXPECT_EQ(ChoosePrefix(leaves, "user:00000"), "user:00000");
}

// Three clusters: the first and last key share only "tenant-4", under which every key of the
// large middle cluster projects to "2/user:0" (one run). The middle cluster's own prefix keeps
// it spread; the small clusters become the runs at 0 and UINT64_MAX.
TEST(PrefixTest, AClusterOutsideTheCurrentPrefixDoesNotCollapseTheLargestOne) {
  const auto low = Leaves(50, 10, [](uint64_t i) { return fmt::format("tenant-41/{:05d}", i); });
  const auto mid =
      Leaves(20000, 100, [](uint64_t i) { return fmt::format("tenant-42/user:{:012d}", i * 3); });
  const auto high = Leaves(50, 10, [](uint64_t i) { return fmt::format("tenant-43/{:05d}", i); });
  const auto leaves = Concat(Concat(low, mid), high);
  ASSERT_EQ(leaves.size(), 210u);
  // Under "tenant-4" the small clusters spread (their next bytes differ), the middle does not.
  EXPECT_EQ(WalkCost(leaves, "tenant-4"), 5u + 200u * 200u + 5u);
  const std::string chosen = ChoosePrefix(leaves, "tenant-42/user:0000000");
  EXPECT_EQ(chosen, "tenant-42/user:0000000");
  EXPECT_EQ(WalkCost(leaves, chosen), 25u + 200u + 25u);
  // From the prefix that collapses the middle, the longest run's own prefix is found.
  EXPECT_EQ(ChoosePrefix(leaves, "tenant-4"), "tenant-42/user:0000000");
  EXPECT_EQ(ChoosePrefix(leaves, ""), "tenant-42/user:0000000");
}

// 8-byte integer keys: every leaf is a run under any prefix they share, so the current one stays.
TEST(PrefixTest, IntegerKeysKeepTheCurrentPrefix) {
  const auto leaves = Leaves(5000, 50, [](uint64_t i) {
    std::string k(8, '\0');
    for (int b = 0; b < 8; ++b) k[b] = static_cast<char>(((i * 7919) << 24) >> (56 - 8 * b));
    return k;
  });
  EXPECT_EQ(WalkCost(leaves, ""), 100u);
  EXPECT_EQ(ChoosePrefix(leaves, ""), "");
}

}  // namespace
}  // namespace grove::aulid
