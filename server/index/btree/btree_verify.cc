// BTree::Verify: the core checks the inner levels; here every leaf, and the sibling links.

#include <fmt/format.h>

#include "index/btree/btree.h"

namespace grove {

Status BTree::Verify(IndexVerifier* v) {
  // The leaves come in key order: each one's links are checked against the one before, so the
  // walk holds two leaves' links whatever the size of the tree.
  struct Links {
    PageId id = kInvalidPageId, right = kInvalidPageId;
  } prev;
  uint64_t entries = 0, leaves = 0;
  // Each level-1 node's leaves are read ahead in one submission: the walk reads every leaf once,
  // and at one read at a time it would run at the device's queue-depth-1 rate.
  const core::BTreeCore::LeavesAhead ahead = [&](const std::vector<std::string>& payloads) {
    std::vector<PageId> ids;
    ids.reserve(payloads.size());
    for (const std::string& p : payloads) ids.push_back(DecodeFixed64(p.data()));
    pool_->LoadMany(ids, IoCause::kScan).IgnoreError();  // a bad page is reported by the visit
  };
  GROVE_RETURN_IF_ERROR(tree_->Verify(
      v,
      [&](Slice payload, const core::Fences& f) -> Status {
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
        if (leaves == 0) {
          if (n.left() != kInvalidPageId) {
            v->Problem(fmt::format("btree: the first leaf {} links left to {}", id, n.left()));
          }
        } else if (n.left() != prev.id || prev.right != id) {
          v->Problem(
              fmt::format("btree: leaf {} links right to {} and leaf {} left to {}; "
                          "they are neighbours",
                          prev.id, prev.right, id, n.left()));
        }
        prev = {id, n.right()};
        ++leaves;
        return Status::Ok();
      },
      ahead));
  if (leaves > 0 && prev.right != kInvalidPageId) {
    v->Problem(fmt::format("btree: the last leaf {} links right to {}", prev.id, prev.right));
  }
  if (entries != entries_.load()) {
    v->Problem(fmt::format("btree: {} entries found, counter says {}", entries, entries_.load()));
  }
  if (leaves != leaf_pages_.load()) {
    v->Problem(
        fmt::format("btree: {} leaves found, the counter says {}", leaves, leaf_pages_.load()));
  }
  return Status::Ok();
}

}  // namespace grove
