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

using btree::NodeView;

std::string K(uint64_t i) { return EncodeU64Key(i); }
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
  std::vector<PageId> children;  // inner nodes, leftmost first
  std::vector<std::string> keys;
};
NodeInfo Inspect(BTreeHarness& h, PageId id) {
  NodeInfo info;
  auto g = h.pool()->FetchRead(id);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return info;
  const NodeView n(g->data());
  info.count = n.count();
  info.used = n.used_bytes();
  info.free = n.free_bytes();
  for (int i = 0; i < n.count(); ++i) info.keys.emplace_back(n.key(i));
  if (!n.is_leaf()) {
    for (int i = -1; i < n.count(); ++i) info.children.push_back(n.child(i));
  }
  return info;
}

// --- Structure changes ----------------------------------------------------------------------

// The root's first child absorbs its right sibling, leaving the root with one child: the root takes
// that child's content. The child is the node the delete itself latched on its way down.
TEST(BTreeRegressionTest, RootAbsorbsTheChildThatTookInItsSibling) {
  for (int height : {2, 3}) {
    SCOPED_TRACE(height);
    BTreeHarness h;
    ASSERT_OK(h.Create());
    Model model;
    uint64_t n = 0;
    while (h.index()->GetStats().height < static_cast<uint32_t>(height)) {
      h.Put(K(n), Cell(n, 100));
      model[K(n)] = Cell(n, 100);
      ++n;
    }
    // Ascending deletes: the leftmost leaf underflows and merges with its right sibling, again
    // and again, up to the root's leftmost child.
    for (uint64_t k = 0; k < n && h.index()->GetStats().height == static_cast<uint32_t>(height);
         ++k) {
      ASSERT_TRUE(h.Delete(K(k)));
      model.erase(K(k));
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
  ASSERT_EQ(h.index()->GetStats().height, 1u);
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
  const size_t capacity = kPageSize - btree::kSlotBase - SlottedPageView::kRegionHeader;
  const size_t min_fill = capacity / 4, entry = SlottedPageView::CellBytes(8, 100);
  ASSERT_LT(p.used, min_fill) << "P must be underfull";
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
    t_status = h.index()->Put(1, t_key, t_cell, &old);
    finished++;
  });
  AwaitOrDie([&] { return !Readable(h, s_id); }, "T to latch S exclusively");

  std::thread u([&] {
    std::optional<std::string> old;
    u_status = h.index()->Delete(1, u_key, &old);
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
        NodeView(lg->data()).slots().LowerBound(u_key, &found);
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

}  // namespace
}  // namespace grove::testing
