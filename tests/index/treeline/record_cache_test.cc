// The record cache: newest versions, what a write hands back, CLOCK eviction (clean before dirty),
// write-back ranges, pins across a reorganisation and read tickets.

#include "index/treeline/record_cache.h"

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace grove::treeline {
namespace {

RecordCache::Options Small(uint64_t capacity) {
  RecordCache::Options o;
  o.capacity_bytes = capacity;
  return o;
}

// No cap on the records a write-back is offered.
constexpr uint64_t kAll = UINT64_MAX;

// The cached value of `key`, "<miss>" or "<tombstone>".
std::string Read(RecordCache& c, Slice key) {
  std::string cell;
  switch (c.Get(key, &cell)) {
    case RecordCache::Kind::kMiss:
      return "<miss>";
    case RecordCache::Kind::kTombstone:
      return "<tombstone>";
    case RecordCache::Kind::kValue:
      return cell;
  }
  return "";
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
  EXPECT_EQ(Read(c, "a"), "v2");
  // Once it reached its page, the cell is the page's to release.
  c.WriteBackRange("a", nullptr, 0, kAll,
                   [](const std::vector<RecordCache::DirtyRecord>& d) { return d.size(); });
  EXPECT_EQ(c.dirty_entries(), 0u);
  EXPECT_FALSE(c.Write("a", std::nullopt, 3).has_value());
  EXPECT_EQ(Read(c, "a"), "<tombstone>");
  EXPECT_EQ(Read(c, "zz"), "<miss>");
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

// A checkpoint lists only the dirty cells that reference value pages, kept apart so that listing
// them does not walk (or copy) every dirty entry.
TEST(RecordCacheTest, DirtyCellsListsBlobCellsAlone) {
  RecordCache::Options o = Small(1 << 20);
  o.is_blob = [](Slice cell) { return !cell.empty() && cell[0] == 'B'; };
  RecordCache c(o);
  c.Write(K(1), std::string("B-blob-1"), 1);
  c.Write(K(2), std::string("inline"), 2);
  c.Write(K(3), std::string("B-blob-3"), 3);
  c.Write(K(3), std::string("inline again"), 4);  // no longer a blob
  c.Write(K(4), std::string("B-blob-4"), 5);
  c.Write(K(4), std::nullopt, 6);  // a tombstone has no cell
  std::vector<std::string> cells;
  c.DirtyCells(&cells);
  EXPECT_EQ(cells, std::vector<std::string>{"B-blob-1"});
  const std::string high = K(1) + '\0';
  c.WriteBackRange(K(1), &high, 0, kAll, [](const auto& d) { return d.size(); });
  cells.clear();
  c.DirtyCells(&cells);
  EXPECT_TRUE(cells.empty()) << "a blob on its page is the page's";
  EXPECT_TRUE(c.CheckConsistency().empty());
}

TEST(RecordCacheTest, EvictionTakesCleanEntriesAndNamesDirtyVictims) {
  RecordCache c(Small(40 * (RecordCache::kEntryOverhead + 16)));
  for (int i = 0; i < 20; ++i) c.AdmitClean(K(i), "clean-value", 4, 0, c.Ticket(0));
  for (int i = 20; i < 60; ++i) c.Write(K(i), std::string("dirty-value"), static_cast<Lsn>(i));
  ASSERT_GT(c.Excess(), 0u);
  // Eviction drops clean entries and names dirty ones without dropping them; nothing but clean
  // entries can go until a write-back cleans a victim.
  std::set<std::string> victims;
  for (int n = 0; n < 1000 && c.Excess() > 0; ++n) {
    std::optional<std::string> victim = c.Evict();
    if (victim) victims.insert(*victim);
    if (c.GetStats().clean_evictions == 20) break;
  }
  const RecordCache::Stats s = c.GetStats();
  EXPECT_EQ(s.clean_evictions, 20u) << "every clean entry can go";
  EXPECT_EQ(s.dirty, 40u) << "no dirty entry was dropped";
  ASSERT_FALSE(victims.empty());
  for (const std::string& v : victims) EXPECT_GE(v, K(20)) << "a clean entry named as dirty";
  // Writing the victims back cleans them; then they can go.
  while (c.Excess() > 0) {
    std::optional<std::string> victim = c.Evict();
    if (!victim) break;
    const std::string high = *victim + '\0';
    c.WriteBackRange(*victim, &high, 0, kAll,
                     [](const std::vector<RecordCache::DirtyRecord>& d) { return d.size(); });
  }
  EXPECT_EQ(c.Excess(), 0u);
  EXPECT_TRUE(c.CheckConsistency().empty());
}

// The memory split (memory_split.h) lowers and raises the capacity at run time: eviction follows a
// lower one, admissions a higher one.
TEST(RecordCacheTest, ALowerCapacityIsReachedByEvictionAndAHigherOneAdmitsMore) {
  const uint64_t per = RecordCache::kEntryOverhead + 6 + 11;  // key k00000, cell clean-value
  RecordCache c(Small(100 * per));
  for (int i = 0; i < 100; ++i) c.AdmitClean(K(i), "clean-value", 4, 0, c.Ticket(0));
  EXPECT_EQ(c.GetStats().entries, 100u);
  c.SetCapacity(40 * per);
  EXPECT_EQ(c.capacity_bytes(), 40 * per);
  EXPECT_EQ(c.Excess(), 60 * per);
  EXPECT_FALSE(c.Evict().has_value()) << "only clean entries: nothing to write back";
  EXPECT_EQ(c.Excess(), 0u);
  EXPECT_LE(c.GetStats().entries, 40u);
  c.SetCapacity(200 * per);
  for (int i = 100; i < 250; ++i) c.AdmitClean(K(i), "clean-value", 4, 0, c.Ticket(0));
  EXPECT_GE(c.GetStats().entries, 190u);
  EXPECT_LE(c.GetStats().bytes, 200 * per);
  EXPECT_TRUE(c.CheckConsistency().empty());
}

// Evicted keys are remembered for ghost_bytes of evictions: a read miss of one says so, a write of
// one is counted; keys never cached, or evicted long ago, are not.
TEST(RecordCacheTest, MissesOfKeysEvictedLatelyAreGhostHits) {
  const uint64_t per = RecordCache::kEntryOverhead + 6 + 11;
  RecordCache::Options o = Small(50 * per);
  o.ghost_bytes = 20 * per;  // the last 20 evictions
  RecordCache c(o);
  for (int i = 0; i < 100; ++i) {
    c.AdmitClean(K(i), "clean-value", 4, 0, c.Ticket(0));
    while (c.Excess() > 0 && !c.Evict().has_value()) {
    }
  }
  std::vector<int> evicted;
  for (int i = 0; i < 100; ++i) {
    if (Read(c, K(i)) == "<miss>") evicted.push_back(i);
  }
  ASSERT_GE(evicted.size(), 40u);
  int ghosts = 0;
  for (int i : evicted) {
    std::string cell;
    bool lately = false;
    ASSERT_EQ(c.Get(K(i), &cell, &lately), RecordCache::Kind::kMiss);
    ghosts += lately ? 1 : 0;
  }
  // The window covers the last 20 evictions (collisions in the ghost set may lose a few).
  EXPECT_GE(ghosts, 15);
  EXPECT_LE(ghosts, 20);
  std::string cell;
  bool lately = true;
  ASSERT_EQ(c.Get("never-cached", &cell, &lately), RecordCache::Kind::kMiss);
  EXPECT_FALSE(lately);
  bool oldest = true;
  ASSERT_EQ(c.Get(K(evicted.front()), &cell, &oldest), RecordCache::Kind::kMiss);
  EXPECT_FALSE(oldest) << "evicted more than 20 evictions ago";

  EXPECT_EQ(c.write_ghost_hits(), 0u);
  c.Write(K(evicted.back()), std::string("new"), 1);
  c.Write("never-cached", std::string("new"), 2);
  EXPECT_EQ(c.write_ghost_hits(), 1u);
}

TEST(RecordCacheTest, WriteBackRangeCleansTheAppliedPrefix) {
  RecordCache c(Small(1 << 20));
  for (int i = 0; i < 10; ++i) c.Write(K(i), std::string("v"), 5);
  const std::string high = K(8);
  size_t seen = 0;
  const size_t done = c.WriteBackRange(K(2), &high, 7, kAll, [&](const auto& d) {
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
  c.WriteBackRange(K(0), nullptr, 0, kAll, [&](const auto& d) {
    offered = d.size();
    return size_t{0};
  });
  EXPECT_EQ(offered, 1u) << "only k1's new version, which is no longer pinned";
  const std::vector<std::string> orphans = c.Unpin(pinned, /*applied=*/true);
  EXPECT_EQ(orphans, std::vector<std::string>{"old"});
  EXPECT_EQ(Read(c, K(1)), "new");
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
  EXPECT_EQ(Read(c, K(1)), "b");
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
  c.WriteBackRange(K(1), nullptr, 42, kAll, [](const auto& d) { return d.size(); });
  c.Write(K(1), std::nullopt, 4);
  c.WriteBackRange(K(1), nullptr, 42, kAll, [](const auto& d) { return d.size(); });
  c.AdmitClean(K(1), "stale", 4, 42, ticket);
  EXPECT_EQ(Read(c, K(1)), "<miss>") << "a stale read must not come back";
  c.AdmitClean(K(1), "fresh", 4, 42, c.Ticket(42));
  EXPECT_EQ(Read(c, K(1)), "fresh");
}

// A dirty entry written again many times, and a pinned one: the byte count follows the live
// entries exactly (it once grew by the old cell's size on every overwrite of a dirty entry).
TEST(RecordCacheTest, OverwritingDirtyEntriesKeepsTheByteCountExact) {
  RecordCache c(Small(1 << 30));
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 50; ++i) {
      const size_t size = 10 + static_cast<size_t>((round * 7 + i * 13) % 1000);
      c.Write(K(i), std::string(size, 'v'), static_cast<Lsn>(round * 100 + i));
    }
    if (round % 10 == 3) c.Write(K(round % 50), std::nullopt, static_cast<Lsn>(round * 100 + 99));
    if (round % 25 == 0) {
      const auto pinned = c.PinRange(K(10), nullptr, 1 << 20);
      c.Write(K(12), std::string(500, 'p'), static_cast<Lsn>(round * 100 + 98));
      c.Unpin(pinned, round % 50 == 0);
    }
    ASSERT_TRUE(c.CheckConsistency().empty()) << c.CheckConsistency()[0];
  }
  uint64_t expected = 0;
  for (const auto& [key, cell] : c.DirtySnapshot()) {
    expected += key.size() + (cell ? cell->size() : 0) + RecordCache::kEntryOverhead;
  }
  EXPECT_EQ(c.GetStats().bytes, expected);
  EXPECT_EQ(c.GetStats().entries, 50u);
}

// Only dirty entries are in the ordered index: a scan's overlay and a write-back see them alone
// (clean entries equal their pages).
TEST(RecordCacheTest, RangeHoldsDirtyEntriesOnly) {
  RecordCache c(Small(1 << 20));
  c.AdmitClean(K(1), "clean", 4, 0, c.Ticket(0));
  c.Write(K(2), std::string("dirty"), 1);
  c.Write(K(3), std::nullopt, 2);
  bool truncated = true;
  const auto r = c.Range(K(0), nullptr, 100, false, &truncated);
  EXPECT_FALSE(truncated);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].key, K(2));
  EXPECT_EQ(r[0].cell.ToString(), "dirty");
  EXPECT_EQ(r[1].key, K(3));
  EXPECT_TRUE(r[1].tombstone());
  EXPECT_EQ(Read(c, K(1)), "clean");
  EXPECT_EQ(c.NextDirtyKey(K(0)), K(2));
  EXPECT_EQ(c.NextDirtyKey(K(2) + '\0'), K(3));
  EXPECT_EQ(c.NextDirtyKey(K(3) + '\0'), std::nullopt);
}

// A write-back is offered what a page and its overflow page could take, not a range's whole
// backlog; a scan's batch takes a bounded number of records, from either end.
TEST(RecordCacheTest, WriteBacksAndScansTakeABoundedShareOfABacklog) {
  RecordCache c(Small(1 << 30));
  for (int i = 0; i < 1000; ++i) c.Write(K(i), std::string(100, 'a'), static_cast<Lsn>(i + 1));
  size_t offered = 0;
  const size_t done = c.WriteBackRange(K(0), nullptr, 0, 10 * (6 + 100 + 16), [&](const auto& d) {
    offered = d.size();
    return d.size();
  });
  EXPECT_EQ(offered, 10u);
  EXPECT_EQ(done, 10u);
  EXPECT_EQ(c.dirty_entries(), 990u);
  c.WriteBackRange(K(0), nullptr, 0, 0, [&](const auto& d) {
    offered = d.size();
    return size_t{0};
  });
  EXPECT_EQ(offered, 1u) << "always one record, so that a write-back makes progress";
  bool truncated = false;
  auto r = c.Range(K(0), nullptr, 5, false, &truncated);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(r.front().key, K(10));
  EXPECT_EQ(r.back().key, K(14));
  const std::string high = K(500);
  r = c.Range(K(0), &high, 5, true, &truncated);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(r.front().key, K(495));
  EXPECT_EQ(r.back().key, K(499));
  r = c.Range(K(990), nullptr, 50, true, &truncated);
  EXPECT_EQ(r.size(), 10u);
  EXPECT_FALSE(truncated);
}

// Cleaning finds dirty entries that went cold by moving the CLOCK hand, as eviction does; hot
// ones (recently written or read) are passed over while their priority lasts.
TEST(RecordCacheTest, ColdDirtyKeyNamesDirtyEntriesTheHandFindsAtZero) {
  RecordCache c(Small(1 << 20));
  EXPECT_EQ(c.DirtyShare(), 0.0);
  for (int i = 0; i < 50; ++i) c.AdmitClean(K(i), "clean", 4, 0, c.Ticket(0));
  for (int i = 50; i < 100; ++i) c.Write(K(i), std::string("dirty"), static_cast<Lsn>(i));
  EXPECT_DOUBLE_EQ(c.DirtyShare(), 0.5);
  EXPECT_EQ(c.ColdDirtyKey(10), std::nullopt) << "everything is still at priority 4";
  std::optional<std::string> cold = c.ColdDirtyKey(100000);
  ASSERT_TRUE(cold.has_value());
  EXPECT_GE(*cold, K(50));
  const std::string high = *cold + '\0';
  c.WriteBackRange(*cold, &high, 0, kAll, [](const auto& d) { return d.size(); });
  EXPECT_DOUBLE_EQ(c.DirtyShare(), 0.49);
  EXPECT_EQ(c.GetStats().entries, 100u) << "cleaning evicts nothing itself";
  EXPECT_TRUE(c.CheckConsistency().empty());
}

// A read miss is admitted even when every entry is dirty: the cache goes over capacity (up to
// its slack) and eviction names dirty victims for write-back.
TEST(RecordCacheTest, MissesAreAdmittedWhenOnlyDirtyEntriesCouldMakeRoom) {
  const uint64_t entry = RecordCache::kEntryOverhead + 6 + 100;
  RecordCache c(Small(1000 * entry));
  for (int i = 0; i < 1000; ++i) c.Write(K(i), std::string(100, 'd'), static_cast<Lsn>(i + 1));
  EXPECT_EQ(c.Excess(), 0u);
  for (int i = 1000; i < 1100; ++i) c.AdmitClean(K(i), std::string(100, 'c'), 4, 0, c.Ticket(0));
  EXPECT_EQ(c.GetStats().admissions, 100u);
  EXPECT_EQ(c.GetStats().admissions_dropped, 0u);
  EXPECT_EQ(Read(c, K(1050)), std::string(100, 'c'));
  EXPECT_GT(c.Excess(), 0u);
  std::optional<std::string> victim = c.Evict();
  ASSERT_TRUE(victim.has_value());
  // Far past the slack, admissions stop.
  RecordCache d(Small(10 * entry));
  for (int i = 0; i < 1000; ++i) d.Write(K(i), std::string(100, 'd'), static_cast<Lsn>(i + 1));
  d.AdmitClean(K(2000), std::string(100, 'c'), 4, 0, d.Ticket(0));
  EXPECT_EQ(d.GetStats().admissions_dropped, 1u);
  EXPECT_EQ(Read(d, K(2000)), "<miss>");
}

// Writers, readers, admissions, evictions and write-backs at once: afterwards the bookkeeping
// (bytes, the ordered and LSN indexes, tables and rings) matches the entries exactly.
TEST(RecordCacheTest, AccountingIsExactUnderConcurrentWriters) {
  RecordCache c(Small(400 * (RecordCache::kEntryOverhead + 200)));
  std::atomic<Lsn> lsn{1};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::string cell;
      for (int n = 0; n < 20000; ++n) {
        const int k = static_cast<int>(rng() % 2000);
        switch (rng() % 5) {
          case 0:
          case 1:
            c.Write(K(k), std::string(1 + rng() % 300, 'w'), lsn.fetch_add(1));
            break;
          case 2:
            c.Write(K(k), std::nullopt, lsn.fetch_add(1));
            break;
          case 3:
            if (c.Get(K(k), &cell) == RecordCache::Kind::kMiss) {
              c.AdmitClean(K(k), std::string(1 + rng() % 300, 'r'), 4, k, c.Ticket(k));
            }
            break;
          default: {
            std::optional<std::string> v = c.Evict();
            if (v) {
              const std::string high = *v + "\xff";
              c.WriteBackRange(*v, &high, k, kAll, [](const auto& d) { return d.size(); });
            }
          }
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) {
      bool truncated;
      const auto r = c.Range(K(500), nullptr, 64, false, &truncated);
      const auto p = c.PinRange(K(1000), nullptr, 4096);
      c.Unpin(p, false);
      (void)r;
    }
  });
  for (int t = 0; t < 4; ++t) threads[t].join();
  stop = true;
  threads.back().join();
  const std::vector<std::string> problems = c.CheckConsistency();
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, the first: " << problems[0];
}

TEST(KeyTableTest, FindsInsertsAndErasesThroughCollisions) {
  struct Item {
    std::string key;
  };
  struct KeyOf {
    Slice operator()(const Item* i) const { return i->key; }
  };
  KeyTable<Item, KeyOf> t;
  std::vector<std::unique_ptr<Item>> items;
  // Hashes that collide on their low bits, so probe runs form and wrap around the table.
  auto hash = [](int i) { return static_cast<uint64_t>(i % 7) | (static_cast<uint64_t>(i) << 40); };
  for (int i = 0; i < 500; ++i) {
    items.push_back(std::make_unique<Item>(Item{K(i)}));
    t.Insert(hash(i), items.back().get());
  }
  EXPECT_EQ(t.size(), 500u);
  for (int i = 0; i < 500; i += 3) ASSERT_TRUE(t.Erase(hash(i), items[i].get()));
  for (int i = 0; i < 500; ++i) {
    Item* found = t.Find(hash(i), K(i));
    if (i % 3 == 0) {
      EXPECT_EQ(found, nullptr) << i;
    } else {
      EXPECT_EQ(found, items[i].get()) << i;
    }
  }
  EXPECT_FALSE(t.Erase(hash(0), items[0].get()));
  EXPECT_EQ(t.Find(hash(1), K(2)), nullptr) << "a hash match alone is no hit";
}

}  // namespace
}  // namespace grove::treeline
