#include "predict/phantom_map.h"

#include <random>
#include <set>

#include <gtest/gtest.h>

namespace grove::predict {
namespace {

TEST(PhantomMapTest, ContiguousLevelIsOneExtent) {
  std::vector<PageId> pages;
  for (PageId p = 100; p < 1100; ++p) pages.push_back(p);
  const PhantomMap m = PhantomMap::FromPages(pages);
  EXPECT_EQ(m.extents(), 1u);
  EXPECT_EQ(m.size(), 1000u);
  EXPECT_EQ(m.PageAt(0), 100u);
  EXPECT_EQ(m.PageAt(999), 1099u);
}

// Insert-range and collapse-range against a plain vector model.
TEST(PhantomMapTest, InsertAndRemoveMatchAVector) {
  std::mt19937_64 rng(1);
  std::vector<PageId> model;
  for (PageId p = 10; p < 510; ++p) model.push_back(p);
  PhantomMap m = PhantomMap::FromPages(model);
  std::set<PageId> used(model.begin(), model.end());
  PageId next = 10000;
  for (int step = 0; step < 3000; ++step) {
    if (model.empty() || rng() % 3 != 0) {
      const uint64_t r = rng() % (model.size() + 1);
      // Sometimes the new page is physically adjacent to its left neighbour.
      PageId page = (r > 0 && rng() % 4 == 0) ? model[r - 1] + 1 : next++;
      if (used.count(page)) page = next++;
      used.insert(page);
      m.InsertAt(r, page);
      model.insert(model.begin() + r, page);
    } else {
      const uint64_t r = rng() % model.size();
      m.RemoveAt(r);
      model.erase(model.begin() + r);
    }
    ASSERT_EQ(m.size(), model.size());
  }
  for (uint64_t r = 0; r < model.size(); ++r) ASSERT_EQ(m.PageAt(r), model[r]) << r;
  const auto index = m.RankIndex();
  for (uint64_t r = 0; r < model.size(); ++r) EXPECT_EQ(index.at(model[r]), r);
  // Extents stay maximal: two neighbours are never mergeable.
  const auto& ex = m.extent_list();
  for (size_t i = 1; i < ex.size(); ++i) {
    EXPECT_FALSE(ex[i - 1].first_page + ex[i - 1].length == ex[i].first_page)
        << "extents " << i - 1 << " and " << i << " should have been merged";
  }
}

TEST(PhantomMapTest, InsertingNextToNeighboursCoalesces) {
  PhantomMap m = PhantomMap::FromPages({1, 2, 3, 10, 11});
  EXPECT_EQ(m.extents(), 2u);
  m.InsertAt(3, 4);  // page 4 right after page 3
  EXPECT_EQ(m.extents(), 2u);
  m.RemoveAt(3);
  m.InsertAt(3, 9);  // page 9 right before page 10
  EXPECT_EQ(m.extents(), 2u);
  EXPECT_EQ(m.PageAt(3), 9u);
  EXPECT_EQ(m.PageAt(4), 10u);
}

}  // namespace
}  // namespace grove::predict
