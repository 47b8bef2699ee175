#include "page/epoch_table.h"

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(EpochTableTest, StageCommitAndReload) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages;
  for (int i = 0; i < 5; ++i) pages.push_back(*alloc.Allocate(1));
  ASSERT_TRUE(table.Stage(pages, 3, &alloc).ok());
  const auto images = table.StagedImages(pages);
  ASSERT_EQ(images.size(), 1u);        // one map page covers the first chunk
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
  const auto& img = images[0];
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
  ASSERT_TRUE(table.Stage(pages, 1, &alloc).ok());
  table.RecordDirect(direct, 4, 2);  // after Stage, before Commit
  table.Commit(pages, 1);
  EXPECT_EQ(table.Get(direct), 2u);
  ASSERT_TRUE(table.Stage({}, 2, &alloc).ok());
  const auto second = table.StagedImages({});
  ASSERT_EQ(second.size(), 1u) << "the map page holding the direct pages is rewritten";
  table.Commit({}, 2);
  EpochTable reloaded;
  std::string manifest;
  table.Serialize(&manifest);
  Slice in(manifest);
  ASSERT_TRUE(reloaded.Deserialize(&in).ok());
  ASSERT_TRUE(reloaded.LoadMapPage(0, second[0].image.data()).ok());
  for (PageId p = direct; p < direct + 4; ++p) EXPECT_EQ(reloaded.Get(p), 2u);
  EXPECT_EQ(reloaded.Get(pages[0]), 1u);
}

TEST(EpochTableTest, StaleMapPageIsRejected) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages = {*alloc.Allocate(1)};
  ASSERT_TRUE(table.Stage(pages, 1, &alloc).ok());
  const auto first = table.StagedImages(pages);
  table.Commit(pages, 1);
  ASSERT_TRUE(table.Stage(pages, 2, &alloc).ok());
  table.Commit(pages, 2);
  std::string manifest;
  table.Serialize(&manifest);
  EpochTable reloaded;
  Slice in(manifest);
  ASSERT_TRUE(reloaded.Deserialize(&in).ok());
  EXPECT_TRUE(reloaded.LoadMapPage(0, first[0].image.data()).IsDataLoss());
}

TEST(EpochTableTest, GrowsWithTheFileAndAbortReleasesPages) {
  ExtentAllocator alloc;
  EpochTable table;
  std::vector<PageId> pages;
  for (int i = 0; i < 5; ++i) pages.push_back(*alloc.Allocate(256));  // 5 chunks
  const uint64_t free_before = alloc.free_pages();
  ASSERT_TRUE(table.Stage(pages, 1, &alloc).ok());
  EXPECT_EQ(table.StagedImages(pages).size(), table.map_page_ids().size());  // all new
  EXPECT_GE(table.map_page_ids().size() * EpochTable::kEntriesPerPage, alloc.high_water_pages());
  table.Abort(&alloc);
  EXPECT_EQ(table.map_page_ids().size(), 0u);
  EXPECT_GE(alloc.free_pages(), free_before);
  EXPECT_EQ(alloc.CheckInvariants(), "");
}

// Stage decides which map pages change; their images may be built after writers resumed, and a
// direct write recorded in between is in the image and still rewritten by the next checkpoint.
TEST(EpochTableTest, ImagesBuiltAfterStageCarryTheStagedEpochs) {
  ExtentAllocator alloc;
  EpochTable table;
  const PageId a = *alloc.Allocate(1);
  const PageId far = *alloc.Allocate(1);
  PageId b = far;
  while (b / EpochTable::kEntriesPerPage < 2) b = *alloc.Allocate(1);  // the first on map page 2
  ASSERT_EQ(far / EpochTable::kEntriesPerPage, 0u);
  ASSERT_TRUE(table.Stage({a}, 1, &alloc).ok());
  table.Commit({a}, 1);
  ASSERT_TRUE(table.Stage({b, a}, 2, &alloc).ok());  // unsorted
  EXPECT_EQ(table.map_page_epochs()[b / EpochTable::kEntriesPerPage], 2u);
  EXPECT_EQ(table.map_page_epochs()[1], 1u) << "map page 1 holds no written page";
  table.RecordDirect(far, 1, 7);  // after Stage, before the images
  const auto images = table.StagedImages({b, a});
  ASSERT_EQ(images.size(), 2u);  // map pages 0 and 2
  table.Commit({b, a}, 2);
  std::string manifest;
  table.Serialize(&manifest);
  EpochTable reloaded;
  Slice in(manifest);
  ASSERT_TRUE(reloaded.Deserialize(&in).ok());
  for (const auto& img : images) {
    ASSERT_TRUE(page::Verify(img.image.data(), img.id).ok());
    ASSERT_TRUE(reloaded.LoadMapPage(page::Aux(img.image.data()), img.image.data()).ok());
  }
  EXPECT_EQ(reloaded.Get(a), 2u);
  EXPECT_EQ(reloaded.Get(b), 2u);
  ASSERT_TRUE(table.Stage({}, 3, &alloc).ok());
  bool direct_page_rewritten = false;
  for (const auto& img : table.StagedImages({})) {
    direct_page_rewritten |= page::Aux(img.image.data()) == far / EpochTable::kEntriesPerPage;
  }
  EXPECT_TRUE(direct_page_rewritten) << "the direct write's map page stays pending";
  table.Commit({}, 3);
}

}  // namespace
}  // namespace grove
