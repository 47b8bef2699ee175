// The record cache: newest versions, what a write hands back, CLOCK eviction (clean before dirty),
// write-back ranges, pins across a reorganisation and read tickets.

#include "index/treeline/record_cache.h"

#include <gtest/gtest.h>

namespace grove::treeline {
namespace {

RecordCache::Options Small(uint64_t capacity) {
  RecordCache::Options o;
  o.capacity_bytes = capacity;
  return o;
}

std::string K(int i) {
  char b[16];
  std::snprintf(b, sizeof(b), "k%05d", i);
  return b;
}

TEST(RecordCacheTest, WritesHandBackOnlyCellsThatLivedHereAlone) {
  RecordCache c(Small(1 << 20));
  EXPECT_FALSE(c.Write("a", std::string("v1"), 1).has_value());
  EXPECT_EQ(c.Write("a", std::string("v2"), 2), std::optional<std::string>("v1"));
  EXPECT_EQ(c.Get("a").cell, "v2");
  // Once it reached its page, the cell is the page's to release.
  c.WriteBackRange("a", nullptr, 0,
                   [](const std::vector<RecordCache::DirtyRecord>& d) { return d.size(); });
  EXPECT_EQ(c.dirty_entries(), 0u);
  EXPECT_FALSE(c.Write("a", std::nullopt, 3).has_value());
  EXPECT_EQ(c.Get("a").kind, RecordCache::Kind::kTombstone);
  EXPECT_EQ(c.Get("zz").kind, RecordCache::Kind::kMiss);
}

TEST(RecordCacheTest, OldestDirtyLsnBoundsTheRedoPoint) {
  RecordCache c(Small(1 << 20));
  EXPECT_EQ(c.OldestDirtyLsn(), kMaxLsn);
  c.Write(K(1), std::string("x"), 10);
  c.Write(K(2), std::string("y"), 11);
  EXPECT_EQ(c.OldestDirtyLsn(), 10u);
  EXPECT_EQ(c.OldestDirtyKey(), K(1));
  c.Write(K(1), std::string("z"), 12);
  EXPECT_EQ(c.OldestDirtyLsn(), 11u);
  std::vector<std::string> cells;
  c.DirtyCells(&cells);
  EXPECT_EQ(cells.size(), 2u);
}

TEST(RecordCacheTest, EvictionTakesCleanEntriesAndNamesADirtyVictim) {
  RecordCache c(Small(40 * (RecordCache::kEntryOverhead + 16)));
  for (int i = 0; i < 20; ++i) c.AdmitClean(K(i), "clean-value", 4, 0, c.Ticket(0));
  for (int i = 20; i < 60; ++i) c.Write(K(i), std::string("dirty-value"), static_cast<Lsn>(i));
  ASSERT_GT(c.Excess(), 0u);
  std::optional<std::string> victim = c.Evict();
  ASSERT_TRUE(victim.has_value()) << "only dirty entries are left to make room";
  EXPECT_GE(*victim, K(20));
  const RecordCache::Stats s = c.GetStats();
  EXPECT_EQ(s.clean_evictions, 20u) << "every clean entry went before a dirty one";
  EXPECT_EQ(s.dirty, 40u);
  // Writing the victim back cleans it; then it can go.
  c.WriteBackRange(*victim, nullptr, 0,
                   [](const std::vector<RecordCache::DirtyRecord>& d) { return d.size(); });
  while (c.Excess() > 0 && !c.Evict().has_value()) {
  }
  EXPECT_EQ(c.Excess(), 0u);
}

TEST(RecordCacheTest, WriteBackRangeCleansTheAppliedPrefix) {
  RecordCache c(Small(1 << 20));
  for (int i = 0; i < 10; ++i) c.Write(K(i), std::string("v"), 5);
  const std::string high = K(8);
  size_t seen = 0;
  const size_t done = c.WriteBackRange(K(2), &high, 7, [&](const auto& d) {
    seen = d.size();
    return size_t{3};
  });
  EXPECT_EQ(seen, 6u);  // k00002 .. k00007
  EXPECT_EQ(done, 3u);
  EXPECT_EQ(c.dirty_entries(), 7u);
  const auto dirty = c.DirtySnapshot();
  EXPECT_FALSE(dirty.count(K(2)));
  EXPECT_TRUE(dirty.count(K(5)));
}

TEST(RecordCacheTest, APinnedRecordWrittenAgainInTheSameBatchStaysDirty) {
  RecordCache c(Small(1 << 20));
  c.Write(K(1), std::string("old"), 9);
  c.Write(K(2), std::string("two"), 9);
  const auto pinned = c.PinRange(K(0), nullptr, 1 << 20);
  ASSERT_EQ(pinned.size(), 2u);
  // The same LSN: one batch wrote k1 twice while a reorganisation held its first version.
  EXPECT_FALSE(c.Write(K(1), std::string("new"), 9).has_value())
      << "a pinned cell belongs to the new pages, not to the writer";
  // Pinned records are the reorganisation's: write-backs leave them alone.
  size_t offered = 0;
  c.WriteBackRange(K(0), nullptr, 0, [&](const auto& d) {
    offered = d.size();
    return size_t{0};
  });
  EXPECT_EQ(offered, 1u) << "only k1's new version, which is no longer pinned";
  const std::vector<std::string> orphans = c.Unpin(pinned, /*applied=*/true);
  EXPECT_EQ(orphans, std::vector<std::string>{"old"});
  EXPECT_EQ(c.Get(K(1)).cell, "new");
  // k2 reached the new pages; k1's new version did not, though it has the LSN of the old one.
  const auto dirty = c.DirtySnapshot();
  EXPECT_EQ(dirty.size(), 1u);
  EXPECT_TRUE(dirty.count(K(1)));
}

TEST(RecordCacheTest, AbandonedPinsKeepRecordsDirty) {
  RecordCache c(Small(1 << 20));
  c.Write(K(1), std::string("a"), 1);
  const auto pinned = c.PinRange(K(0), nullptr, 1 << 20);
  c.Write(K(1), std::string("b"), 2);
  EXPECT_EQ(c.Unpin(pinned, /*applied=*/false), std::vector<std::string>{"a"});
  EXPECT_EQ(c.dirty_entries(), 1u);
  EXPECT_EQ(c.Get(K(1)).cell, "b");
}

TEST(RecordCacheTest, PinRangeStopsAtItsBudgetButTakesOne) {
  RecordCache c(Small(1 << 20));
  for (int i = 0; i < 10; ++i) c.Write(K(i), std::string(100, 'v'), 1);
  EXPECT_EQ(c.PinRange(K(0), nullptr, 0).size(), 1u);
  RecordCache d(Small(1 << 20));
  for (int i = 0; i < 10; ++i) d.Write(K(i), std::string(100, 'v'), 1);
  EXPECT_EQ(d.PinRange(K(0), nullptr, 3 * (6 + 100 + 16)).size(), 3u);
}

TEST(RecordCacheTest, StaleReadTicketsAdmitNothing) {
  RecordCache c(Small(1 << 20));
  const uint64_t ticket = c.Ticket(42);
  // A write-back of page 42 lands between the read and its admission.
  c.Write(K(1), std::string("new"), 3);
  c.WriteBackRange(K(1), nullptr, 42, [](const auto& d) { return d.size(); });
  c.Write(K(1), std::nullopt, 4);
  c.WriteBackRange(K(1), nullptr, 42, [](const auto& d) { return d.size(); });
  c.AdmitClean(K(1), "stale", 4, 42, ticket);
  EXPECT_EQ(c.Get(K(1)).kind, RecordCache::Kind::kMiss) << "a stale read must not come back";
  c.AdmitClean(K(1), "fresh", 4, 42, c.Ticket(42));
  EXPECT_EQ(c.Get(K(1)).cell, "fresh");
}

}  // namespace
}  // namespace grove::treeline
