#include "page/epoch_table.h"

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(EpochTableTest, StageCommitAndReload) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages;
  for (int i = 0; i < 5; ++i) pages.push_back(*alloc.Allocate(1));
  auto images = table.Stage(pages, 3, &alloc);
  ASSERT_TRUE(images.ok());
  ASSERT_EQ(images->size(), 1u);       // one map page covers the first chunk
  EXPECT_EQ(table.Get(pages[0]), 0u);  // not visible before Commit
  table.Commit(pages, 3);
  EXPECT_EQ(table.Get(pages[0]), 3u);
  EXPECT_EQ(table.Get(pages[4] + 1), 0u);

  // Reload from the manifest list and the image, as Open does.
  std::string manifest;
  table.Serialize(&manifest);
  EpochTable reloaded;
  Slice in(manifest);
  ASSERT_TRUE(reloaded.Deserialize(&in).ok());
  const auto& img = (*images)[0];
  ASSERT_TRUE(page::Verify(img.image.data(), img.id).ok());
  ASSERT_TRUE(reloaded.LoadMapPage(0, img.image.data()).ok());
  for (PageId p : pages) EXPECT_EQ(reloaded.Get(p), 3u);
}

// A page written directly while a checkpoint's map pages are staged (a variant writing a sorted
// run during the checkpoint's writes) is not in the staged image, so its map page must be
// rewritten by the next checkpoint; otherwise a reload would expect the page's old epoch.
TEST(EpochTableTest, DirectWriteDuringACheckpointReachesTheNextOne) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages = {*alloc.Allocate(1)};
  const PageId direct = *alloc.Allocate(4);
  auto first = table.Stage(pages, 1, &alloc);
  ASSERT_TRUE(first.ok());
  table.RecordDirect(direct, 4, 2);  // after Stage, before Commit
  table.Commit(pages, 1);
  EXPECT_EQ(table.Get(direct), 2u);
  auto second = table.Stage({}, 2, &alloc);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u) << "the map page holding the direct pages is rewritten";
  table.Commit({}, 2);
  EpochTable reloaded;
  std::string manifest;
  table.Serialize(&manifest);
  Slice in(manifest);
  ASSERT_TRUE(reloaded.Deserialize(&in).ok());
  ASSERT_TRUE(reloaded.LoadMapPage(0, (*second)[0].image.data()).ok());
  for (PageId p = direct; p < direct + 4; ++p) EXPECT_EQ(reloaded.Get(p), 2u);
  EXPECT_EQ(reloaded.Get(pages[0]), 1u);
}

TEST(EpochTableTest, StaleMapPageIsRejected) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages = {*alloc.Allocate(1)};
  auto first = table.Stage(pages, 1, &alloc);
  ASSERT_TRUE(first.ok());
  table.Commit(pages, 1);
  auto second = table.Stage(pages, 2, &alloc);
  ASSERT_TRUE(second.ok());
  table.Commit(pages, 2);
  std::string manifest;
  table.Serialize(&manifest);
  EpochTable reloaded;
  Slice in(manifest);
  ASSERT_TRUE(reloaded.Deserialize(&in).ok());
  EXPECT_TRUE(reloaded.LoadMapPage(0, (*first)[0].image.data()).IsDataLoss());
}

TEST(EpochTableTest, GrowsWithTheFileAndAbortReleasesPages) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages;
  for (int i = 0; i < 5; ++i) pages.push_back(*alloc.Allocate(256));  // 5 chunks
  const uint64_t free_before = alloc.free_pages();
  auto images = table.Stage(pages, 1, &alloc);
  ASSERT_TRUE(images.ok());
  EXPECT_GE(table.map_page_ids().size() * EpochTable::kEntriesPerPage, alloc.high_water_pages());
  table.Abort(&alloc);
  EXPECT_EQ(table.map_page_ids().size(), 0u);
  EXPECT_GE(alloc.free_pages(), free_before);
  EXPECT_EQ(alloc.CheckInvariants(), "");
}

}  // namespace
}  // namespace grove
