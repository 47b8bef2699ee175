// Regression tests for btree bugs found in review: the root absorbing a child the delete still
// held (self-deadlock), splits of near-maximal cells overflowing a page, latch order between a
// merge moving up the tree and a split next door (a forced interleaving that deadlocked), and
// structure changes failing half way (no free frame, an unreadable sibling) that left the tree
// inconsistent.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "index/btree/btree_harness.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

using core::InnerNodeView;
using core::LeafView;

std::string K(uint64_t i) { return EncodeU64Key(i); }
// Keys behind a long common prefix: separators stay long, inner nodes hold few children.
std::string LongK(uint64_t i) { return std::string(100, 'k') + EncodeU64Key(i); }
std::string Cell(uint64_t i, size_t len) {
  std::string c = fmt::format("{}:", i);
  c.resize(len, static_cast<char>('a' + i % 26));
  return c;
}

// Bulk loads `n` keys K(0..n) with 100-byte cells at fill factor 0.9 into a fresh harness.
void BulkLoad(BTreeHarness& h, uint64_t n, Model* model) {
  ASSERT_OK(h.Create());
  uint64_t i = 0;
  ASSERT_OK(h.index()->BulkLoad([&](std::string* key, std::string* cell) -> StatusOr<bool> {
    if (i == n) return false;
    *key = K(i);
    *cell = Cell(i, 100);
    if (model) (*model)[*key] = *cell;
    ++i;
    return true;
  }));
}

struct NodeInfo {
  int count = 0;
  size_t used = 0, free = 0;
  std::vector<PageId> children;   // inner nodes, in key order
  std::vector<std::string> keys;  // inner nodes: keys[0] is the first child's empty key
};
NodeInfo Inspect(BTreeHarness& h, PageId id) {
  NodeInfo info;
  auto g = h.pool()->FetchRead(id);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return info;
  if (page::Type(g->data()) == static_cast<uint16_t>(core::kInnerPage)) {
    const InnerNodeView n(g->data());
    info.count = n.count();
    info.used = n.used_bytes();
    info.free = n.free_bytes();
    for (int i = 0; i < n.count(); ++i) {
      info.keys.emplace_back(n.key(i));
      info.children.push_back(n.child(i));
    }
    return info;
  }
  const LeafView n(g->data());
  info.count = n.count();
  info.used = n.used_bytes();
  info.free = n.free_bytes();
  for (int i = 0; i < n.count(); ++i) info.keys.emplace_back(n.key(i));
  return info;
}

// --- Structure changes ----------------------------------------------------------------------

// The root's first child absorbs its right sibling, leaving the root with one child: the root takes
// that child's content. The child is the node the delete itself latched on its way down. (A root
// of level 1 keeps its single leaf: the tree is never shorter than a root above one leaf.)
TEST(BTreeRegressionTest, RootAbsorbsTheChildThatTookInItsSibling) {
  for (int height : {3, 4}) {
    SCOPED_TRACE(height);
    BTreeHarness h;
    ASSERT_OK(h.Create());
    Model model;
    uint64_t n = 0;
    while (h.index()->GetStats().height < static_cast<uint32_t>(height)) {
      h.Put(LongK(n), Cell(n, 100));
      model[LongK(n)] = Cell(n, 100);
      ++n;
    }
    // Ascending deletes: the leftmost leaf underflows and merges with its right sibling, again
    // and again, up to the root's leftmost child.
    for (uint64_t k = 0; k < n && h.index()->GetStats().height == static_cast<uint32_t>(height);
         ++k) {
      ASSERT_TRUE(h.Delete(LongK(k)));
      model.erase(LongK(k));
    }
    EXPECT_EQ(h.index()->GetStats().height, static_cast<uint32_t>(height - 1));
    ExpectClean(h, model);
  }
}

// With the largest keys and inline values the options allow (max_key_bytes + inline_value_bytes =
// 1900, cells of 1907 bytes), the byte-wise middle of a node can leave one half larger than a page.
TEST(BTreeRegressionTest, SplitOfNearMaximalCellsKeepsBothHalvesInAPage) {
  HarnessConfig config;
  config.max_key_bytes = 1024;
  config.inline_value_bytes = 876;
  BTreeHarness h(config);
  ASSERT_OK(h.Create());
  Model model;
  auto put = [&](const std::string& k, size_t cell_len) {
    const std::string c = Cell(model.size(), cell_len);
    h.Put(k, c);
    model[k] = c;
  };
  // 22 cells of 100 bytes, then one of 886 bytes: 3086 bytes, one leaf.
  for (int i = 0; i < 22; ++i) put(fmt::format("k{:02}", i), 100 - 6 - 3);
  put("k9", 877);
  ASSERT_EQ(h.index()->GetStats().height, 2u);
  ASSERT_EQ(h.index()->GetStats().leaf_pages, 1u);
  // A 1907-byte cell sorting between them: the byte-wise middle puts 4107 bytes on the left.
  put("k21" + std::string(1021, 'z'), 877);
  ExpectClean(h, model);
  for (const auto& [k, c] : model) ASSERT_EQ(h.Get(k), c);

  // And at random, near the limits.
  std::mt19937_64 rng(4);
  for (int n = 0; n < 3000; ++n) {
    std::string k = fmt::format("k{:04}", rng() % 2000);
    k.resize(4 + rng() % 1021, static_cast<char>('a' + rng() % 3));
    put(k, rng() % 2 ? 877 : rng() % 877);
    if (rng() % 4 == 0) {
      auto it = model.lower_bound(fmt::format("k{:04}", rng() % 2000));
      if (it != model.end()) {
        ASSERT_TRUE(h.Delete(it->first));
        model.erase(it);
      }
    }
  }
  ExpectClean(h, model);
}

// --- Latch order -----------------------------------------------------------------------------

// Whether a reader could take `id` shared right now (false: someone holds it exclusively).
bool Readable(BTreeHarness& h, PageId id) {
  auto g = h.pool()->TryFetchRead(id);
  return g.ok() && static_cast<bool>(*g);
}

// Waits for `done` without sleeping; a minute is far beyond any legitimate wait here and means a
// deadlock, after which the process cannot continue (threads hold latches forever).
template <typename Fn>
void AwaitOrDie(Fn done, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "FATAL: still waiting for %s after 60 s: deadlock\n", what);
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::this_thread::yield();
  }
}

// Root G has two children: S, and the last child P with three leaves. A thread T splits S's last
// leaf, whose right neighbour is P's first leaf L; a thread U deletes from L, which leaves P
// underfull, so U merges P into its left sibling S. Interleaving (forced through latches the test
// holds): T holds S and its leaf and is about to latch L; U holds G and L and latches S. Unless U
// lets go of L before it latches S (latches are taken top-down), neither can proceed.
TEST(BTreeLatchTest, MergeUpwardDoesNotHoldLeavesWhileLatchingASibling) {
  // Learn how many leaves the first level-1 node of a bulk load takes.
  size_t per_leaf = 0, first_inner_children = 0;
  {
    BTreeHarness probe;
    BulkLoad(probe, 20000, nullptr);
    const auto levels = probe.Levels();
    ASSERT_EQ(levels.size(), 3u);
    per_leaf = Inspect(probe, levels[2][0]).count;
    first_inner_children = Inspect(probe, levels[1][0]).children.size();
  }
  BTreeHarness h;
  Model model;
  BulkLoad(h, (first_inner_children + 3) * per_leaf, &model);
  const auto levels = h.Levels();
  ASSERT_EQ(levels.size(), 3u);
  ASSERT_EQ(levels[1].size(), 2u);
  const PageId g_id = levels[0][0], s_id = levels[1][0], p_id = levels[1][1];
  const NodeInfo s = Inspect(h, s_id), p = Inspect(h, p_id);
  ASSERT_EQ(p.children.size(), 3u);
  const PageId leaf_t = s.children.back(), l_id = p.children[0];
  const size_t capacity = kPageSize - core::kLeafSlotBase - SlottedPageView::kRegionHeader;
  const size_t min_fill = capacity / 4, entry = SlottedPageView::CellBytes(8, 100);
  const size_t inner_capacity = kPageSize - core::kInnerSlotBase - SlottedPageView::kRegionHeader;
  ASSERT_LT(p.used, inner_capacity / 4) << "P must be underfull";
  ASSERT_GE(s.free, SlottedPageView::CellBytes(128, 8)) << "S must be safe for an insert";

  // Thin out L until its next delete must take the pessimistic path and leaves it underfull.
  NodeInfo l = Inspect(h, l_id);
  while (l.used >= min_fill + entry) {
    ASSERT_TRUE(h.Delete(l.keys.front()));
    model.erase(l.keys.front());
    l = Inspect(h, l_id);
  }
  const std::string u_key = l.keys.back();
  ASSERT_LT(l.used - entry, min_fill);
  // T's key sorts into S's last leaf, which has no room for it.
  const NodeInfo t_leaf = Inspect(h, leaf_t);
  const std::string t_key = t_leaf.keys.front() + std::string(1, '\x01');
  const std::string t_cell = Cell(999999, 600);
  ASSERT_LT(t_leaf.free, SlottedPageView::CellBytes(t_key.size(), t_cell.size()));

  // The page T's split will allocate, made resident as a stale copy and held by the test: T's
  // NewPage waits for it to be dropped, holding S and its leaf but not yet L.
  const PageId x = *h.allocator()->Allocate(1);
  h.allocator()->Free(x, 1);
  {
    AlignedBuffer img(kPageSize);
    page::Init(img.data(), PageType::kBlob, x);
    page::Seal(img.data(), 77);
    ASSERT_OK(h.data_file()->Write(x * kPageSize, Slice(img.data(), kPageSize)));
    h.epochs()->RecordDirect(x, 1, 77);
  }
  auto stale = h.pool()->FetchRead(x);
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  for (PageId id : {g_id, s_id, p_id, leaf_t, l_id}) ASSERT_TRUE(h.pool()->FetchRead(id).ok());

  std::atomic<int> finished{0};
  Status t_status, u_status;
  std::thread t([&] {
    std::optional<std::string> old;
    t_status = h.index()->Put(TestWrite(), t_key, t_cell, &old);
    finished++;
  });
  AwaitOrDie([&] { return !Readable(h, s_id); }, "T to latch S exclusively");

  std::thread u([&] {
    std::optional<std::string> old;
    u_status = h.index()->Delete(TestWrite(), u_key, &old);
    finished++;
  });
  // U has removed its key and let go of P again: it is merging P into S, holding G.
  AwaitOrDie(
      [&] {
        if (Readable(h, g_id) || !Readable(h, p_id)) return false;
        auto lg = h.pool()->TryFetchRead(l_id);
        if (!lg.ok()) return false;
        if (!*lg) return true;  // still held by U
        bool found;
        LeafView(lg->data()).Find(u_key, &found);
        return !found;
      },
      "U to start merging P into S");

  stale->Release();  // T continues: its split latches L
  AwaitOrDie([&] { return finished.load() == 2; }, "T and U to finish");
  t.join();
  u.join();
  ASSERT_OK(t_status);
  ASSERT_OK(u_status);
  model[t_key] = t_cell;
  model.erase(u_key);
  const VerifyResult r = h.Verify();
  EXPECT_TRUE(r.problems.empty()) << r.Summary();
  EXPECT_TRUE(r.cells == Entries(model.begin(), model.end()));
}

// --- Failures in the middle of a structure change --------------------------------------------

// A tree of 1000-byte keys with 100-byte cells in a 16-frame pool: three entries per leaf, three
// separators in the (full) root, four leaves.
class BTreeFailedSplitTest : public ::testing::Test {
 protected:
  static HarnessConfig Config() {
    HarnessConfig c;
    c.frames = 16;
    c.max_key_bytes = 1024;
    c.inline_value_bytes = 876;
    c.params = {{"fill_factor", "1.0"}};
    return c;
  }
  static std::string BigKey(uint64_t i) { return std::string(990, 'p') + fmt::format("{:010}", i); }

  void SetUp() override {
    ASSERT_OK(h_.Create());
    uint64_t i = 0;
    ASSERT_OK(h_.index()->BulkLoad([&](std::string* key, std::string* cell) -> StatusOr<bool> {
      if (i == 12) return false;
      *key = BigKey(i * 10);
      *cell = Cell(i, 100);
      model_[*key] = *cell;
      ++i;
      return true;
    }));
    const auto levels = h_.Levels();
    ASSERT_EQ(levels.size(), 2u);
    ASSERT_EQ(levels[1].size(), 4u);
    leaves_ = levels[1];
    ASSERT_OK(h_.Checkpoint());
    h_.DropCleanPages();
    pages_before_ = h_.AllocatedPages();
  }

  // Makes `resident` resident and fills every other frame but `spare` with dirty pages.
  void Squeeze(const std::vector<PageId>& resident, size_t spare) {
    for (PageId id : resident) ASSERT_TRUE(h_.pool()->FetchRead(id).ok());
    const size_t n = h_.pool()->capacity_pages() - h_.pool()->GetStats().resident_pages - spare;
    for (size_t i = 0; i < n; ++i) {
      fillers_.push_back(*h_.allocator()->Allocate(1));
      ASSERT_TRUE(h_.pool()->NewPage(fillers_.back(), PageType::kBlob).ok());
    }
  }
  void Release() {
    for (PageId id : fillers_) {
      h_.pool()->Discard(id);
      h_.allocator()->Free(id, 1);
    }
    fillers_.clear();
  }
  void ExpectUnchanged() {
    Release();  // the lookups below need frames
    for (const auto& [k, c] : model_) {
      auto got = h_.Get(k);
      ASSERT_TRUE(got.has_value()) << "key " << k.substr(990) << " lost";
      EXPECT_EQ(*got, c) << k.substr(990);
    }
    const VerifyResult r = h_.Verify();
    EXPECT_TRUE(r.problems.empty()) << r.Summary();
    EXPECT_EQ(h_.AllocatedPages(), pages_before_) << "pages taken by the failed split leaked";
    EXPECT_EQ(r.cells.size(), model_.size());
  }
  void ExpectPutWorksNow(const std::string& key, const std::string& cell) {
    h_.Put(key, cell);
    model_[key] = cell;
    ExpectClean(h_, model_);
  }

  BTreeHarness h_{Config()};
  Model model_;
  std::vector<PageId> leaves_;
  std::vector<PageId> fillers_;
  uint64_t pages_before_ = 0;
};

TEST_F(BTreeFailedSplitTest, NoFrameForTheRightSiblingOfASplitLeaf) {
  // Root and leaf 1 resident, one free frame: the split's new leaf takes it, and the old right
  // sibling (leaf 2) cannot be read.
  Squeeze({h_.btree()->root(), leaves_[1]}, 1);
  std::optional<std::string> old;
  Status s = h_.index()->Put(TestWrite(), BigKey(35), Cell(35, 100), &old);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  ExpectUnchanged();
  ExpectPutWorksNow(BigKey(35), Cell(35, 100));
}

TEST_F(BTreeFailedSplitTest, NoFrameToGrowTheRoot) {
  // Leaf 2 resident too: the leaf split succeeds, growing the (full) root does not.
  Squeeze({h_.btree()->root(), leaves_[1], leaves_[2]}, 1);
  std::optional<std::string> old;
  Status s = h_.index()->Put(TestWrite(), BigKey(35), Cell(35, 100), &old);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  ExpectUnchanged();
  ExpectPutWorksNow(BigKey(35), Cell(35, 100));
}

TEST_F(BTreeFailedSplitTest, ReplacementThatNeedsASplitKeepsTheOldCell) {
  Squeeze({h_.btree()->root(), leaves_[1], leaves_[2]}, 1);
  std::optional<std::string> old;
  Status s = h_.index()->Put(TestWrite(), BigKey(40), Cell(4, 877), &old);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  ExpectUnchanged();
  ExpectPutWorksNow(BigKey(40), Cell(4, 877));
}

// A leaf merge must have the leaf after the pair latched before it moves anything: if that leaf
// cannot be read, the keys of the right node must stay where lookups find them.
TEST(BTreeFailedMergeTest, UnreadableNextLeafLeavesThePairAsItWas) {
  BTreeHarness h;
  Model model;
  BulkLoad(h, 31 * 5, &model);
  const auto levels = h.Levels();
  ASSERT_EQ(levels.size(), 2u);
  ASSERT_GE(levels[1].size(), 4u);
  const PageId a = levels[1][0], b = levels[1][1], c = levels[1][2];
  const size_t capacity = kPageSize - core::kLeafSlotBase - SlottedPageView::kRegionHeader;
  const size_t min_fill = capacity / 4, entry = SlottedPageView::CellBytes(8, 100);
  // B shrinks so that A and B fit one page; A shrinks until its next delete underflows it.
  NodeInfo bi = Inspect(h, b);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(h.Delete(bi.keys[i]));
    model.erase(bi.keys[i]);
  }
  NodeInfo ai = Inspect(h, a);
  while (ai.used >= min_fill + entry) {
    ASSERT_TRUE(h.Delete(ai.keys.front()));
    model.erase(ai.keys.front());
    ai = Inspect(h, a);
  }
  bi = Inspect(h, b);
  ASSERT_LE(bi.used, capacity - (ai.used - entry)) << "A and B must fit one page";

  ASSERT_OK(h.Checkpoint());
  h.DropCleanPages();
  AlignedBuffer zeros(kPageSize);
  ASSERT_OK(h.data_file()->Write(c * kPageSize, Slice(zeros.data(), kPageSize)));

  std::optional<std::string> old;
  Status s = h.index()->Delete(TestWrite(), ai.keys.back(), &old);
  EXPECT_TRUE(s.IsDataLoss()) << s.ToString();
  model.erase(ai.keys.back());
  // Whatever happened to the merge, every key outside the damaged leaf C is still found.
  const NodeInfo root = Inspect(h, levels[0][0]);
  for (const auto& [k, cell] : model) {
    if (k >= root.keys[2] && k < root.keys[3]) continue;  // in C (the root's third child)
    auto got = h.Get(k);
    ASSERT_TRUE(got.has_value()) << "key " << DecodeBigEndian64(k.data()) << " lost";
    EXPECT_EQ(*got, cell);
  }
}

}  // namespace
}  // namespace grove::testing
