// The btree variant through the Index interface, on a real data file (btree_harness.h): splits and
// merges with Verify after each phase, variable-length keys up to the limits, suffix-truncated
// separators, cursors with bounds in both directions (also while the tree changes underneath),
// bulk load at several fill factors, Verify against deliberately broken pages, metadata round
// trips, the registry's parameter checks, and concurrent writers.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "index/btree/btree_harness.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

using core::InnerNode;
using core::InnerNodeView;
using core::Leaf;
using core::LeafView;

std::string K(uint64_t i) { return EncodeU64Key(i); }

// A cell naming its key and version, `len` bytes long.
std::string Cell(uint64_t i, uint64_t version = 0, size_t len = 24) {
  std::string c = fmt::format("{}.{}:", i, version);
  while (c.size() < len) c.push_back(static_cast<char>('a' + (c.size() + i) % 26));
  c.resize(len);
  return c;
}

Entries ToEntries(const Model& m) { return Entries(m.begin(), m.end()); }

// --- Structure changes -----------------------------------------------------------------------

TEST(BTreeTest, SplitsGrowTheTreeAndKeepItValid) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  EXPECT_EQ(h.index()->GetStats().height, 2u) << "a root above one leaf";
  std::vector<uint64_t> keys(30000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i * 3;
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(1));
  Model model;
  std::vector<uint32_t> heights{2};
  for (uint64_t k : keys) {
    h.Put(K(k), Cell(k));
    model[K(k)] = Cell(k);
    const uint32_t height = h.index()->GetStats().height;
    ASSERT_GE(height, heights.back());
    if (height != heights.back()) {
      EXPECT_EQ(height, heights.back() + 1) << "the tree grows one level at a time";
      heights.push_back(height);
      ExpectClean(h, model);  // right after each root split
    }
  }
  EXPECT_GE(heights.back(), 3u) << "30000 keys need at least three levels";
  EXPECT_GT(h.index()->GetStats().extra.at("splits_total"), 100.0);
  ExpectClean(h, model);
  for (uint64_t k = 0; k < 90000; k += 7) {
    auto got = h.Get(K(k));
    ASSERT_EQ(got.has_value(), k % 3 == 0) << k;
    if (got) {
      EXPECT_EQ(*got, Cell(k));
    }
  }

  // Replacing with larger cells splits too; the replaced cell comes back.
  for (size_t i = 0; i < keys.size(); i += 3) {
    const uint64_t k = keys[i];
    std::optional<std::string> old;
    ASSERT_OK(h.index()->Put(TestWrite(), K(k), Cell(k, 1, 200), &old));
    ASSERT_TRUE(old.has_value());
    EXPECT_EQ(*old, Cell(k));
    model[K(k)] = Cell(k, 1, 200);
  }
  ExpectClean(h, model);
}

TEST(BTreeTest, DeletingEverythingShrinksToARootAboveOneLeaf) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  const PageId root = h.btree()->root();
  std::vector<uint64_t> keys(30000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i;
  std::mt19937_64 rng(2);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (uint64_t k : keys) h.Put(K(k), Cell(k, 0, 40));
  ASSERT_GE(h.index()->GetStats().height, 3u);

  std::shuffle(keys.begin(), keys.end(), rng);
  Model model;
  for (uint64_t k : keys) model[K(k)] = Cell(k, 0, 40);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(h.Delete(K(keys[i]))) << keys[i];
    model.erase(K(keys[i]));
    if (i == keys.size() / 2) ExpectClean(h, model);
  }
  EXPECT_FALSE(h.Delete(K(keys[0]))) << "deleting a missing key reports nothing";
  const IndexStats s = h.index()->GetStats();
  EXPECT_EQ(s.height, 2u);
  EXPECT_EQ(s.leaf_pages, 1u);
  EXPECT_EQ(s.inner_pages, 1u);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_GT(s.extra.at("merges_total"), 100.0);
  EXPECT_EQ(h.btree()->root(), root) << "the root keeps its page";
  EXPECT_EQ(h.AllocatedPages(), 2u) << "every other page went back to the allocator";
  ExpectClean(h, model);
  EXPECT_TRUE(h.Scan().empty());

  // And it grows again from there.
  for (uint64_t k = 0; k < 5000; ++k) {
    h.Put(K(k), Cell(k));
    model[K(k)] = Cell(k);
  }
  ExpectClean(h, model);
}

TEST(BTreeTest, VariableLengthKeysAndLargestCells) {
  BTreeHarness h;  // max_key_bytes 128, inline values up to 1024 bytes: cells up to 1025
  ASSERT_OK(h.Create());
  std::mt19937_64 rng(3);
  Model model;
  auto random_key = [&] {
    std::string k(1 + rng() % 128, '\0');
    // A small alphabet with \0 and \xff makes shared prefixes and extreme bytes common.
    for (char& c : k) c = "\x00\x01\x7f\x80\xff"[rng() % 5];
    return k;
  };
  for (int n = 0; n < 6000; ++n) {
    const std::string k = random_key();
    const size_t len = rng() % 4 == 0 ? 1025 : rng() % 300;
    const std::string c = Cell(n, 0, len);
    h.Put(k, c);
    model[k] = c;
    if (rng() % 3 == 0 && !model.empty()) {
      auto it = model.lower_bound(random_key());
      if (it == model.end()) it = model.begin();
      ASSERT_TRUE(h.Delete(it->first));
      model.erase(it);
    }
  }
  ASSERT_GE(h.index()->GetStats().height, 2u);
  ExpectClean(h, model);
  EXPECT_TRUE(h.Scan() == ToEntries(model));
  for (const auto& [k, c] : model) ASSERT_EQ(h.Get(k), c);
}

TEST(BTreeTest, SeparatorsAreSuffixTruncated) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  // 128-byte keys: a 60-byte common prefix, 8 distinguishing bytes, and a 60-byte common tail.
  const std::string prefix(60, 'p'), tail(60, 't');
  std::vector<uint64_t> ids(4000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i * 0x0101010101ull;
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(5));
  Model model;
  for (uint64_t id : ids) {
    const std::string k = prefix + K(id) + tail;
    h.Put(k, Cell(id));
    model[k] = Cell(id);
  }
  const auto levels = h.Levels();
  ASSERT_GE(levels.size(), 2u);
  size_t separators = 0;
  for (size_t l = 0; l + 1 < levels.size(); ++l) {
    for (PageId id : levels[l]) {
      auto g = h.pool()->FetchRead(id);
      ASSERT_TRUE(g.ok());
      const InnerNodeView n(g->data());
      for (int i = 1; i < n.count(); ++i, ++separators) {
        const Slice sep = n.key(i);
        // The shortest key between two neighbours: the prefix, the bytes up to the first
        // difference, and one more; never the 60-byte tail.
        EXPECT_GT(sep.size(), prefix.size()) << "page " << id;
        EXPECT_LE(sep.size(), prefix.size() + 8) << "page " << id;
        EXPECT_EQ(sep.substr(0, prefix.size()), prefix);
      }
    }
  }
  EXPECT_GT(separators, 20u);
  ExpectClean(h, model);

  // The function itself.
  EXPECT_EQ(core::ShortestSeparator("abc", "abd"), "abd");
  EXPECT_EQ(core::ShortestSeparator("abc", "abzzz"), "abz");
  EXPECT_EQ(core::ShortestSeparator("ab", "abc"), "abc");
  EXPECT_EQ(core::ShortestSeparator("a", "b123"), "b");
  EXPECT_EQ(core::ShortestSeparator(std::string("a\0", 2), "a\x01x"), std::string("a\x01"));
}

// --- Cursors ---------------------------------------------------------------------------------

Entries Expected(const Model& m, const CursorOptions& o) {
  Entries out;
  for (auto it = m.lower_bound(o.lower); it != m.end(); ++it) {
    if (o.has_upper && it->first >= o.upper) break;
    out.push_back(*it);
  }
  if (o.reverse) std::reverse(out.begin(), out.end());
  return out;
}

TEST(BTreeTest, CursorsWithBoundsInBothDirections) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  Model model;
  for (uint64_t i = 0; i < 20000; ++i) {
    h.Put(K(i * 10), Cell(i, 0, 60));
    model[K(i * 10)] = Cell(i, 0, 60);
  }
  // An empty region spanning many leaves (merged away), and scattered holes.
  for (uint64_t i = 5000; i < 9000; ++i) {
    ASSERT_TRUE(h.Delete(K(i * 10)));
    model.erase(K(i * 10));
  }
  for (uint64_t i = 12000; i < 20000; i += 3) {
    ASSERT_TRUE(h.Delete(K(i * 10)));
    model.erase(K(i * 10));
  }
  ExpectClean(h, model);

  std::mt19937_64 rng(6);
  auto bound = [&]() -> std::string {
    switch (rng() % 6) {
      case 0:
        return K(rng() % 200010);  // anywhere, mostly between keys
      case 1:
        return K((50000 + rng() % 40000) / 10 * 10);  // inside the empty region
      case 2:
        return K(rng() % 20000 * 10);  // an existing (or deleted) key
      case 3:
        return K(rng() % 20000 * 10) + std::string(1, '\0');  // just after a key
      case 4:
        return "";
      default:
        return std::string(9, '\xff');  // after every key
    }
  };
  for (int q = 0; q < 400; ++q) {
    CursorOptions o;
    o.lower = bound();
    o.has_upper = rng() % 4 != 0;
    if (o.has_upper) o.upper = bound();
    if (o.has_upper && o.upper < o.lower) std::swap(o.lower, o.upper);
    o.reverse = rng() % 2 == 0;
    const Entries want = Expected(model, o);
    const Entries got = h.Scan(o);
    ASSERT_EQ(got.size(), want.size()) << "query " << q << (o.reverse ? " reverse" : " forward");
    ASSERT_TRUE(got == want) << "query " << q;
  }
  // Ranges entirely inside the empty region, in both directions.
  for (bool reverse : {false, true}) {
    CursorOptions o{K(50001), K(89999), true, reverse};
    EXPECT_TRUE(h.Scan(o).empty());
    o = {K(49990), K(90005), true, reverse};  // one key on each side of it
    EXPECT_EQ(h.Scan(o).size(), 2u);
  }
}

// Keys present for the whole scan are seen exactly once and in order, while another thread
// splits leaves (inserting runs of large cells) and merges them away again (deleting the runs).
TEST(BTreeTest, CursorsSeeStableKeysWhileTheTreeSplitsAndMerges) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  constexpr uint64_t kStable = 6000;
  for (uint64_t i = 0; i < kStable; ++i) h.Put(K(i * 16), Cell(i));

  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 5) ADD_FAILURE() << what;
  };
  std::thread churn([&] {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 60 && failures.load() == 0; ++round) {
      const uint64_t base = rng() % (kStable - 400);
      std::optional<std::string> old;
      for (uint64_t i = base; i < base + 400; ++i) {
        for (uint64_t j = 1; j < 4; ++j) {
          if (!h.index()->Put(TestWrite(), K(i * 16 + j), Cell(i, j, 300), &old).ok()) fail("put");
        }
      }
      for (uint64_t i = base; i < base + 400; ++i) {
        for (uint64_t j = 1; j < 4; ++j) {
          if (!h.index()->Delete(TestWrite(), K(i * 16 + j), &old).ok()) fail("delete");
        }
      }
    }
    done = true;
  });
  auto scanner = [&](bool reverse) {
    int scans = 0;
    while (!done.load() || scans < 2) {
      CursorOptions o;
      o.reverse = reverse;
      auto cursor = h.index()->NewCursor(o);
      if (!cursor.ok()) return fail(cursor.status().ToString());
      uint64_t stable_seen = 0;
      std::string prev;
      bool first = true;
      for (; (*cursor)->Valid(); (*cursor)->Next()) {
        const std::string k((*cursor)->key());
        if (!first && (reverse ? !(k < prev) : !(prev < k))) {
          return fail(fmt::format("scan {}: key order broken", scans));
        }
        first = false;
        prev = k;
        const uint64_t v = DecodeBigEndian64(k.data());
        if (v % 16 == 0) {
          const uint64_t i = v / 16;
          const uint64_t want = reverse ? kStable - 1 - stable_seen : stable_seen;
          if (i != want)
            return fail(fmt::format("scan {}: stable key {} after {}", scans, i, want));
          if ((*cursor)->cell() != Cell(i)) return fail("stable key with a wrong cell");
          ++stable_seen;
        }
      }
      if (!(*cursor)->status().ok()) return fail((*cursor)->status().ToString());
      if (stable_seen != kStable) {
        return fail(fmt::format("scan {} saw {} of {} stable keys", scans, stable_seen, kStable));
      }
      ++scans;
    }
  };
  std::thread forward(scanner, false), backward(scanner, true);
  churn.join();
  forward.join();
  backward.join();
  EXPECT_EQ(failures.load(), 0);
  Model model;
  for (uint64_t i = 0; i < kStable; ++i) model[K(i * 16)] = Cell(i);
  ExpectClean(h, model);
}

// --- Bulk load -------------------------------------------------------------------------------

class BTreeBulkLoadTest : public ::testing::TestWithParam<double> {};

TEST_P(BTreeBulkLoadTest, NodesArePackedToTheFillFactor) {
  const double fill = GetParam();
  HarnessConfig config;
  config.params = {{"fill_factor", fmt::format("{}", fill)}};
  BTreeHarness h(config);
  ASSERT_OK(h.Create());
  constexpr uint64_t kKeys = 40000;
  Model model;
  uint64_t next = 0;
  ASSERT_OK(h.index()->BulkLoad([&](std::string* key, std::string* cell) -> StatusOr<bool> {
    if (next == kKeys) return false;
    *key = K(next * 4);
    *cell = Cell(next, 0, 30);
    model[*key] = *cell;
    ++next;
    return true;
  }));
  ExpectClean(h, model);  // includes the leaf links in key order

  const auto levels = h.Levels();
  const IndexStats stats = h.index()->GetStats();
  EXPECT_EQ(stats.height, levels.size());
  EXPECT_EQ(stats.leaf_pages, levels.back().size());
  ASSERT_GE(levels.size(), 3u);
  for (size_t l = 0; l < levels.size(); ++l) {
    const bool leaves = l + 1 == levels.size();
    const double capacity = kPageSize - (leaves ? core::kLeafSlotBase : core::kInnerSlotBase) -
                            SlottedPageView::kRegionHeader;
    const double target = fill * capacity;
    // The largest cell of the level: a leaf entry, or an 8-byte separator with its child id.
    const double cell =
        leaves ? SlottedPageView::CellBytes(8, 30) : SlottedPageView::CellBytes(8, 8);
    for (size_t j = 0; j + 1 < levels[l].size(); ++j) {  // the last node takes the remainder
      auto g = h.pool()->FetchRead(levels[l][j]);
      ASSERT_TRUE(g.ok());
      const double used = static_cast<double>(leaves ? LeafView(g->data()).used_bytes()
                                                     : InnerNodeView(g->data()).used_bytes());
      EXPECT_LE(used, target) << "level " << l << " node " << j;
      EXPECT_GT(used, target - cell) << "level " << l << " node " << j;
    }
  }

  // An ordinary tree afterwards: inserts between the loaded keys, deletes, and a reopen.
  std::mt19937_64 rng(8);
  for (int n = 0; n < 6000; ++n) {
    const uint64_t k = rng() % (kKeys * 4);
    if (rng() % 3 == 0) {
      EXPECT_EQ(h.Delete(K(k)), model.erase(K(k)) == 1) << k;
    } else {
      const std::string c = Cell(k, 1, 30 + rng() % 50);
      h.Put(K(k), c);
      model[K(k)] = c;
    }
  }
  ExpectClean(h, model);
  ASSERT_OK(h.Reopen());
  ExpectClean(h, model);
  EXPECT_TRUE(h.Scan() == ToEntries(model));
}

INSTANTIATE_TEST_SUITE_P(FillFactors, BTreeBulkLoadTest, ::testing::Values(0.5, 0.9, 1.0),
                         [](const ::testing::TestParamInfo<double>& info) {
                           return fmt::format("fill{}", static_cast<int>(info.param * 100));
                         });

TEST(BTreeTest, BulkLoadChecksItsInput) {
  {
    BTreeHarness h;
    ASSERT_OK(h.Create());
    int n = 0;
    Status s = h.index()->BulkLoad([&](std::string* key, std::string* cell) -> StatusOr<bool> {
      *key = K(n == 5 ? 3 : n);  // out of order
      *cell = "c";
      return ++n < 10;
    });
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
  {
    BTreeHarness h;
    ASSERT_OK(h.Create());
    h.Put(K(1), "c");
    Status s =
        h.index()->BulkLoad([](std::string*, std::string*) -> StatusOr<bool> { return false; });
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  }
  {
    // Input that fits one leaf: one leaf under the root.
    BTreeHarness h;
    ASSERT_OK(h.Create());
    int n = 0;
    ASSERT_OK(h.index()->BulkLoad([&](std::string* key, std::string* cell) -> StatusOr<bool> {
      if (n == 20) return false;
      *key = K(n);
      *cell = Cell(n++);
      return true;
    }));
    Model model;
    for (int i = 0; i < 20; ++i) model[K(i)] = Cell(i);
    EXPECT_EQ(h.index()->GetStats().height, 2u);
    EXPECT_EQ(h.index()->GetStats().leaf_pages, 1u);
    ExpectClean(h, model);
  }
}

// --- Verify ----------------------------------------------------------------------------------

// A three-level tree for the damage tests; returns its levels.
std::vector<std::vector<PageId>> BuildForDamage(BTreeHarness& h, Model* model) {
  EXPECT_TRUE(h.Create().ok());
  for (uint64_t i = 0; i < 30000; ++i) {
    h.Put(K(i), Cell(i, 0, 40));
    (*model)[K(i)] = Cell(i, 0, 40);
  }
  ExpectClean(h, *model);
  return h.Levels();
}

void ExpectProblem(BTreeHarness& h, const std::string& needle) {
  const VerifyResult r = h.Verify();
  ASSERT_FALSE(r.problems.empty()) << "Verify did not notice";
  bool found = false;
  for (const std::string& p : r.problems) found |= p.find(needle) != std::string::npos;
  EXPECT_TRUE(found) << "no problem mentions '" << needle << "': " << r.Summary();
}

TEST(BTreeTest, VerifyReportsKeysOutOfOrder) {
  BTreeHarness h;
  Model model;
  const auto levels = BuildForDamage(h, &model);
  auto g = h.pool()->FetchWrite(levels.back()[5]);
  ASSERT_TRUE(g.ok());
  char* slots = g->mutable_data() + core::kLeafSlotBase + SlottedPageView::kRegionHeader;
  std::swap_ranges(slots, slots + 2, slots + 2);  // slot 0 <-> slot 1
  g->Release();
  ExpectProblem(h, "not strictly ascending");
}

TEST(BTreeTest, VerifyReportsASeparatorThatDoesNotBoundItsChild) {
  BTreeHarness h;
  Model model;
  const auto levels = BuildForDamage(h, &model);
  const PageId parent = levels[levels.size() - 2][1];
  auto g = h.pool()->FetchWrite(parent);
  ASSERT_TRUE(g.ok());
  std::string first_key;
  {
    auto child = h.pool()->FetchRead(InnerNodeView(g->data()).child(1));
    ASSERT_TRUE(child.ok());
    first_key = std::string(LeafView(child->data()).key(0));
  }
  // Raise separator 1 just above its child's first key: still sorted, but the child now holds a
  // key below its lower fence.
  SlottedPage sp = InnerNode(g->mutable_data()).mutable_slots();
  const std::string payload(sp.Payload(1));
  sp.Remove(1);
  sp.Insert(1, first_key + std::string(1, '\0'), payload);
  g->Release();
  ExpectProblem(h, "outside the leaf's fences");
}

TEST(BTreeTest, VerifyReportsABrokenSiblingLink) {
  BTreeHarness h;
  Model model;
  const auto levels = BuildForDamage(h, &model);
  auto g = h.pool()->FetchWrite(levels.back()[2]);
  ASSERT_TRUE(g.ok());
  Leaf(g->mutable_data()).set_right(levels.back()[4]);
  g->Release();
  ExpectProblem(h, fmt::format("leaf {} links", levels.back()[2]));
}

TEST(BTreeTest, VerifyReportsAChildAtTheWrongLevelAndAnUnreadablePage) {
  BTreeHarness h;
  Model model;
  const auto levels = BuildForDamage(h, &model);
  {
    auto g = h.pool()->FetchWrite(levels.back()[7]);
    ASSERT_TRUE(g.ok());
    *reinterpret_cast<uint16_t*>(g->mutable_data() + core::kLeafLevelOffset) = 3;
  }
  ExpectProblem(h, "expected a leaf");
  // A leaf whose image on disk is damaged: reported, not a crash and not an error status.
  {
    auto g = h.pool()->FetchWrite(levels.back()[7]);
    ASSERT_TRUE(g.ok());
    *reinterpret_cast<uint16_t*>(g->mutable_data() + core::kLeafLevelOffset) = 0;
  }
  ASSERT_OK(h.Checkpoint());
  h.DropCleanPages();
  AlignedBuffer zeros(kPageSize);
  ASSERT_OK(h.data_file()->Write(levels.back()[9] * kPageSize, Slice(zeros.data(), kPageSize)));
  ExpectProblem(h, "unreadable");
}

// --- Metadata and registry -------------------------------------------------------------------

TEST(BTreeTest, MetadataRoundTripsThroughOpen) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  Model model;
  for (uint64_t i = 0; i < 20000; ++i) {
    h.Put(K(i * 7 % 20011), Cell(i));
    model[K(i * 7 % 20011)] = Cell(i);
  }
  for (uint64_t i = 0; i < 20000; i += 5) {
    h.Delete(K(i));
    model.erase(K(i));
  }
  const IndexStats before = h.index()->GetStats();
  const std::string metadata = h.index()->SerializeMetadata();
  ASSERT_OK(h.Reopen());
  const IndexStats after = h.index()->GetStats();
  EXPECT_EQ(after.height, before.height);
  EXPECT_EQ(after.entries, before.entries);
  EXPECT_EQ(after.leaf_pages, before.leaf_pages);
  EXPECT_EQ(after.inner_pages, before.inner_pages);
  EXPECT_EQ(h.index()->SerializeMetadata(), metadata);
  EXPECT_EQ(h.pool()->GetStats().resident_pages, 0u) << "reopened cold";
  ExpectClean(h, model);
  for (uint64_t i = 20000; i < 25000; ++i) {
    h.Put(K(i), Cell(i));
    model[K(i)] = Cell(i);
  }
  ExpectClean(h, model);

  // Malformed metadata is refused, not trusted.
  const IndexRegistry registry = (*IndexRegistry::Builtins());
  const VariantSpec* spec = registry.Find("btree");
  ASSERT_NE(spec, nullptr);
  const ParamMap params = *registry.Resolve("btree", {});
  for (const std::string& bad :
       {std::string(), std::string("\x05"), metadata + "x", std::string(metadata.size(), '\0')}) {
    auto opened = spec->open(h.context(), params, bad);
    ASSERT_FALSE(opened.ok());
    EXPECT_TRUE(opened.status().IsDataLoss()) << opened.status().ToString();
  }
}

TEST(BTreeTest, RegistryRejectsUnknownNamesAndBadParameters) {
  const IndexRegistry registry = (*IndexRegistry::Builtins());
  auto unknown = registry.Resolve("btreee", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("'btreee'"), std::string::npos)
      << unknown.status().ToString();
  EXPECT_NE(unknown.status().message().find("btree"), std::string::npos) << "lists what exists";

  auto param = registry.Resolve("btree", {{"fanout", "8"}});
  ASSERT_FALSE(param.ok());
  EXPECT_EQ(param.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(param.status().message().find("fanout"), std::string::npos)
      << param.status().ToString();
  EXPECT_NE(param.status().message().find("fill_factor"), std::string::npos);

  auto resolved = registry.Resolve("btree", {});
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->at("fill_factor"), "0.9");
  EXPECT_EQ(registry.LayoutString("btree", *resolved), "") << "btree has no layout parameters";

  for (const char* bad : {"0.49", "1.01", "-1", "abc", "0.9x", "", "nan"}) {
    HarnessConfig config;
    config.params = {{"fill_factor", bad}};
    BTreeHarness h(config);
    Status s = h.Create();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument)
        << "fill_factor=" << bad << ": " << s.ToString();
    EXPECT_NE(s.message().find("fill_factor"), std::string::npos) << s.ToString();
  }
  for (const char* good : {"0.5", "1", "1.0", "0.75"}) {
    HarnessConfig config;
    config.params = {{"fill_factor", good}};
    BTreeHarness h(config);
    EXPECT_OK(h.Create());
  }
}

// --- Concurrency -----------------------------------------------------------------------------

// Four writers on interleaved keys of one range (so they share leaves and split and merge each
// other's nodes), each key written by one thread only, as the engine guarantees.
TEST(BTreeTest, ConcurrentInsertsAndDeletesOnOverlappingRanges) {
  BTreeHarness h;
  ASSERT_OK(h.Create());
  constexpr int kThreads = 4;
  constexpr uint64_t kRange = 40000;
  std::vector<Model> models(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(10 + t);
      Model& m = models[t];
      std::vector<uint64_t> mine;
      for (uint64_t i = t; i < kRange; i += kThreads) mine.push_back(i);
      std::optional<std::string> old;
      auto put = [&](uint64_t k, uint64_t v) {
        const std::string c = Cell(k, v, 10 + rng() % 120);
        if (!h.index()->Put(TestWrite(), K(k), c, &old).ok()) failures++;
        m[K(k)] = c;
      };
      auto del = [&](uint64_t k) {
        if (!h.index()->Delete(TestWrite(), K(k), &old).ok()) failures++;
        if (old.has_value() != (m.erase(K(k)) == 1)) failures++;
      };
      std::shuffle(mine.begin(), mine.end(), rng);
      for (uint64_t k : mine) put(k, 0);
      // Deletes of most keys (merges everywhere), mixed with re-inserts and replacements.
      for (int round = 0; round < 3; ++round) {
        std::shuffle(mine.begin(), mine.end(), rng);
        for (size_t i = 0; i < mine.size(); ++i) {
          const int r = static_cast<int>(rng() % 10);
          if (r < 6) {
            del(mine[i]);
          } else if (r < 9) {
            put(mine[i], round + 1);
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  Model all;
  for (const Model& m : models) all.insert(m.begin(), m.end());
  ExpectClean(h, all);
  EXPECT_TRUE(h.Scan() == ToEntries(all));
}

}  // namespace
}  // namespace grove::testing
