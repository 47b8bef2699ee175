// AHA-tree's sorted runs on a real data file: building, point lookups (found, absent, filtered),
// reopening from the descriptor, cursors both ways against a reference, extents that respect the
// page limit, large keys and cells, and RunSpace's deferred release of extents.
#include "index/aha/run.h"

#include <map>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "index/aha/merge.h"
#include "index/aha/run_space.h"
#include "index/btree/btree_harness.h"

namespace grove::testing {
namespace {

using aha::Entry;
using SortedRun = aha::Run;
using aha::RunBuilder;
using aha::RunCursor;
using aha::RunOptions;
using Reference = std::map<std::string, Entry>;

std::string Key(uint64_t i) { return fmt::format("key{:012}", i); }

class RunTest : public ::testing::Test {
 protected:
  RunTest() { EXPECT_OK(h_.Create()); }

  // Entries for every 3rd number below 3n: some tombstones, cells of varying length.
  Reference Make(uint64_t n, size_t cell_max, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Reference ref;
    for (uint64_t i = 0; i < n; ++i) {
      Entry e;
      e.key = Key(3 * i);
      e.lsn = 1 + rng() % 1000000;
      e.tombstone = rng() % 10 == 0;
      if (!e.tombstone) e.cell = std::string(1 + rng() % cell_max, static_cast<char>('a' + i % 26));
      ref[e.key] = e;
    }
    return ref;
  }

  // Builds as many runs as the entries need, each at most `max_pages`.
  std::vector<std::shared_ptr<SortedRun>> Build(const Reference& ref, RunOptions o) {
    std::vector<std::shared_ptr<SortedRun>> runs;
    RunBuilder b(o);
    auto finish = [&] {
      auto run = b.Finish(&space_, h_.context().direct_writer);
      if (run.ok()) space_.Installed(**run);
      EXPECT_OK(run.status());
      if (run.ok()) runs.push_back(*run);
      b = RunBuilder(o);
    };
    for (const auto& [k, e] : ref) {
      if (!b.Fits(e)) finish();
      b.Add(e);
    }
    if (!b.empty()) finish();
    return runs;
  }

  static void ExpectSame(const Entry& a, const Entry& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.lsn, b.lsn);
    EXPECT_EQ(a.tombstone, b.tombstone);
    EXPECT_EQ(a.cell, b.cell);
  }

  BTreeHarness h_;
  aha::RunSpace space_{h_.pool(), h_.allocator()};
};

TEST_F(RunTest, LookupsFindEveryVersionAndFilterAbsentKeys) {
  const Reference ref = Make(40000, 40, 1);
  auto runs = Build(ref, RunOptions{});
  ASSERT_GE(runs.size(), 2u) << "40,000 entries take more than one 1 MiB run";
  h_.DropCleanPages();
  uint64_t entries = 0;
  for (const auto& r : runs) {
    EXPECT_LE(r->meta().pages, 256u);
    EXPECT_GT(r->meta().filter_pages, 0u);
    entries += r->meta().entries;
  }
  EXPECT_EQ(entries, ref.size());
  for (const auto& [k, e] : ref) {
    bool hit = false;
    for (const auto& r : runs) {
      Entry got;
      bool filtered = true;
      auto found = r->Get(h_.pool(), k, &got, &filtered);
      ASSERT_OK(found.status());
      if (*found) {
        ExpectSame(got, e);
        hit = true;
      }
      if (r->Covers(k)) {
        EXPECT_FALSE(filtered && *found);
      }
    }
    ASSERT_TRUE(hit) << k;
  }
  int filtered_count = 0, absent = 0;
  for (uint64_t i = 1; i < 120000; i += 3) {
    for (const auto& r : runs) {
      if (!r->Covers(Key(i))) continue;
      Entry got;
      bool filtered = false;
      auto found = r->Get(h_.pool(), Key(i), &got, &filtered);
      ASSERT_OK(found.status());
      EXPECT_FALSE(*found);
      ++absent;
      filtered_count += filtered;
    }
  }
  EXPECT_GT(filtered_count, absent * 95 / 100) << "the filter answers most absent keys";
}

TEST_F(RunTest, ReopensFromItsDescriptor) {
  const Reference ref = Make(3000, 100, 2);
  auto runs = Build(ref, RunOptions{});
  ASSERT_EQ(runs.size(), 1u);
  std::string encoded;
  runs[0]->meta().EncodeTo(&encoded);
  Slice in(encoded);
  aha::RunMeta meta;
  ASSERT_OK(aha::RunMeta::DecodeFrom(&in, &meta));
  EXPECT_TRUE(in.empty());
  h_.DropCleanPages();
  auto reopened = SortedRun::Open(h_.pool(), meta);
  ASSERT_OK(reopened.status());
  for (const auto& [k, e] : ref) {
    EXPECT_EQ((*reopened)->PageFor(k), runs[0]->PageFor(k));
  }
  // A damaged descriptor is refused, not trusted.
  aha::RunMeta bad = meta;
  bad.data_pages = bad.pages;
  std::string enc2;
  bad.EncodeTo(&enc2);
  Slice in2(enc2);
  EXPECT_TRUE(aha::RunMeta::DecodeFrom(&in2, &bad).IsDataLoss());
  // The index pages must be the run's: a descriptor pointing elsewhere fails its checks.
  aha::RunMeta shifted = meta;
  shifted.first += 1;
  EXPECT_FALSE(SortedRun::Open(h_.pool(), shifted).ok());
}

TEST_F(RunTest, CursorsWalkBothWaysAndSeekLikeTheReference) {
  const Reference ref = Make(8000, 60, 3);
  auto runs = Build(ref, RunOptions{.max_pages = 32});
  ASSERT_GT(runs.size(), 3u);
  EXPECT_LE(runs[0]->meta().pages, 32u);
  h_.DropCleanPages();
  // Each run alone, forward and backward.
  auto it = ref.begin();
  for (const auto& r : runs) {
    RunCursor c(h_.pool(), r, IoCause::kScan, 4);
    c.SeekToFirst();
    for (; c.Valid(); c.Next(), ++it) {
      ASSERT_NE(it, ref.end());
      ExpectSame(c.entry(), it->second);
    }
    ASSERT_OK(c.status());
    RunCursor back(h_.pool(), r, IoCause::kScan, 4);
    back.SeekToLast();
    auto rit = std::prev(it);
    uint64_t n = 0;
    for (; back.Valid(); back.Prev(), ++n) {
      ExpectSame(back.entry(), rit->second);
      if (rit != ref.begin()) --rit;
    }
    EXPECT_EQ(n, r->meta().entries);
  }
  EXPECT_EQ(it, ref.end());
  // Seeks inside one run land where std::map's bounds do.
  const auto& r = runs[1];
  std::mt19937_64 rng(4);
  for (int t = 0; t < 500; ++t) {
    const std::string probe = Key(rng() % 24000);
    RunCursor c(h_.pool(), r, IoCause::kScan, 1);
    c.Seek(probe);
    auto lb = ref.lower_bound(std::max(probe, r->meta().min_key));
    if (lb == ref.end() || lb->first > r->meta().max_key) {
      EXPECT_FALSE(c.Valid()) << probe;
    } else {
      ASSERT_TRUE(c.Valid()) << probe;
      EXPECT_EQ(c.entry().key, lb->first);
    }
    RunCursor p(h_.pool(), r, IoCause::kScan, 1);
    p.SeekForPrev(probe);
    auto ub = ref.upper_bound(std::min(probe, r->meta().max_key));
    if (probe < r->meta().min_key) {
      EXPECT_FALSE(p.Valid()) << probe;
    } else {
      ASSERT_TRUE(p.Valid()) << probe;
      EXPECT_EQ(p.entry().key, std::prev(ub)->first);
    }
  }
}

TEST_F(RunTest, LargeKeysAndCellsFitTheirPagesAndIndex) {
  Reference ref;
  for (int i = 0; i < 600; ++i) {
    Entry e;
    e.key = std::string(1000, 'k') + fmt::format("{:06}", i);
    e.lsn = i + 1;
    e.cell = std::string(1020, static_cast<char>('A' + i % 26));
    ref[e.key] = e;
  }
  auto runs = Build(ref, RunOptions{.max_pages = 64});
  uint64_t total = 0;
  for (const auto& r : runs) {
    EXPECT_LE(r->meta().pages, 64u);
    EXPECT_GE(r->meta().index_pages(), 1u);
    total += r->meta().entries;
    auto reopened = SortedRun::Open(h_.pool(), r->meta());
    ASSERT_OK(reopened.status());
  }
  EXPECT_EQ(total, ref.size());
  h_.DropCleanPages();
  for (const auto& [k, e] : ref) {
    for (const auto& r : runs) {
      if (!r->Covers(k)) continue;
      Entry got;
      bool filtered;
      auto found = r->Get(h_.pool(), k, &got, &filtered);
      ASSERT_OK(found.status());
      ASSERT_TRUE(*found);
      ExpectSame(got, e);
    }
  }
}

TEST_F(RunTest, RetiredExtentsAreFreedOnlyWhenDurableAndUnread) {
  ExtentAllocator* alloc = h_.allocator();
  aha::RunSpace& space = space_;
  auto runs = Build(Make(2000, 20, 5), RunOptions{.max_pages = 8});
  ASSERT_GE(runs.size(), 3u);
  const PageId a = runs[0]->meta().first, b = runs[1]->meta().first, c = runs[2]->meta().first;
  std::shared_ptr<const SortedRun> reader = runs[1];  // a cursor still reading it
  space.Retire(runs[0]);
  space.Retire(runs[1]);
  runs[0].reset();
  runs[1].reset();
  // Checkpoint 7 snapshots: it no longer names a and b, but its allocator state counts them.
  space.PrepareCheckpoint(7);
  std::string listed, alloc_state;
  space.Serialize(&listed);
  alloc->Serialize(&alloc_state);
  space.Retire(runs[2]);  // after the snapshot: checkpoint 7 still names c
  runs[2].reset();
  EXPECT_FALSE(alloc->IsFree(a));
  space.OnCheckpointDurable(7);
  EXPECT_TRUE(alloc->IsFree(a));
  EXPECT_FALSE(alloc->IsFree(b)) << "a reader still holds b";
  EXPECT_FALSE(alloc->IsFree(c)) << "the durable checkpoint names c";
  reader.reset();
  space.PrepareCheckpoint(8);
  space.OnCheckpointAbandoned(8);
  EXPECT_TRUE(alloc->IsFree(b)) << "the next hook frees what readers let go";
  EXPECT_FALSE(alloc->IsFree(c)) << "checkpoint 8 was abandoned";
  space.PrepareCheckpoint(8);
  space.OnCheckpointDurable(8);
  EXPECT_TRUE(alloc->IsFree(c));
  EXPECT_EQ(space.retired_runs(), 0u);
  EXPECT_EQ(alloc->recently_freed_pages(), 0u)
      << "no durable checkpoint names them: the next run may take them at once";

  // Reopening from checkpoint 7 frees what its metadata listed, and only that.
  ExtentAllocator reopened;
  ASSERT_OK(reopened.Deserialize(alloc_state));
  Slice in(listed);
  ASSERT_OK(aha::RunSpace::FreeRetiredAtOpen(&in, &reopened));
  EXPECT_TRUE(reopened.IsFree(a));
  EXPECT_TRUE(reopened.IsFree(b));
  EXPECT_FALSE(reopened.IsFree(c));
  Slice again(listed);
  EXPECT_TRUE(aha::RunSpace::FreeRetiredAtOpen(&again, &reopened).IsDataLoss())
      << "freeing twice is refused";
}

TEST_F(RunTest, OutputsInFlightAreListedUntilInstalled) {
  ExtentAllocator* alloc = h_.allocator();
  aha::RunBuilder b(RunOptions{.max_pages = 8});
  b.Add(Entry{"a", 1, false, "x"});
  auto run = b.Finish(&space_, h_.context().direct_writer);
  ASSERT_OK(run.status());
  std::string listed;
  space_.Serialize(&listed);
  EXPECT_EQ(space_.retired_runs(), 1u) << "written, not installed: a checkpoint must not leak it";
  space_.Installed(**run);
  EXPECT_EQ(space_.retired_runs(), 0u);
  const PageId first = (*run)->meta().first;
  const PageId id = *space_.Allocate(3);
  space_.Abandon(id, 3);
  EXPECT_TRUE(alloc->IsFree(id));
  EXPECT_FALSE(alloc->IsFree(first));
}

TEST_F(RunTest, MergeTakesTheNewestVersionAndListsTheShadowed) {
  // Three runs with overlapping keys: the newest LSN wins; on equal LSNs the fresher source.
  Reference r1, r2, r3;
  for (int i = 0; i < 3000; ++i) {
    const std::string k = Key(i);
    if (i % 2 == 0) r1[k] = Entry{k, 100 + static_cast<Lsn>(i), false, "new"};
    if (i % 3 == 0) r2[k] = Entry{k, 50, i % 4 == 0, i % 4 == 0 ? "" : "mid"};
    r3[k] = Entry{k, i % 5 == 0 ? 100 + static_cast<Lsn>(i) : 10, false, "old"};
  }
  auto a = Build(r1, RunOptions{});
  auto b = Build(r2, RunOptions{});
  auto c = Build(r3, RunOptions{});
  ASSERT_EQ(a.size() + b.size() + c.size(), 3u);
  for (bool reverse : {false, true}) {
    std::vector<std::unique_ptr<aha::Source>> sources;
    for (const auto* runs : {&a, &b, &c}) {
      sources.push_back(
          aha::NewRunSource(h_.pool(), (*runs)[0], "", true, reverse, IoCause::kScan, 4));
    }
    aha::MergingIterator m(std::move(sources), reverse, true);
    int n = 0;
    for (; m.Valid(); m.Next(), ++n) {
      const int i = reverse ? 2999 - n : n;
      const Entry& e = m.entry();
      ASSERT_EQ(e.key, Key(i));
      if (i % 2 == 0) {
        EXPECT_EQ(e.cell, "new") << "equal LSNs (i % 5 == 0) go to the first source";
      } else if (i % 3 == 0) {
        EXPECT_EQ(e.cell, i % 5 == 0 ? "old" : (i % 4 == 0 ? "" : "mid"));
      } else {
        EXPECT_EQ(e.cell, "old");
      }
      const size_t versions = 1 + (i % 2 == 0) + (i % 3 == 0);
      EXPECT_EQ(m.shadowed().size(), versions - 1);
    }
    ASSERT_OK(m.status());
    EXPECT_EQ(n, 3000);
  }
}

}  // namespace
}  // namespace grove::testing
