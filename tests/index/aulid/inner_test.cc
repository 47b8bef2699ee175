// AULID's inner part (index/aulid/inner.h) on a real data file and buffer pool: bulk builds over
// key sets of different hardness, routing against a sorted reference, inserts, removals and
// repoints in both modes (AULID and LIPP-B+), Adjust rebuilds, reopening from the metadata, and
// Verify's accounting of pages and packed-array objects.

#include "index/aulid/inner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "index/aulid/aulid.h"
#include "index/aulid/inner_build.h"
#include "index/btree/btree_harness.h"
#include "index/registry.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

using aulid::Entry;
using aulid::InnerOptions;
using aulid::InnerPart;
using Reference = std::map<uint64_t, PageId>;

class Claims final : public IndexVerifier {
 public:
  void ClaimPages(PageId first, uint32_t count, std::string_view what) override {
    for (PageId p = first; p < first + count; ++p) {
      if (!pages.insert(p).second) problems.push_back(fmt::format("page {} claimed twice", p));
    }
  }
  void OnCell(Slice, Slice) override {}
  void OnShadowedCell(Slice, Slice) override {}
  void Problem(std::string d) override { problems.push_back(std::move(d)); }
  std::set<PageId> pages;
  std::vector<std::string> problems;
};

// Key sets: dense, uniform, and clustered (runs of close keys far apart, like osm's cells).
std::vector<uint64_t> Keys(const std::string& kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> s;
  if (kind == "dense") {
    for (size_t i = 0; i < n; ++i) s.insert(1000 + 7 * i);
  } else if (kind == "uniform") {
    while (s.size() < n) s.insert(rng());
  } else if (kind == "lognormal") {  // SOSD's: round(exp(N(0, 2)) * 1e9)
    std::lognormal_distribution<double> d(0, 2);
    while (s.size() < n) s.insert(static_cast<uint64_t>(std::llround(d(rng) * 1e9)));
  } else {
    uint64_t base = 0;
    while (s.size() < n) {
      if (rng() % 64 == 0) base = rng();
      s.insert(base + rng() % 4096);
    }
  }
  return {s.begin(), s.end()};
}

class InnerTest : public ::testing::Test {
 protected:
  InnerTest() : h_(Config()) { EXPECT_OK(h_.Create()); }
  static HarnessConfig Config() {
    HarnessConfig c;
    c.frames = 32768;  // 128 MiB: the largest inner part here fits
    return c;
  }

  std::unique_ptr<InnerPart> NewPart(InnerOptions o = {}) {
    return std::make_unique<InnerPart>(h_.pool(), h_.allocator(), o);
  }

  void BulkBuild(InnerPart* part, const Reference& ref) {
    std::vector<Entry> es;
    for (const auto& [k, leaf] : ref) es.push_back({k, leaf});
    aulid::ImageSink sink;
    ASSERT_OK(part->Build(es, &sink));
    ASSERT_OK(sink.Flush(h_.context().direct_writer));
  }

  // Verify finds nothing wrong, the entries are exactly `ref`, and the pages it claims are
  // allocated and not the btree's.
  void ExpectClean(const InnerPart& part, const Reference& ref) {
    Claims c;
    std::vector<Entry> seen;
    ASSERT_OK(part.Verify(&c, [&](const Entry& e, uint32_t) {
      seen.push_back(e);
      return Status::Ok();
    }));
    ASSERT_TRUE(c.problems.empty()) << c.problems.size() << " problems, first: " << c.problems[0];
    std::vector<Entry> want;
    for (const auto& [k, leaf] : ref) want.push_back({k, leaf});
    ASSERT_EQ(seen.size(), want.size());
    EXPECT_TRUE(seen == want);
    EXPECT_EQ(part.size(), ref.size());
    for (PageId p : c.pages) EXPECT_FALSE(h_.allocator()->IsFree(p)) << p;
    claimed_ = c.pages;
  }

  // Route agrees with the reference: the first entry >= key, or one below it whose successor is.
  void ExpectRoutes(const InnerPart& part, const Reference& ref,
                    const std::vector<uint64_t>& probes, double* mean_pages = nullptr) {
    uint64_t pages = 0;
    for (uint64_t k : probes) {
      aulid::RouteCost cost;
      ASSERT_OK_AND_ASSIGN(const InnerPart::Routed r, part.Route(k, IoCause::kDemand, &cost));
      pages += cost.total();
      auto want = ref.lower_bound(k);
      switch (r.kind) {
        case InnerPart::Routed::kEntry:
          ASSERT_NE(want, ref.end()) << k;
          EXPECT_EQ(r.entry.key, want->first) << k;
          EXPECT_EQ(r.entry.leaf, want->second) << k;
          break;
        case InnerPart::Routed::kPast: {
          auto it = ref.find(r.entry.key);
          ASSERT_NE(it, ref.end()) << k;
          EXPECT_LT(r.entry.key, k);
          EXPECT_EQ(std::next(it), want) << k;
          break;
        }
        case InnerPart::Routed::kTail:
          EXPECT_EQ(want, ref.end()) << k;
          break;
      }
    }
    if (mean_pages) *mean_pages = static_cast<double>(pages) / probes.size();
  }

  std::vector<uint64_t> Probes(const Reference& ref, size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> keys;
    for (const auto& [k, leaf] : ref) keys.push_back(k);
    std::vector<uint64_t> out = {0, UINT64_MAX};
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = keys[rng() % keys.size()];
      switch (rng() % 3) {
        case 0:
          out.push_back(k);
          break;
        case 1:
          out.push_back(k + 1);
          break;
        default:
          out.push_back(k - 1);
      }
    }
    return out;
  }

  BTreeHarness h_;
  std::set<PageId> claimed_;
};

Reference Ref(const std::vector<uint64_t>& keys) {
  Reference r;
  for (size_t i = 0; i < keys.size(); ++i) r[keys[i]] = 1000000 + i;
  return r;
}

TEST_F(InnerTest, BulkBuildRoutesEveryKeySet) {
  for (const char* kind : {"dense", "uniform", "clustered"}) {
    SCOPED_TRACE(kind);
    auto part = NewPart();
    const Reference ref = Ref(Keys(kind, 20000, 7));
    BulkBuild(part.get(), ref);
    ExpectClean(*part, ref);
    double mean = 0;
    ExpectRoutes(*part, ref, Probes(ref, 5000, 3), &mean);
    // One page per mixed level, plus a packed array or branch page for a conflict.
    EXPECT_LE(mean, 3.0);
    ASSERT_OK_AND_ASSIGN(const InnerPart::Shape sh, part->Measure());
    EXPECT_EQ(sh.data + sh.packed + sh.branch, ref.size());
  }
}

TEST_F(InnerTest, DenseKeysNeedOnePagePerLookup) {
  auto part = NewPart();
  const Reference ref = Ref(Keys("dense", 50000, 1));
  BulkBuild(part.get(), ref);
  double mean = 0;
  ExpectRoutes(*part, ref, Probes(ref, 5000, 2), &mean);
  EXPECT_LT(mean, 1.2);
  ASSERT_OK_AND_ASSIGN(const InnerPart::Shape sh, part->Measure());
  EXPECT_EQ(sh.mixed_nodes, 1u);
  EXPECT_DOUBLE_EQ(sh.mean_depth, 1.0);
}

TEST_F(InnerTest, RootLargerThanOneExtent) {
  // 200,000 entries: 400,000 slots at 2 per entry, about 1,800 pages of 224, so the root spans
  // 7 extents.
  auto part = NewPart();
  const Reference ref = Ref(Keys("uniform", 200000, 11));
  BulkBuild(part.get(), ref);
  EXPECT_GT(aulid::NodePages(part->root()), ExtentAllocator::kMaxExtentPages);
  ExpectClean(*part, ref);
  ExpectRoutes(*part, ref, Probes(ref, 2000, 5));
  // Reopen from the metadata.
  std::string meta;
  part->Serialize(&meta);
  auto again = NewPart();
  Slice in = meta;
  ASSERT_OK(again->Deserialize(&in));
  EXPECT_TRUE(in.empty());
  ExpectClean(*again, ref);
  ExpectRoutes(*again, ref, Probes(ref, 2000, 6));
}

// Random inserts, removals and repoints against the reference, with Verify along the way.
class InnerChangeTest : public InnerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(InnerChangeTest, MatchesReferenceUnderChanges) {
  InnerOptions o;
  o.lipp = GetParam();
  for (const char* kind : {"uniform", "clustered"}) {
    SCOPED_TRACE(kind);
    auto part = NewPart(o);
    std::vector<uint64_t> keys = Keys(kind, 12000, 21);
    std::mt19937_64 rng(5);
    std::shuffle(keys.begin(), keys.end(), rng);
    // Half bulk built, the rest inserted one by one, with removals and repoints mixed in.
    Reference ref;
    for (size_t i = 0; i < keys.size() / 2; ++i) ref[keys[i]] = 500 + i;
    BulkBuild(part.get(), ref);
    uint64_t next_leaf = 900000;
    size_t at = keys.size() / 2;
    for (int step = 0; step < 12000; ++step) {
      const int op = static_cast<int>(rng() % 10);
      aulid::LiveSink sink(h_.pool());
      if (op < 6 && at < keys.size()) {
        const Entry e{keys[at++], next_leaf++};
        ASSERT_OK_AND_ASSIGN(const uint64_t bound, part->PagesForInsert(e.key));
        InnerPart::AdjustHint hint;
        ASSERT_OK(part->Insert(e, &sink, &hint));
        ref[e.key] = e.leaf;
        EXPECT_LE(sink.dirtied(), bound) << "insert of " << e.key;
        if (hint.needed) {
          sink.Release();
          aulid::LiveSink rs(h_.pool());
          uint64_t rb = 0;
          bool rebuilt = false;
          ASSERT_OK(part->Rebuild(
              e.key, hint, &rs, [&](uint64_t pages) { return (rb = pages) > 0; }, &rebuilt));
          EXPECT_TRUE(rebuilt);
          EXPECT_LE(rs.dirtied(), rb);
        }
      } else if (!ref.empty() && op < 8) {
        auto it = ref.lower_bound(rng());
        if (it == ref.end()) it = ref.begin();
        const uint64_t k = it->first;
        ASSERT_OK_AND_ASSIGN(const uint64_t bound, part->PagesForChange(k));
        ASSERT_OK(part->Remove(k, &sink));
        EXPECT_LE(sink.dirtied(), bound);
        ref.erase(it);
        sink.Release();
        aulid::LiveSink again(h_.pool());
        EXPECT_TRUE(part->Remove(k, &again).IsNotFound());
      } else if (!ref.empty()) {
        auto it = ref.lower_bound(rng());
        if (it == ref.end()) it = ref.begin();
        it->second = next_leaf++;
        ASSERT_OK(part->Repoint(it->first, it->second, &sink));
      }
      sink.Release();
      if (step % 3000 == 2999) {
        ExpectClean(*part, ref);
        ExpectRoutes(*part, ref, Probes(ref, 500, step));
      }
    }
    ExpectClean(*part, ref);
    // Remove everything: the inner part ends empty and gives back every page.
    while (!ref.empty()) {
      aulid::LiveSink sink(h_.pool());
      ASSERT_OK(part->Remove(ref.begin()->first, &sink));
      ref.erase(ref.begin());
    }
    EXPECT_TRUE(part->empty());
    ExpectClean(*part, ref);
    EXPECT_TRUE(claimed_.empty());
    EXPECT_EQ(part->space().slab_pages(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, InnerChangeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "LippB" : "Aulid"; });

// Append-only inserts: AULID absorbs conflicts in packed arrays and branches, LIPP-B+ creates a
// node for each; both stay correct.
TEST_F(InnerTest, AppendOnlyCreatesFewerNodesThanLippB) {
  uint64_t creates[2] = {0, 0};
  for (int lipp = 0; lipp < 2; ++lipp) {
    InnerOptions o;
    o.lipp = lipp == 1;
    auto part = NewPart(o);
    Reference ref;
    for (uint64_t i = 0; i < 2000; ++i) ref[i * 100] = i + 1;
    BulkBuild(part.get(), ref);
    for (uint64_t i = 2000; i < 12000; ++i) {
      aulid::LiveSink sink(h_.pool());
      InnerPart::AdjustHint hint;
      ASSERT_OK(part->Insert(Entry{i * 100, i + 1}, &sink, &hint));
      ref[i * 100] = i + 1;
      sink.Release();
      if (hint.needed) {
        aulid::LiveSink rs(h_.pool());
        bool rebuilt = false;
        ASSERT_OK(part->Rebuild(
            i * 100, hint, &rs, [](uint64_t) { return true; }, &rebuilt));
      }
    }
    ExpectClean(*part, ref);
    ExpectRoutes(*part, ref, Probes(ref, 2000, 9));
    creates[lipp] = part->counters().creates;
  }
  EXPECT_LT(creates[0] * 10, creates[1]) << creates[0] << " vs " << creates[1];
}

// Appends marked as such: nodes on the rightmost path are built with room to the right and
// rebuilt only once they doubled, so 100K appends after 2K bulk-built entries take a handful of
// rebuilds (geometric), where unmarked appends rebuild the growing tail over and over; with a
// rebuild bound, no rebuild dirties more than it, and routing stays exact either way.
TEST_F(InnerTest, AppendsFillTailRoomAndRebuildOnlyWhenDoubled) {
  auto run = [&](bool append, uint64_t bound, uint64_t* adjusts, uint64_t* largest, double* depth) {
    InnerOptions o;
    o.max_rebuild_pages = bound;
    auto part = NewPart(o);
    Reference ref;
    for (uint64_t i = 0; i < 2000; ++i) ref[i * 100] = i + 1;
    BulkBuild(part.get(), ref);
    *largest = 0;
    for (uint64_t i = 2000; i < 100000; ++i) {
      const Entry e{i * 100 + (i % 7), i + 1};  // not quite evenly spaced
      ASSERT_OK_AND_ASSIGN(const uint64_t bound_insert, part->PagesForInsert(e.key, append));
      aulid::LiveSink sink(h_.pool());
      InnerPart::AdjustHint hint;
      ASSERT_OK(part->Insert(e, &sink, &hint, append));
      EXPECT_LE(sink.dirtied(), bound_insert) << "append of " << e.key;
      ref[e.key] = e.leaf;
      sink.Release();
      if (hint.needed) {
        EXPECT_EQ(hint.tail, append);
        aulid::LiveSink rs(h_.pool());
        uint64_t asked = 0;
        bool rebuilt = false;
        ASSERT_OK(part->Rebuild(
            e.key, hint, &rs, [&](uint64_t pages) { return (asked = pages) > 0; }, &rebuilt));
        if (rebuilt) {
          EXPECT_LE(rs.dirtied(), asked);
          *largest = std::max(*largest, rs.dirtied());
        }
      }
    }
    ExpectClean(*part, ref);
    ExpectRoutes(*part, ref, Probes(ref, 3000, 4));
    *adjusts = part->counters().adjusts;
    ASSERT_OK_AND_ASSIGN(const InnerPart::Shape shape, part->Measure());
    *depth = shape.mean_depth;
  };
  uint64_t marked = 0, unmarked = 0, bounded = 0, largest = 0;
  double depth = 0;
  run(true, 0, &marked, &largest, &depth);
  run(false, 0, &unmarked, &largest, &depth);
  EXPECT_LE(marked, 12u) << "rebuilds under marked appends";        // 8 here
  EXPECT_GT(unmarked, 2 * marked) << marked << " vs " << unmarked;  // 120
  // A bound of 200 pages: nodes past it stop being rebuilt and chain below each other, each
  // taking some thousand entries (a chain node per thousand would leave a mean depth near 25).
  run(true, 200, &bounded, &largest, &depth);
  EXPECT_LE(largest, 200u) << "a rebuild past the bound";
  EXPECT_LT(depth, 10.0);
}

TEST_F(InnerTest, PackedArraysPromoteToBranchesAndMixedNodes) {
  // Keys all sent to one slot of the root: 1,500 keys inside one gap of the bulk-built keys.
  auto part = NewPart();
  Reference ref;
  for (uint64_t i = 0; i < 100; ++i) ref[i << 40] = i + 1;
  BulkBuild(part.get(), ref);
  for (uint64_t i = 1; i <= 1500; ++i) {
    aulid::LiveSink sink(h_.pool());
    InnerPart::AdjustHint hint;
    ASSERT_OK(part->Insert(Entry{(50ull << 40) + i, 5000 + i}, &sink, &hint));
    ref[(50ull << 40) + i] = 5000 + i;
    if (i == 60 || i == 500 || i == 1500) {
      sink.Release();
      ExpectClean(*part, ref);
      ExpectRoutes(*part, ref, Probes(ref, 300, i));
    }
  }
  EXPECT_GT(part->counters().promotions, 3u);
  EXPECT_GE(part->counters().creates, 1u);  // the branch of 1,016 became a mixed node
}

// Skewed keys: the dense end of the root has a branch or child in every slot, more than a page
// of 224 slots has descriptors for. The build keeps large pages and moves the descriptors of the
// smallest groups out of line, instead of taking 32 slots per page for the whole node.
TEST_F(InnerTest, SkewedKeysKeepLargePagesAndMoveFewDescriptorsOutOfLine) {
  auto part = NewPart();
  const Reference ref = Ref(Keys("lognormal", 200000, 5));
  BulkBuild(part.get(), ref);
  ExpectClean(*part, ref);
  double mean = 0;
  ExpectRoutes(*part, ref, Probes(ref, 5000, 6), &mean);
  // One page per mixed level, a packed array or branch page, and for some an out-of-line
  // descriptor (2.28 here, 1.92 with every descriptor in its page).
  EXPECT_LE(mean, 3.0);
  ASSERT_OK_AND_ASSIGN(const InnerPart::Shape sh, part->Measure());
  EXPECT_EQ(part->root().per_page, aulid::kMaxPerPage);
  EXPECT_GT(sh.descriptors_out_of_line, 0u);
  // 1,786 slot pages here, where 32 slots per page took 12,500.
  const uint64_t at_32 = (part->root().model.slots + 31) / 32;
  EXPECT_LT(sh.slot_pages * 4, at_32);
  // Inserts and removals among the out-of-line descriptors.
  std::mt19937_64 rng(9);
  Reference changed = ref;
  const std::vector<uint64_t> more = Keys("lognormal", 3000, 10);
  for (uint64_t k : more) {
    if (changed.count(k)) continue;
    aulid::LiveSink sink(h_.pool());
    ASSERT_OK_AND_ASSIGN(const uint64_t bound, part->PagesForInsert(k));
    InnerPart::AdjustHint hint;
    ASSERT_OK(part->Insert(Entry{k, 5000 + k % 1000}, &sink, &hint));
    EXPECT_LE(sink.dirtied(), bound);
    changed[k] = 5000 + k % 1000;
  }
  std::vector<uint64_t> gone;
  for (const auto& [k, leaf] : changed) {
    if (rng() % 60 == 0) gone.push_back(k);
  }
  for (uint64_t k : gone) {
    aulid::LiveSink sink(h_.pool());
    ASSERT_OK(part->Remove(k, &sink));
    changed.erase(k);
  }
  ExpectClean(*part, changed);
  ExpectRoutes(*part, changed, Probes(changed, 3000, 8));
}

// A slot page holds the descriptors of a few BRANCH and MIXED slots (6 at 224 slots per page);
// promotions past that put theirs out of line, in slab objects, which go when the slots do.
TEST_F(InnerTest, DescriptorsBeyondAPagesRoomGoOutOfLine) {
  auto part = NewPart();
  Reference ref;
  for (uint64_t i = 0; i < 100; ++i) ref[i << 40] = i + 1;
  BulkBuild(part.get(), ref);
  ASSERT_EQ(part->root().per_page, aulid::kMaxPerPage);
  ASSERT_EQ(aulid::NodePages(part->root()), 1u) << "every slot in one page";
  // FMCD clamps the end keys together: the bulk build may already hold a packed array there.
  const uint64_t slabs_before = part->space().slab_pages();
  // Ten slots of the root get 70 entries each: ten branches in one page.
  std::vector<uint64_t> added;
  for (uint64_t g = 0; g < 10; ++g) {
    for (uint64_t j = 1; j <= 70; ++j) {
      const uint64_t k = ((g * 9 + 3) << 40) + j;
      aulid::LiveSink sink(h_.pool());
      ASSERT_OK_AND_ASSIGN(const uint64_t bound, part->PagesForInsert(k));
      InnerPart::AdjustHint hint;
      ASSERT_OK(part->Insert(Entry{k, 7000 + k % 1000}, &sink, &hint));
      EXPECT_LE(sink.dirtied(), bound);
      ref[k] = 7000 + k % 1000;
      added.push_back(k);
    }
  }
  ExpectClean(*part, ref);
  ExpectRoutes(*part, ref, Probes(ref, 1000, 3));
  ASSERT_OK_AND_ASSIGN(const InnerPart::Shape sh, part->Measure());
  EXPECT_EQ(sh.descriptors_out_of_line, 10u - aulid::LayoutFor(aulid::kMaxPerPage).descriptors);
  EXPECT_EQ(sh.branch, 10u * 71);
  // Reopened from the metadata, the same.
  std::string meta;
  part->Serialize(&meta);
  auto again = NewPart();
  Slice in = meta;
  ASSERT_OK(again->Deserialize(&in));
  ExpectRoutes(*again, ref, Probes(ref, 500, 4));
  // Back to DATA slots: every out-of-line descriptor and slab goes.
  for (uint64_t k : added) {
    aulid::LiveSink sink(h_.pool());
    ASSERT_OK(part->Remove(k, &sink));
    ref.erase(k);
  }
  ExpectClean(*part, ref);
  EXPECT_EQ(part->space().slab_pages(), slabs_before);
  ASSERT_OK_AND_ASSIGN(const InnerPart::Shape after, part->Measure());
  EXPECT_EQ(after.descriptors_out_of_line, 0u);
  EXPECT_EQ(after.branch, 0u);
}

// Databases written with 64-byte slots (metadata versions 1 and 2) are refused with a message
// that says what to do, before any page is read.
TEST_F(InnerTest, MetadataOfEarlierFormatsIsRefused) {
  for (uint32_t version : {1u, 2u}) {
    std::string meta;
    PutVarint32(&meta, version);
    meta += "the rest of an older metadata record";
    auto registry = IndexRegistry::Builtins();
    ASSERT_TRUE(registry.ok());
    ASSERT_OK_AND_ASSIGN(const ParamMap params, registry->Resolve("aulid", {}));
    auto opened = Aulid::Open(h_.context(), params, meta);
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(opened.status().message().find(fmt::format("format version {}", version)),
              std::string_view::npos)
        << opened.status().ToString();
  }
}

TEST(SlotLayoutTest, DescriptorsFitAfterTheSlots) {
  EXPECT_EQ(aulid::LayoutFor(224).descriptors, 6u);
  EXPECT_EQ(aulid::LayoutFor(192).descriptors, 15u);
  EXPECT_EQ(aulid::LayoutFor(32).descriptors, 62u);
  for (uint32_t k : aulid::kPerPageChoices) {
    const aulid::SlotLayout l = aulid::LayoutFor(k);
    EXPECT_LE(l.slots_at + aulid::kSlotBytes * k + aulid::kDescriptorBytes * l.descriptors,
              kPageSize);
    EXPECT_GE(l.slots_at, aulid::kSlotHeader + (3 * k + 7) / 8);
  }
}

}  // namespace
}  // namespace grove::testing
