// AHA-tree's memtable: newest versions, cells handed back only when they lived here alone, the
// WAL bound, batched collection both ways, and a memtable merged with vector sources.
#include "index/aha/memtable.h"

#include <memory>

#include <gtest/gtest.h>

#include "index/aha/merge.h"

namespace grove::aha {
namespace {

TEST(MemTableTest, KeepsTheNewestVersionAndHandsBackReplacedValues) {
  MemTable t;
  EXPECT_EQ(t.first_lsn(), kMaxLsn);
  EXPECT_FALSE(t.Put("a", 5, false, "v1").has_value());
  EXPECT_EQ(t.Put("a", 6, false, "v2"), std::optional<std::string>("v1"));
  EXPECT_EQ(t.Put("a", 7, true, ""), std::optional<std::string>("v2"));
  Entry e;
  ASSERT_TRUE(t.Get("a", &e));
  EXPECT_TRUE(e.tombstone);
  EXPECT_EQ(e.lsn, 7u);
  EXPECT_FALSE(t.Put("a", 8, false, "v3").has_value()) << "a tombstone has no cell to release";
  EXPECT_FALSE(t.Get("b", &e));
  EXPECT_EQ(t.first_lsn(), 5u);
  EXPECT_EQ(t.entries(), 1u);
  std::vector<std::string> cells;
  t.ValueCells([](Slice) { return true; }, &cells);
  EXPECT_EQ(cells, std::vector<std::string>{"v3"});
}

TEST(MemTableTest, CollectsInBatchesBothWays) {
  auto t = std::make_shared<MemTable>();
  for (int i = 0; i < 1000; ++i) {
    char k[8];
    std::snprintf(k, sizeof(k), "k%04d", i);
    t->Put(k, i + 1, i % 7 == 0, i % 7 == 0 ? "" : "v");
  }
  for (bool reverse : {false, true}) {
    auto src = NewMemTableSource(t, "k0100", false, reverse);
    int n = 0;
    std::string prev;
    for (; src->Valid(); src->Next(), ++n) {
      const std::string& k = src->entry().key;
      if (!prev.empty()) {
        EXPECT_EQ(k < prev, reverse) << k;
      }
      prev = k;
    }
    EXPECT_EQ(n, reverse ? 101 : 900);
  }
  auto all = NewMemTableSource(t, "", true, true);
  ASSERT_TRUE(all->Valid());
  EXPECT_EQ(all->entry().key, "k0999");
}

// A scan's far bound stops the copying: the source ends at it, both ways, and batches that grow
// from a few entries to hundreds see every key once, with writes between them.
TEST(MemTableTest, SourcesStopAtTheScanBoundAndGrowTheirBatches) {
  auto t = std::make_shared<MemTable>();
  auto key = [](int i) {
    char k[8];
    std::snprintf(k, sizeof(k), "k%04d", i);
    return std::string(k);
  };
  for (int i = 0; i < 3000; i += 2) t->Put(key(i), i + 1, false, std::string(40, 'v'));
  for (bool reverse : {false, true}) {
    // Forward [k0101, k2500); reverse from k2500 down to k0101.
    auto src = reverse ? NewMemTableSource(t, key(2500), false, true, key(101), true)
                       : NewMemTableSource(t, key(101), false, false, key(2500), true);
    std::vector<std::string> seen;
    for (; src->Valid(); src->Next()) {
      seen.push_back(src->entry().key);
      // Writes between batches (odd keys, behind or ahead of the scan) break nothing.
      if (seen.size() % 100 == 0) t->Put(key(2 * static_cast<int>(seen.size()) + 1), 1, false, "w");
    }
    ASSERT_FALSE(seen.empty());
    for (size_t i = 1; i < seen.size(); ++i) {
      ASSERT_EQ(seen[i] < seen[i - 1], reverse) << seen[i];
      ASSERT_NE(seen[i], seen[i - 1]);
    }
    const std::string lo = reverse ? seen.back() : seen.front();
    const std::string hi = reverse ? seen.front() : seen.back();
    EXPECT_EQ(lo, key(102)) << "reverse: nothing below the bound";
    // Forward, nothing at or past the bound; reverse, the start is inclusive.
    EXPECT_EQ(hi, reverse ? key(2500) : key(2498));
  }
  // An empty range collects nothing.
  EXPECT_FALSE(NewMemTableSource(t, key(11), false, false, key(12), true)->Valid());
}

TEST(MemTableTest, MergeLetsTheFresherSourceWinEqualLsns) {
  auto t = std::make_shared<MemTable>();
  t->Put("b", 3, false, "replayed");
  t->Put("c", 9, true, "");
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(NewMemTableSource(t, "", true, false));
  sources.push_back(NewVectorSource(
      {Entry{"a", 1, false, "a1"}, Entry{"b", 3, false, "run"}, Entry{"c", 4, false, "c4"}}));
  MergingIterator m(std::move(sources), false, true);
  ASSERT_TRUE(m.Valid());
  EXPECT_EQ(m.entry().cell, "a1");
  m.Next();
  EXPECT_EQ(m.entry().cell, "replayed");
  ASSERT_EQ(m.shadowed().size(), 1u);
  EXPECT_EQ(m.shadowed()[0].cell, "run");
  m.Next();
  EXPECT_TRUE(m.entry().tombstone);
  m.Next();
  EXPECT_FALSE(m.Valid());
}

}  // namespace
}  // namespace grove::aha
