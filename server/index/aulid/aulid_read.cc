// Aulid reads: finding a key's leaf (inner route, then the run), Get, and cursors that walk the
// leaf chain in both directions.

#include <fmt/format.h>

#include "index/aulid/aulid.h"

namespace grove {

using core::LeafView;

namespace {

Status NotALeaf(PageId id) {
  return Status::DataLoss(fmt::format("aulid: page {} in the leaf chain is not a leaf", id));
}

}  // namespace

StatusOr<PageId> Aulid::NextRunStart(PageId start, uint64_t* leaves_read) {
  PageId cur = start;
  for (;;) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(cur));
    if (leaves_read) ++*leaves_read;
    if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) return NotALeaf(cur);
    const PageId right = LeafView(g.data()).right();
    if (right == kInvalidPageId) {
      return Status::DataLoss(fmt::format("aulid: the run of leaf {} has no successor", start));
    }
    if ((LeafView(g.data()).flags() & kRunContinues) == 0) return right;
    cur = right;
  }
}

StatusOr<Aulid::Target> Aulid::Locate(Slice key, bool exact, aulid::RouteCost* cost,
                                      uint64_t* leaves_read, PageReadGuard* leaf) {
  Target t;
  const uint64_t p = Proj(key);
  if (inner_.empty() || p > last_entry_) {
    t.run_start = tail_;  // the metanode's fast path to the last run
  } else {
    GROVE_ASSIGN_OR_RETURN(const aulid::InnerPart::Routed r,
                           inner_.Route(p, IoCause::kDemand, cost, exact));
    switch (r.kind) {
      case aulid::InnerPart::Routed::kEntry:
        t.run_start = r.entry.leaf;
        t.run_key = r.entry.key;
        break;
      case aulid::InnerPart::Routed::kPast: {
        // The run after the predecessor's: one hop along the chain (more when its run is long).
        GROVE_ASSIGN_OR_RETURN(t.run_start, NextRunStart(r.entry.leaf, leaves_read));
        break;
      }
      case aulid::InnerPart::Routed::kTail:
        t.run_start = tail_;
        break;
    }
  }
  // Within the run: the last leaf whose smallest key is <= key (empty leaves do not count).
  // The chosen leaf stays latched (shared, left to right) while the walk reads the next one.
  t.leaf = t.run_start;
  PageReadGuard chosen;
  PageId cur = t.run_start;
  for (;;) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(cur));
    if (leaves_read) ++*leaves_read;
    if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) return NotALeaf(cur);
    const LeafView v(g.data());
    if (cur != t.run_start && v.count() > 0 && key < v.key(0)) break;
    const bool continues = (v.flags() & kRunContinues) != 0 && v.right() != kInvalidPageId;
    const PageId right = v.right();
    if (cur == t.run_start || v.count() > 0) {
      t.leaf = cur;
      chosen = std::move(g);
    }
    if (!continues) break;
    cur = right;
  }
  if (leaf != nullptr) *leaf = std::move(chosen);
  return t;
}

StatusOr<bool> Aulid::Get(Slice key, std::string* cell) {
  ReaderLock lock(&inner_mu_);
  aulid::RouteCost cost;
  uint64_t leaves = 0;
  PageReadGuard g;
  GROVE_RETURN_IF_ERROR(Locate(key, false, &cost, &leaves, &g).status());
  const LeafView v(g.data());
  bool found = false;
  const int i = v.Find(key, &found);
  lookups_.fetch_add(1, std::memory_order_relaxed);
  lookup_inner_pages_.fetch_add(cost.total(), std::memory_order_relaxed);
  lookup_mixed_pages_.fetch_add(cost.mixed, std::memory_order_relaxed);
  lookup_packed_pages_.fetch_add(cost.packed, std::memory_order_relaxed);
  lookup_branch_pages_.fetch_add(cost.branch, std::memory_order_relaxed);
  lookup_leaf_pages_.fetch_add(leaves, std::memory_order_relaxed);
  if (!found) return false;
  cell->assign(v.cell(i));
  return true;
}

class Aulid::Cursor final : public core::BatchCursor {
 public:
  Cursor(Aulid* t, const CursorOptions& o) : BatchCursor(o), t_(t) { Start(); }

 protected:
  // The entries >= from of the leaf `from` belongs to, or of the first leaf after it that has
  // any: the chain is read under the inner lock, so it cannot change meanwhile.
  //
  // A batch is a leaf's whole rest, so the next one starts at the leaf to its right: the cursor
  // carries that page instead of routing through the inner part again, unless a split or merge
  // changed the chain meanwhile (then it locates `from` as the first batch did).
  Status ReadForward(const std::string& from, bool first, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    out->clear();
    leaf->has_high = false;  // an empty batch means the chain has nothing more
    ReaderLock lock(&t_->inner_mu_);
    const uint64_t version = t_->ChainVersion();
    PageId cur = kInvalidPageId;
    if (!first && carried_ && version == version_ && from == resume_) {
      cur = next_;
      if (cur == kInvalidPageId) return Status::Ok();  // the chain ended there
    } else {
      GROVE_ASSIGN_OR_RETURN(const Target target, t_->Locate(from, false, nullptr, nullptr));
      cur = target.leaf;
    }
    carried_ = false;
    while (cur != kInvalidPageId) {
      GROVE_ASSIGN_OR_RETURN(PageReadGuard g, t_->pool_->FetchRead(cur, IoCause::kScan));
      if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) return NotALeaf(cur);
      const LeafView v(g.data());
      bool found = false;
      for (int i = v.Find(from, &found); i < v.count(); ++i) {
        out->push_back({std::string(v.key(i)), std::string(v.cell(i))});
      }
      if (!out->empty()) {
        carried_ = true;
        next_ = v.right();
        version_ = version;
        resume_ = out->back().key + std::string(1, '\0');  // what BatchCursor asks for next
        return Status::Ok();
      }
      cur = v.right();
    }
    return Status::Ok();
  }

  // The entries < before (all when !bounded) of the leaf holding the largest keys below it, or
  // of the first leaf before it that has any, descending.
  Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    out->clear();
    leaf->has_low = false;
    ReaderLock lock(&t_->inner_mu_);
    PageId cur = t_->last_;
    if (bounded) {
      GROVE_ASSIGN_OR_RETURN(const Target target, t_->Locate(before, false, nullptr, nullptr));
      cur = target.leaf;
    }
    while (cur != kInvalidPageId) {
      GROVE_ASSIGN_OR_RETURN(PageReadGuard g, t_->pool_->FetchRead(cur, IoCause::kScan));
      if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) return NotALeaf(cur);
      const LeafView v(g.data());
      bool found = false;
      const int end = bounded ? v.Find(before, &found) : v.count();
      for (int i = end - 1; i >= 0; --i) {
        out->push_back({std::string(v.key(i)), std::string(v.cell(i))});
      }
      if (!out->empty()) return Status::Ok();
      cur = v.left();
    }
    return Status::Ok();
  }

 private:
  Aulid* const t_;
  // Where the last forward batch ended: the leaf after it, the chain's version then, and the
  // `from` that continues it.
  bool carried_ = false;
  PageId next_ = kInvalidPageId;
  uint64_t version_ = 0;
  std::string resume_;
};

StatusOr<std::unique_ptr<IndexCursor>> Aulid::NewCursor(const CursorOptions& options) {
  return std::unique_ptr<IndexCursor>(new Cursor(this, options));
}

}  // namespace grove
