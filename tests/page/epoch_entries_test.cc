// EpochEntries: lock-free reads of a table that grows and changes under them.

#include "page/epoch_entries.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace grove {
namespace {

constexpr size_t K = EpochEntries::kChunk;

TEST(EpochEntriesTest, ReadsZeroBeyondTheCoveredRangeAndWhatWasSetWithin) {
  EpochEntries e;
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.Get(0), 0u);
  EXPECT_EQ(e.Get(1ull << 40), 0u);
  e.Grow(1);
  EXPECT_EQ(e.size(), K);
  e.Set(K - 1, 7);
  EXPECT_EQ(e.Get(K - 1), 7u);
  EXPECT_EQ(e.Get(K), 0u);
  e.Grow(10 * K + 1);  // past the directory's capacity: a new directory
  EXPECT_EQ(e.size(), 11 * K);
  EXPECT_EQ(e.Get(K - 1), 7u);  // chunks do not move
  e.Set(11 * K - 1, 9);
  EXPECT_EQ(e.Get(11 * K - 1), 9u);
  e.Grow(5);  // never shrinks
  EXPECT_EQ(e.size(), 11 * K);
  e.Reset(3 * K);
  EXPECT_EQ(e.Get(K - 1), 0u);
  EXPECT_EQ(e.Get(11 * K - 1), 0u);
  EXPECT_EQ(e.size(), 11 * K);
}

TEST(EpochEntriesTest, MemoryIsFourBytesAPageAndTheDirectories) {
  EpochEntries e;
  const size_t empty = e.MemoryBytes();
  EXPECT_LE(empty, 64u);
  e.Grow(100 * K);
  EXPECT_GE(e.MemoryBytes(), 100 * K * 4);
  EXPECT_LE(e.MemoryBytes(), 100 * K * 4 + 4 * 100 * sizeof(void*) + empty);
}

// One writer grows the table chunk by chunk and sets every new entry to its chunk number + 1;
// readers must only ever see 0 (not yet covered or not yet set) or that value.
TEST(EpochEntriesTest, ReadersSeeOnlyWrittenValuesWhileTheTableGrows) {
  EpochEntries e;
  constexpr size_t kChunks = 600;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad{0}, seen{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      uint64_t x = 88172645463325252ull + r;
      while (!done.load()) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const PageId id = x % (kChunks * K);
        const uint32_t v = e.Get(id);
        if (v != 0 && v != id / K + 1) bad.fetch_add(1);
        if (v != 0) seen.fetch_add(1);
      }
    });
  }
  for (size_t c = 0; c < kChunks; ++c) {
    e.Grow((c + 1) * K);
    for (size_t i = 0; i < K; ++i) e.Set(c * K + i, static_cast<uint32_t>(c + 1));
  }
  done.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0u);
  for (size_t c = 0; c < kChunks; ++c) EXPECT_EQ(e.Get(c * K + 3), c + 1);
}

}  // namespace
}  // namespace grove
