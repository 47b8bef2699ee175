// BTree::Verify: walks every node and checks the structural invariants.

#include <fmt/format.h>

#include "index/btree/btree.h"

namespace grove {
namespace {

using btree::NodeView;

struct LeafLinks {
  PageId id, left, right;
};

}  // namespace

Status BTree::Verify(IndexVerifier* v) {
  std::vector<PageId> leaves;
  std::vector<LeafLinks> links;
  uint64_t entries = 0;
  const uint32_t height = height_.load();
  struct Walk {
    BTree* tree;
    IndexVerifier* v;
    std::vector<LeafLinks>* links;
    uint64_t* entries;
    uint64_t inner = 0;

    Status Visit(PageId id, int level, const Fences& f) {
      auto g = tree->pool_->FetchRead(id, IoCause::kScan);
      if (!g.ok()) {
        v->Problem(fmt::format("btree: page {} unreadable: {}", id, g.status().ToString()));
        return g.status().IsDataLoss() ? Status::Ok() : g.status();
      }
      const NodeView n(g->data());
      v->ClaimPages(id, 1, n.is_leaf() ? "btree leaf" : "btree inner node");
      const auto want_type = n.is_leaf() ? PageType::kBTreeLeaf : PageType::kBTreeInner;
      if (page::Type(g->data()) != static_cast<uint16_t>(want_type)) {
        v->Problem(fmt::format("btree: page {} has type {} at level {}", id, page::Type(g->data()),
                               n.level()));
      }
      if (n.level() != level) {
        v->Problem(fmt::format("btree: page {} is at level {}, expected {}", id, n.level(), level));
        return Status::Ok();
      }
      if (const char* why = n.slots().CheckStructure(); *why) {
        v->Problem(fmt::format("btree: page {}: {}", id, why));
        return Status::Ok();
      }
      for (int i = 0; i < n.count(); ++i) {
        const Slice k = n.key(i);
        if ((f.has_low && k < f.low) || (f.has_high && k >= f.high)) {
          v->Problem(
              fmt::format("btree: page {} slot {}: key outside the node's fence keys", id, i));
        }
      }
      if (n.is_leaf()) {
        for (int i = 0; i < n.count(); ++i) v->OnCell(n.key(i), n.payload(i));
        *entries += n.count();
        links->push_back({id, n.left(), n.right()});
        return Status::Ok();
      }
      ++inner;
      if (n.right() != kInvalidPageId || n.left() != kInvalidPageId) {
        v->Problem(fmt::format("btree: inner page {} has sibling links", id));
      }
      // Copy children and their fences, then release the node before descending.
      std::vector<std::pair<PageId, Fences>> children;
      for (int i = -1; i < n.count(); ++i) {
        Fences cf = f;
        if (i >= 0) {
          cf.low.assign(n.key(i));
          cf.has_low = true;
        }
        if (i + 1 < n.count()) {
          cf.high.assign(n.key(i + 1));
          cf.has_high = true;
        }
        children.emplace_back(n.child(i), std::move(cf));
      }
      g->Release();
      for (auto& [child, cf] : children) {
        if (child == kInvalidPageId) {
          v->Problem(fmt::format("btree: inner page {} has a null child", id));
          continue;
        }
        GROVE_RETURN_IF_ERROR(Visit(child, level - 1, cf));
      }
      return Status::Ok();
    }
  };
  Walk walk{this, v, &links, &entries};
  GROVE_RETURN_IF_ERROR(walk.Visit(root_, static_cast<int>(height) - 1, Fences()));

  for (size_t i = 0; i < links.size(); ++i) {
    const PageId want_left = i == 0 ? kInvalidPageId : links[i - 1].id;
    const PageId want_right = i + 1 == links.size() ? kInvalidPageId : links[i + 1].id;
    if (links[i].left != want_left || links[i].right != want_right) {
      v->Problem(fmt::format("btree: leaf {} links ({}, {}), expected ({}, {})", links[i].id,
                             links[i].left, links[i].right, want_left, want_right));
    }
  }
  if (entries != entries_.load()) {
    v->Problem(fmt::format("btree: {} entries found, counter says {}", entries, entries_.load()));
  }
  if (links.size() != leaf_pages_.load() || walk.inner != inner_pages_.load()) {
    v->Problem(fmt::format("btree: {} leaves and {} inner nodes found, counters say {} and {}",
                           links.size(), walk.inner, leaf_pages_.load(), inner_pages_.load()));
  }
  return Status::Ok();
}

}  // namespace grove
