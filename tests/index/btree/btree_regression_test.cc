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

}  // namespace
}  // namespace grove::testing
