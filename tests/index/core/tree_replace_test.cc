// BTreeCore::ReplaceChildren (a run of leaves turned into others at once, as TreeLine's
// reorganisation does): splits of the level-1 node and its ancestors, root growth, shrinking
// runs, and the fences every leaf ends up with.

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "index/btree/btree_harness.h"
#include "index/core/tree.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

using core::BTreeCore;
using core::Cell;
using core::Fences;

std::string Payload(uint64_t id) {
  std::string p(8, '\0');
  EncodeFixed64(p.data(), id);
  return p;
}

std::string Key(int i) {
  char b[16];
  std::snprintf(b, sizeof(b), "key%06d", i);
  return b;
}

class Collect final : public IndexVerifier {
 public:
  void ClaimPages(PageId first, uint32_t count, std::string_view) override {
    for (PageId p = first; p < first + count; ++p) EXPECT_TRUE(claimed.insert(p).second);
  }
  void OnCell(Slice, Slice) override {}
  void OnShadowedCell(Slice, Slice) override {}
  void Problem(std::string d) override { problems.push_back(std::move(d)); }
  std::set<PageId> claimed;
  std::vector<std::string> problems;
};

struct Leaf {
  uint64_t id;
  Fences fences;
};

// Every leaf in key order, with the core's Verify clean and its inner pages counted.
std::vector<Leaf> Leaves(BTreeCore& tree) {
  Collect v;
  std::vector<Leaf> out;
  EXPECT_OK(tree.Verify(&v, [&](Slice payload, const Fences& f) {
    out.push_back({DecodeFixed64(payload.data()), f});
    return Status::Ok();
  }));
  EXPECT_TRUE(v.problems.empty()) << v.problems[0];
  EXPECT_EQ(v.claimed.size(), tree.inner_pages());
  return out;
}

// Replaces up to `count` leaves from the one holding `key` (as many as its level-1 node has from
// there on) with `ids`, separated by `keys` (keys[0] unused: the first keeps the old lower
// bound), and the same in `model`.
Status Replace(BTreeCore& tree, std::map<std::string, uint64_t>* model, const std::string& key,
               int count, const std::vector<uint64_t>& ids, const std::vector<std::string>& keys) {
  std::vector<Cell> cells;
  size_t bytes = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    cells.emplace_back(i == 0 ? std::string() : keys[i], Payload(ids[i]));
    bytes += SlottedPageView::CellBytes(cells.back().first.size(), 8);
  }
  std::vector<PageWriteGuard> path;
  Fences fences;
  GROVE_RETURN_IF_ERROR(tree.LatchPathToReplace(key, cells.size(), bytes, &path, &fences));
  const core::InnerNodeView n(path.back().data());
  int first = -1;
  for (int j = 0; j < n.count(); ++j) {
    if (n.ChildFences(j, fences).Contains(key)) first = j;
  }
  EXPECT_GE(first, 0);
  count = std::min(count, n.count() - first);
  GROVE_RETURN_IF_ERROR(tree.ReplaceChildren(&path, first, count, std::move(cells)));
  auto it = std::prev(model->upper_bound(key));
  const std::string low = it->first;
  for (int i = 0; i < count; ++i) it = model->erase(it);
  (*model)[low] = ids[0];
  for (size_t i = 1; i < ids.size(); ++i) (*model)[keys[i]] = ids[i];
  return Status::Ok();
}

void ExpectModel(BTreeCore& tree, const std::map<std::string, uint64_t>& model) {
  const std::vector<Leaf> leaves = Leaves(tree);
  ASSERT_EQ(leaves.size(), model.size());
  auto it = model.begin();
  for (size_t i = 0; i < leaves.size(); ++i, ++it) {
    EXPECT_EQ(leaves[i].id, it->second) << "leaf " << i;
    if (i == 0) {
      EXPECT_FALSE(leaves[i].fences.has_low);
    } else {
      EXPECT_EQ(leaves[i].fences.low, it->first) << "leaf " << i;
    }
    auto next = std::next(it);
    if (next == model.end()) {
      EXPECT_FALSE(leaves[i].fences.has_high);
    } else {
      EXPECT_EQ(leaves[i].fences.high, next->first) << "leaf " << i;
    }
  }
}

TEST(TreeReplaceTest, GrowsSplitsAndShrinksRuns) {
  BTreeHarness h;
  core::TreeOptions o;
  o.name = "replace-test";
  o.max_key = 64;
  auto created = BTreeCore::Create(h.context(), o, Payload(1));
  ASSERT_OK(created.status());
  BTreeCore& tree = **created;
  // model: lower bound ("" for the first) -> leaf id.
  std::map<std::string, uint64_t> model = {{"", 1}};

  // The one leaf becomes 2000: the root level-1 node splits many times and the tree grows.
  std::vector<uint64_t> ids;
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    ids.push_back(1000 + i);
    keys.push_back(Key(i * 10));
  }
  ASSERT_OK(Replace(tree, &model, Key(0), 1, ids, keys));
  EXPECT_EQ(model.size(), 2000u);
  EXPECT_GE(tree.height(), 3u);
  ExpectModel(tree, model);

  // A run in the middle of some level-1 node becomes one leaf, then three runs grow again.
  ASSERT_OK(Replace(tree, &model, Key(5000), 3, {7}, {""}));
  EXPECT_LT(model.size(), 2000u);
  ExpectModel(tree, model);

  for (int round = 0; round < 3; ++round) {
    const int at = 3000 + 4000 * round;
    std::vector<uint64_t> more;
    std::vector<std::string> seps;
    for (int i = 0; i < 300; ++i) {
      more.push_back(50000 + 1000 * round + i);
      char b[32];
      std::snprintf(b, sizeof(b), "%s.%04d", Key(at).c_str(), i);
      seps.push_back(b);
    }
    ASSERT_OK(Replace(tree, &model, Key(at), 1, more, seps));
    ExpectModel(tree, model);
  }
  const uint64_t inner = tree.inner_pages();
  EXPECT_GT(inner, 10u);
}

}  // namespace
}  // namespace grove::testing
