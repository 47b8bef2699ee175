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

}  // namespace
}  // namespace grove::testing
