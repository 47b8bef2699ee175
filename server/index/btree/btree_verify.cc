// BTree::Verify: the core checks the inner levels; here every leaf, and the sibling links.

#include <fmt/format.h>

#include "index/btree/btree.h"

namespace grove {

Status BTree::Verify(IndexVerifier* v) {
  struct Links {
    PageId id, left, right;
  };
  std::vector<Links> links;
  uint64_t entries = 0;
  GROVE_RETURN_IF_ERROR(tree_->Verify(v, [&](Slice payload, const core::Fences& f) -> Status {
    const PageId id = DecodeFixed64(payload.data());
    auto g = pool_->FetchRead(id, IoCause::kScan);
    if (!g.ok()) {
      v->Problem(fmt::format("btree: leaf {} unreadable: {}", id, g.status().ToString()));
      return g.status().IsDataLoss() ? Status::Ok() : g.status();
    }
    v->ClaimPages(id, 1, "btree leaf");
    if (std::string why = core::CheckLeaf(g->data(), f); !why.empty()) {
      v->Problem(fmt::format("btree: leaf {}: {}", id, why));
      return Status::Ok();
    }
    const core::LeafView n(g->data());
    for (int i = 0; i < n.count(); ++i) v->OnCell(n.key(i), n.cell(i));
    entries += n.count();
    links.push_back({id, n.left(), n.right()});
    return Status::Ok();
  }));
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
  if (links.size() != leaf_pages_.load()) {
    v->Problem(fmt::format("btree: {} leaves found, the counter says {}", links.size(),
                           leaf_pages_.load()));
  }
  return Status::Ok();
}

}  // namespace grove
