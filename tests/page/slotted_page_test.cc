#include "page/slotted_page.h"

#include <cstring>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace grove {
namespace {

constexpr uint16_t kBase = 40;

class SlottedPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    page::Init(buf_, PageType::kBlob, 1);
    SlottedPage::Init(buf_, kBase);
  }
  SlottedPage sp() { return SlottedPage(buf_, kBase); }
  alignas(4096) char buf_[kPageSize];
};

TEST_F(SlottedPageTest, InsertKeepsOrderAndFindsKeys) {
  SlottedPage p = sp();
  for (const char* k : {"m", "c", "x", "a"}) {
    bool found;
    const int i = p.LowerBound(k, &found);
    ASSERT_FALSE(found);
    p.Insert(i, k, std::string("v") + k);
  }
  ASSERT_EQ(p.count(), 4);
  EXPECT_EQ(p.Key(0), "a");
  EXPECT_EQ(p.Key(3), "x");
  bool found;
  EXPECT_EQ(p.LowerBound("c", &found), 1);
  EXPECT_TRUE(found);
  EXPECT_EQ(p.Payload(1), "vc");
  EXPECT_EQ(p.LowerBound("d", &found), 2);
  EXPECT_FALSE(found);
  EXPECT_STREQ(p.CheckStructure(), "");
}

// Random inserts, removes and payload replacements against std::map, compaction included.
TEST_F(SlottedPageTest, RandomOpsMatchModel) {
  std::mt19937_64 rng(7);
  std::map<std::string, std::string> model;
  SlottedPage p = sp();
  for (int step = 0; step < 20000; ++step) {
    const std::string key = "k" + std::to_string(rng() % 300);
    const std::string value(rng() % 40, static_cast<char>('a' + rng() % 26));
    bool found;
    const int i = p.LowerBound(key, &found);
    const int op = static_cast<int>(rng() % 3);
    if (op == 0 && !found && p.HasRoomFor(key.size(), value.size())) {
      p.Insert(i, key, value);
      model[key] = value;
    } else if (op == 1 && found) {
      p.Remove(i);
      model.erase(key);
    } else if (op == 2 && found && p.CanReplacePayload(i, value.size())) {
      p.ReplacePayload(i, value);
      model[key] = value;
    }
    ASSERT_EQ(p.count(), model.size());
  }
  ASSERT_STREQ(p.CheckStructure(), "");
  int i = 0;
  for (const auto& [k, v] : model) {
    EXPECT_EQ(p.Key(i), k);
    EXPECT_EQ(p.Payload(i), v);
    ++i;
  }
}

TEST_F(SlottedPageTest, FillsToCapacityAndMovesTail) {
  SlottedPage p = sp();
  int n = 0;
  while (true) {
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", n);
    if (!p.HasRoomFor(8, 16)) break;
    p.Insert(n, Slice(key, 8), std::string(16, 'v'));
    ++n;
  }
  EXPECT_EQ(static_cast<size_t>(n), p.Capacity() / SlottedPageView::CellBytes(8, 16));
  EXPECT_LT(p.FreeBytes(), SlottedPageView::CellBytes(8, 16));

  alignas(4096) char other[kPageSize];
  page::Init(other, PageType::kBlob, 2);
  SlottedPage::Init(other, kBase);
  SlottedPage q(other, kBase);
  p.MoveTailTo(n / 2, &q);
  EXPECT_EQ(p.count() + q.count(), n);
  EXPECT_LT(p.Key(p.count() - 1), q.Key(0));
  EXPECT_STREQ(p.CheckStructure(), "");
  EXPECT_STREQ(q.CheckStructure(), "");
  EXPECT_EQ(p.UsedBytes() + p.FreeBytes(), p.Capacity());
}

TEST_F(SlottedPageTest, CheckStructureCatchesDisorder) {
  SlottedPage p = sp();
  p.Insert(0, "b", "1");
  p.Insert(1, "a", "2");  // violates the precondition on purpose
  EXPECT_STRNE(p.CheckStructure(), "");
  EXPECT_STREQ(p.CheckOffsets(), "") << "the order is not an offset problem";
}

TEST_F(SlottedPageTest, CheckOffsetsCatchesASlotOutsideTheCells) {
  SlottedPage p = sp();
  p.Insert(0, "a", "1");
  p.Insert(1, "b", "2");
  ASSERT_STREQ(p.CheckOffsets(), "");
  // Point the second slot past the page's end.
  char* slot = buf_ + kBase + SlottedPageView::kRegionHeader + SlottedPageView::kSlotSize;
  const uint16_t bad = kPageSize - 2;
  std::memcpy(slot, &bad, sizeof(bad));
  EXPECT_STRNE(p.CheckOffsets(), "");
  EXPECT_STRNE(p.CheckStructure(), "");
}

}  // namespace
}  // namespace grove
