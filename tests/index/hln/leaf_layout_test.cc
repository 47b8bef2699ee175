// Leaf planning: even spreading by bytes, stash layouts, key positions, FNV-1a.

#include "index/hln/leaf_layout.h"

#include <gtest/gtest.h>

#include "util/coding.h"

namespace grove::hln {
namespace {

std::vector<Entry> Entries(int n, size_t value_len, uint64_t step = 1) {
  std::vector<Entry> e;
  for (int i = 0; i < n; ++i) e.push_back({EncodeU64Key(i * step), std::string(value_len, 'v')});
  return e;
}

TEST(HlnLayout, EqualEntriesSpreadWithinOne) {
  // 8-byte keys and 9-byte cells (an inline 8-byte value): 23 bytes per cell with its slot.
  for (int n : {4, 16, 64}) {
    for (int count : {n, 3 * n + 1, 100 * n + 7}) {
      auto img = PlanNormal(Entries(count, 9), n);
      ASSERT_TRUE(img.has_value()) << n << " " << count;
      size_t lo = SIZE_MAX, hi = 0, total = 0;
      for (const auto& s : img->packed) {
        lo = std::min(lo, s.size());
        hi = std::max(hi, s.size());
        total += s.size();
      }
      EXPECT_EQ(total, static_cast<size_t>(count));
      EXPECT_LE(hi - lo, 1u) << n << " " << count;
    }
  }
}

TEST(HlnLayout, FullLeafDoesNotFit) {
  const size_t per = kSubnodeCapacity / 23;  // 176 cells of 23 bytes
  EXPECT_TRUE(PlanNormal(Entries(static_cast<int>(per * 4), 9), 4).has_value());
  EXPECT_FALSE(PlanNormal(Entries(static_cast<int>(per * 4 + 1), 9), 4).has_value());
}

TEST(HlnLayout, StashFillsPackedSubnodesThenOverflow) {
  const size_t per = kSubnodeCapacity / 23;
  // Fits in the three packed subnodes: overflow stays empty.
  auto small = PlanStash(Entries(static_cast<int>(per * 3 - 5), 9), 4);
  ASSERT_TRUE(small.has_value());
  EXPECT_TRUE(small->stash);
  EXPECT_EQ(small->packed.size(), 3u);
  EXPECT_TRUE(small->overflow.empty());
  // A completely full leaf: the rest goes to the overflow, spread over the key range.
  auto full = PlanStash(Entries(static_cast<int>(per * 4), 9), 4);
  ASSERT_TRUE(full.has_value());
  EXPECT_GE(full->overflow.size(), per - 2);
  EXPECT_EQ(full->entries(), per * 4);
  EXPECT_LT(full->overflow.front().key, full->packed[0].back().key);
  EXPECT_GT(full->overflow.back().key, full->packed[2].front().key);
  EXPECT_FALSE(PlanStash(Entries(static_cast<int>(per * 4 + 1), 9), 4).has_value());
}

// Fences of a leaf holding the integer keys [low, high).
core::Fences Between(uint64_t low, uint64_t high) {
  core::Fences f;
  f.low = EncodeU64Key(low);
  f.high = EncodeU64Key(high);
  f.has_low = f.has_high = true;
  return f;
}

TEST(HlnLayout, KeySpacePositions) {
  const KeySpace s(false, Between(1000, 2000));
  EXPECT_DOUBLE_EQ(s.Position(EncodeU64Key(1000)), 0.0);
  EXPECT_DOUBLE_EQ(s.Position(EncodeU64Key(1500)), 0.5);
  EXPECT_LT(s.Position(EncodeU64Key(1999)), 1.0);
  const KeySpace open(false, core::Fences());
  EXPECT_DOUBLE_EQ(open.Position(EncodeU64Key(1ull << 63)), 0.5);
  // Fences sharing their first 8 bytes give no range: everything is guessed at 0.
  core::Fences same;
  same.low = "prefix__a";
  same.high = "prefix__b";
  same.has_low = same.has_high = true;
  EXPECT_DOUBLE_EQ(KeySpace(false, same).Position("prefix__aa"), 0.0);
}

// ProjectedAt inverts Position (SHORTCUT's subnode boundaries for hln are built with it).
TEST(HlnLayout, ProjectedAtInvertsPosition) {
  const KeySpace s(false, Between(1000, 2000));
  EXPECT_EQ(s.ProjectedAt(0.0), Project(EncodeU64Key(1000)));
  EXPECT_EQ(s.ProjectedAt(0.5), Project(EncodeU64Key(1500)));
  EXPECT_EQ(s.ProjectedAt(-0.1), Project(EncodeU64Key(1000))) << "clamped to the low fence";
  EXPECT_EQ(s.ProjectedAt(1.5), Project(EncodeU64Key(2000))) << "clamped to the high fence";
  for (uint64_t k = 1000; k < 2000; k += 37) {
    EXPECT_EQ(s.ProjectedAt(s.Position(EncodeU64Key(k))), Project(EncodeU64Key(k))) << k;
  }
  // The open top of the key space saturates instead of wrapping around.
  const KeySpace open(false, core::Fences());
  EXPECT_EQ(open.ProjectedAt(1.0), UINT64_MAX);
  EXPECT_EQ(open.ProjectedAt(0.25), 1ull << 62);
}

TEST(HlnLayout, KeyHashIsFnv1aOverTheReversedKey) {
  // Reference values of 64-bit FNV-1a (draft-eastlake-fnv), over "", "a" and "foobar" reversed.
  EXPECT_EQ(KeyHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(KeyHash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(KeyHash("raboof"), 0x85944171f73967e8ull);
  const KeySpace h(true, core::Fences());
  EXPECT_DOUBLE_EQ(h.Position("a"),
                   static_cast<double>(0xaf63dc4c8601ec8cull) / 18446744073709551616.0);
  const LeafOrder order(true);
  EXPECT_TRUE(order.Less("a", "") == (KeyHash("a") < KeyHash("")));
  // Consecutive integer keys spread over the whole hash space (the top bits choose the subnode).
  std::vector<int> bins(16, 0);
  for (uint64_t i = 0; i < 16000; ++i) ++bins[KeyHash(EncodeU64Key(i * 10)) >> 60];
  for (int b : bins) EXPECT_NEAR(b, 1000, 150);
}

TEST(HlnLayout, EdgeLeavesUseTheKeyFloorAndCeiling) {
  const KeySpace first(false, core::Fences(), 1000, 2000);
  EXPECT_DOUBLE_EQ(first.Position(EncodeU64Key(1000)), 0.0);
  EXPECT_NEAR(first.Position(EncodeU64Key(1500)), 0.5, 1e-3);
}

}  // namespace
}  // namespace grove::hln

namespace grove::hln {
namespace {

// Hints computed for a freshly planned leaf predict the subnode of (nearly) every key, in key
// order and in hash order.
TEST(HlnLayout, HintsPredictPlannedLeaves) {
  for (bool fnv : {false, true}) {
    for (int n : {4, 16, 64}) {
      std::vector<Entry> entries = Entries(n * 150, 9, 7919);
      const LeafOrder order(fnv);
      std::sort(entries.begin(), entries.end(),
                [&](const Entry& a, const Entry& b) { return order.Less(a.key, b.key); });
      core::Fences f;
      f.high = EncodeU64Key(static_cast<uint64_t>(n) * 150 * 7919);
      f.has_high = true;
      const KeySpace space(fnv, f);
      auto img = PlanNormal(entries, n);
      ASSERT_TRUE(img.has_value());
      HintParams p;
      p.parts = n;
      p.bits = 4;
      const std::vector<int> hints = HintsFor(*img, space, p);
      size_t miss = 0, total = 0;
      for (int i = 0; i < n; ++i) {
        for (const Entry& e : img->packed[i]) {
          ++total;
          if (GuessSubnode(space.Position(e.key), hints, p) != i) ++miss;
        }
      }
      EXPECT_LT(static_cast<double>(miss) / total, 0.03) << "fnv " << fnv << " n " << n;
    }
  }
}

}  // namespace
}  // namespace grove::hln
