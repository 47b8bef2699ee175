// PageTable on its own, without IO: mapping and the frame states it changes, what it counts, that
// a page whose hint bucket is full is still found through the map, and that a pin and an eviction
// never both win a frame.

#include "buffer/page_table.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace grove::buffer_internal {
namespace {

class PageTableTest : public ::testing::Test {
 protected:
  // Maps page `id` into frame `index` as a resident page, as a reserved frame would be.
  void MapResident(PageId id, uint32_t index) {
    ASSERT_TRUE(table_.Install(id, index, FrameState::kResident));
  }

  FrameArray frames_{16};
  PageTable table_{&frames_};
};

TEST_F(PageTableTest, InstalledPagesAreFoundPinnedAndCounted) {
  MapResident(100, 3);
  EXPECT_TRUE(table_.Contains(100));
  EXPECT_FALSE(table_.Contains(101));
  EXPECT_EQ(table_.resident(), 1u);
  Frame* f = table_.PinIfPresent(100);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f, &frames_[3]);
  EXPECT_EQ(f->page_id.load(), 100u);
  EXPECT_EQ(f->pins.load(), 1u);
  f->pins.fetch_sub(1);
  EXPECT_EQ(table_.PinIfPresent(101), nullptr);
}

TEST_F(PageTableTest, ASecondInstallOfOnePageLoses) {
  MapResident(7, 0);
  EXPECT_FALSE(table_.Install(7, 1, FrameState::kLoading));
  EXPECT_EQ(frames_[1].state.load(), FrameState::kFree) << "the loser's frame is untouched";
  Frame* f = table_.PinIfPresent(7);
  EXPECT_EQ(f, &frames_[0]);
  f->pins.fetch_sub(1);
}

TEST_F(PageTableTest, ALoadingPageIsFoundAndCountedOncePublished) {
  ASSERT_TRUE(table_.Install(9, 2, FrameState::kLoading));
  EXPECT_EQ(table_.resident(), 0u);
  Frame* f = table_.PinIfPresent(9);
  ASSERT_EQ(f, &frames_[2]) << "a loading page is found (its loader's latch makes others wait)";
  EXPECT_EQ(f->state.load(), FrameState::kLoading);
  table_.Publish(f);
  EXPECT_EQ(f->state.load(), FrameState::kResident);
  EXPECT_EQ(table_.resident(), 1u);
  f->pins.fetch_sub(1);
}

TEST_F(PageTableTest, InvalidateUnmapsAndReclaimWaitsForTheLastPin) {
  MapResident(5, 4);
  Frame* f = table_.PinIfPresent(5);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(table_.Invalidate(5, f));
  EXPECT_EQ(f->state.load(), FrameState::kInvalid);
  EXPECT_EQ(table_.resident(), 0u);
  EXPECT_FALSE(table_.Contains(5));
  EXPECT_EQ(table_.PinIfPresent(5), nullptr);
  EXPECT_FALSE(table_.TryReclaim(4)) << "still pinned";
  f->pins.fetch_sub(1);
  EXPECT_TRUE(table_.TryReclaim(4));
  EXPECT_EQ(f->state.load(), FrameState::kFree);
  EXPECT_EQ(f->pins.load(), 1u) << "the reclaimer's claim";
  EXPECT_FALSE(table_.TryReclaim(4)) << "only an invalid frame is reclaimed";
}

TEST_F(PageTableTest, InvalidatingAFailedLoadDoesNotCountItAsResident) {
  ASSERT_TRUE(table_.Install(6, 1, FrameState::kLoading));
  EXPECT_FALSE(table_.Invalidate(6, &frames_[1]));
  EXPECT_EQ(table_.resident(), 0u);
  EXPECT_FALSE(table_.Contains(6));
}

TEST_F(PageTableTest, OnlyAnEvictableFrameIsEvicted) {
  MapResident(1, 0);
  MapResident(2, 1);
  MapResident(3, 2);
  ASSERT_TRUE(table_.Install(4, 3, FrameState::kLoading));
  frames_[0].pins.fetch_add(1);
  frames_[1].dirty.store(true);
  frames_[2].flushing.store(true);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(table_.TryEvict(i), kInvalidPageId) << "frame " << i;
  EXPECT_EQ(table_.resident(), 3u);

  frames_[0].pins.fetch_sub(1);
  EXPECT_EQ(table_.TryEvict(0), 1u);
  EXPECT_EQ(frames_[0].state.load(), FrameState::kFree);
  EXPECT_EQ(frames_[0].pins.load(), 1u) << "the evictor's claim";
  EXPECT_FALSE(table_.Contains(1));
  EXPECT_EQ(table_.resident(), 2u);
}

TEST_F(PageTableTest, PagesBeyondTheirBucketsWaysAreFoundThroughTheMap) {
  // Ten pages whose hashes share their top bits: one hint bucket (four ways) and one shard.
  std::vector<PageId> same;
  const uint64_t top = PageTable::Hash(1) >> 52;
  for (PageId id = 1; same.size() < 10; ++id) {
    if (PageTable::Hash(id) >> 52 == top) same.push_back(id);
  }
  for (uint32_t i = 0; i < same.size(); ++i) MapResident(same[i], i);
  for (uint32_t i = 0; i < same.size(); ++i) {
    Frame* f = table_.PinIfPresent(same[i]);
    ASSERT_EQ(f, &frames_[i]) << "page " << same[i];
    f->pins.fetch_sub(1);
  }
  // Evicting some frees their ways: the pages mapped after them get hints again and are found.
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(table_.TryEvict(i), same[i]);
    frames_[i].pins.fetch_sub(1);
  }
  for (uint32_t i = 0; i < 4; ++i) MapResident(same[i] + 1'000'000, i);
  for (uint32_t i = 4; i < same.size(); ++i) {
    Frame* f = table_.PinIfPresent(same[i]);
    ASSERT_EQ(f, &frames_[i]);
    f->pins.fetch_sub(1);
  }
}

// Readers pin pages through the hints and the map while an evictor evicts frames and maps other
// pages into them: a reader that holds a pin keeps the page it asked for (the evictor never claims
// a pinned frame, and a reader never keeps a pin on a frame the evictor claimed).
TEST_F(PageTableTest, APinAndAnEvictionNeverBothWinAFrame) {
  constexpr uint32_t kPages = 8;
  constexpr uint32_t kGenerations = 4;  // frame i holds page i + 1 + kPages * g, g cycling
  for (uint32_t i = 0; i < kPages; ++i) MapResident(i + 1, i);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0}, pinned{0};
  std::vector<std::thread> readers;
  for (uint32_t t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      for (uint64_t n = t; !stop.load(); n += 7) {
        const PageId id = n % (kPages * kGenerations) + 1;
        Frame* f = table_.PinIfPresent(id);
        if (f == nullptr) continue;
        pinned.fetch_add(1);
        for (int k = 0; k < 4; ++k) {
          if (f->page_id.load() != id) wrong.fetch_add(1);
        }
        f->pins.fetch_sub(1);
      }
    });
  }
  uint64_t evicted = 0;
  std::vector<uint32_t> generation(kPages, 0);
  // At least 40,000 rounds, and on until the readers have pinned pages a thousand times (on a
  // loaded machine they may start only after the first rounds); bounded either way.
  for (uint64_t round = 0; round < 40000 || (pinned.load() < 1000 && round < 100'000'000);
       ++round) {
    const uint32_t index = round % kPages;
    const PageId held = frames_[index].page_id.load();
    if (table_.TryEvict(index) == kInvalidPageId) continue;
    ++evicted;
    EXPECT_EQ(held, index + 1 + kPages * generation[index]);
    generation[index] = (generation[index] + 1) % kGenerations;
    // The frame is reserved now (kFree, pinned by the claim), as for a miss: map the next page.
    ASSERT_TRUE(
        table_.Install(index + 1 + kPages * generation[index], index, FrameState::kResident));
    frames_[index].pins.fetch_sub(1);
  }
  stop.store(true);
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GT(evicted, 0u);
  EXPECT_GT(pinned.load(), 0u);
  EXPECT_EQ(table_.resident(), kPages);
}

}  // namespace
}  // namespace grove::buffer_internal
