#include "index/btree/btree.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "index/core/shortcut.h"
#include "page/extent_allocator.h"
#include "util/coding.h"

namespace grove {

using core::Leaf;
using core::LeafView;

namespace {
constexpr uint32_t kMetadataVersion = 2;
}  // namespace

VariantSpec BTree::Spec() {
  VariantSpec spec;
  spec.name = "btree";
  spec.summary = "B+-tree of 4 KiB slotted pages, update in place (the baseline)";
  spec.params = {
      {"fill_factor", core::kBulkLoadFill, false,
       "bulk load packs nodes to this fraction of a page (0.5..1.0)"},
  };
  for (ParamSpec& p : shortcut::ParamSpecs()) spec.params.push_back(std::move(p));
  spec.create = &BTree::Create;
  spec.open = &BTree::Open;
  return spec;
}

BTree::BTree(const IndexContext& ctx, double fill_factor, const predict::ShortcutOptions& prefetch)
    : ctx_(ctx),
      pool_(ctx.pool),
      fill_factor_(fill_factor),
      max_key_(ctx.options->max_key_bytes),
      max_cell_(MaxCellBytes(*ctx.options)) {
  if (prefetch.mode != predict::PrefetchMode::kNone) {
    predictor_ = std::make_unique<predict::PathPredictor>(
        prefetch, [this](predict::TreeSnapshot* snap) { return CollectShape(snap); }, ctx.logger);
  }
}

Status BTree::AttachCore(const Slice* metadata) {
  core::TreeOptions o;
  o.name = "btree";
  o.max_key = max_key_;
  o.leaf_payload_bytes = 8;
  o.observer = predictor_.get();
  if (metadata != nullptr) {
    Slice in = *metadata;
    uint32_t version;
    uint64_t entries, leaves;
    if (!GetVarint32(&in, &version) || version != kMetadataVersion) {
      return Status::DataLoss("btree metadata in the manifest is of another format version");
    }
    GROVE_ASSIGN_OR_RETURN(tree_, core::BTreeCore::Open(ctx_, o, &in));
    if (!GetVarint64(&in, &entries) || !GetVarint64(&in, &leaves) || !in.empty() || leaves == 0) {
      return Status::DataLoss("btree metadata in the manifest is malformed");
    }
    entries_ = entries;
    leaf_pages_ = leaves;
  } else {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, NewLeaf());
    leaf_pages_ = 1;
    auto tree = core::BTreeCore::Create(ctx_, o, core::EncodeChild(leaf.id()));
    if (!tree.ok()) {
      FreeLeaf(leaf);
      return tree.status();
    }
    tree_ = std::move(*tree);
  }
  // Models are not persisted: training reads only the inner nodes, so build them now.
  return predictor_ ? predictor_->Rebuild() : Status::Ok();
}

StatusOr<std::unique_ptr<Index>> BTree::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const double fill, ParseDoubleParam(params, "fill_factor", 0.5, 1.0));
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  auto tree = std::unique_ptr<BTree>(new BTree(ctx, fill, prefetch));
  GROVE_RETURN_IF_ERROR(tree->AttachCore(nullptr));
  return std::unique_ptr<Index>(std::move(tree));
}

StatusOr<std::unique_ptr<Index>> BTree::Open(const IndexContext& ctx, const ParamMap& params,
                                             Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const double fill, ParseDoubleParam(params, "fill_factor", 0.5, 1.0));
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  auto tree = std::unique_ptr<BTree>(new BTree(ctx, fill, prefetch));
  GROVE_RETURN_IF_ERROR(tree->AttachCore(&metadata));
  return std::unique_ptr<Index>(std::move(tree));
}

std::string BTree::SerializeMetadata() {
  std::string s;
  PutVarint32(&s, kMetadataVersion);
  tree_->Serialize(&s);
  PutVarint64(&s, entries_.load());
  PutVarint64(&s, leaf_pages_.load());
  return s;
}

IndexStats BTree::GetStats() {
  IndexStats s;
  s.variant = "btree";
  s.height = tree_->height();
  s.inner_pages = tree_->inner_pages();
  s.leaf_pages = leaf_pages_.load();
  s.inner_bytes = s.inner_pages * kPageSize;
  s.entries = entries_.load();
  s.extra["splits_total"] = static_cast<double>(splits_.load());
  s.extra["merges_total"] = static_cast<double>(merges_.load());
  if (predictor_) shortcut::AddStats(*predictor_, &s);
  return s;
}

StatusOr<PageWriteGuard> BTree::NewLeaf() {
  GROVE_ASSIGN_OR_RETURN(const PageId id, ctx_.allocator->Allocate(1));
  auto g = pool_->NewPage(id, core::kLeafPage);
  if (!g.ok()) {
    ctx_.allocator->Free(id, 1);
    return g.status();
  }
  Leaf::Format(g->mutable_data());
  return g;
}

void BTree::FreeLeaf(PageWriteGuard& leaf) {
  const PageId id = leaf.id();
  leaf.Discard();
  ctx_.allocator->Free(id, 1);
}

// --- Reads ------------------------------------------------------------------------------------

StatusOr<PageReadGuard> BTree::DescendToLeaf(Slice key, core::Seek mode, IoCause cause,
                                             core::Fences* fences, PrefetchBatch* batch,
                                             core::Path* path,
                                             const core::ParentVisitor* at_parent) {
  GROVE_ASSIGN_OR_RETURN(core::ParentLatch p,
                         tree_->DescendToParent(key, mode, cause, false, batch, path));
  const PageId id = core::InnerNodeView(p.data()).child(p.child);
  if (fences != nullptr) *fences = p.leaf_fences();
  if (at_parent != nullptr) (*at_parent)(p);
  // A prefetched image is admitted only here, where the child pointer names exactly its page.
  GROVE_ASSIGN_OR_RETURN(PageReadGuard leaf,
                         pool_->FetchRead(id, cause, Retention::kNormal, batch));
  if (page::Type(leaf.data()) != static_cast<uint16_t>(core::kLeafPage)) {
    return Status::DataLoss(fmt::format("btree: page {} under level-1 node {} has type {}", id,
                                        p.id(), page::Type(leaf.data())));
  }
  if (path != nullptr) (*path)[0] = id;
  return leaf;  // the parent is released after the leaf is latched
}

StatusOr<bool> BTree::Get(Slice key, std::string* cell) {
  GROVE_ASSIGN_OR_RETURN(PageReadGuard leaf,
                         DescendPredicted(key, core::Seek::kAtOrAfter, IoCause::kDemand, nullptr));
  const LeafView n(leaf.data());
  bool found;
  const int i = n.Find(key, &found);
  if (found) cell->assign(n.cell(i));
  return found;
}

// --- Writes -----------------------------------------------------------------------------------

Status BTree::Prepare(Slice key) {
  // Only the path, faulted in: no path prediction (its model lookups cost more than a descent
  // through cached inner nodes, and a missing leaf is one read either way) and no copy of the
  // cell, which the write does not need.
  return DescendToLeaf(key, core::Seek::kAtOrAfter, IoCause::kDemand, nullptr).status();
}

bool BTree::PutInPlace(PageWriteGuard& leaf, Slice key, Slice cell,
                       std::optional<std::string>* old_cell) {
  const core::LeafPut r = core::PutInLeaf(leaf, key, cell, old_cell);
  if (r == core::LeafPut::kInserted) entries_.fetch_add(1, std::memory_order_relaxed);
  return r != core::LeafPut::kNoRoom;
}

Status BTree::Put(const WriteContext&, Slice key, Slice cell,
                  std::optional<std::string>* old_cell) {
  old_cell->reset();
  {
    // Optimistic: shared latches down to the level-1 node, the leaf exclusively.
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent(key, core::Seek::kAtOrAfter,
                                                                       IoCause::kDemand, false));
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf,
                           pool_->FetchWrite(core::InnerNodeView(p.data()).child(p.child)));
    p.shared.Release();
    if (PutInPlace(leaf, key, cell, old_cell)) return Status::Ok();
  }
  return PutWithSplit(key, cell, old_cell);
}

Status BTree::PutWithSplit(Slice key, Slice cell, std::optional<std::string>* old_cell) {
  std::vector<PageWriteGuard> path;
  core::Fences fences;
  GROVE_RETURN_IF_ERROR(tree_->LatchPath(key, core::BTreeCore::Change::kInsert, &path, &fences));
  const core::InnerNodeView parent(path.back().data());
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf,
                         pool_->FetchWrite(parent.child(parent.ChildIndexFor(key))));
  // Another writer may have made room meanwhile.
  if (PutInPlace(leaf, key, cell, old_cell)) return Status::Ok();
  // A split. Everything it may need is acquired before the first change, so that a failure (no
  // free frame, an unreadable sibling) leaves the tree as it was: the inner nodes the separator
  // may split (planned for the longest separator), the new leaf, the right sibling.
  core::BTreeCore::SplitPlan plan;
  GROVE_RETURN_IF_ERROR(tree_->PlanInsert(path, max_key_, &plan));
  auto fresh = NewLeaf();
  if (!fresh.ok()) {
    tree_->ReleasePlan(&plan);
    return fresh.status();
  }
  PageWriteGuard next;
  if (const PageId right = LeafView(leaf.data()).right(); right != kInvalidPageId) {
    auto g = pool_->FetchWrite(right);  // left-to-right among leaves
    if (!g.ok()) {
      FreeLeaf(*fresh);
      tree_->ReleasePlan(&plan);
      return g.status();
    }
    next = std::move(*g);
  }
  // A replacement that does not fit splits like an insert.
  bool found;
  const int i = LeafView(leaf.data()).Find(key, &found);
  std::string replaced;
  if (found) {
    replaced.assign(LeafView(leaf.data()).cell(i));
    Leaf(leaf.mutable_data()).mutable_slots().Remove(i);
  }
  StatusOr<std::string> separator = core::SplitLeaf(leaf, *fresh, next, key, cell);
  if (!separator.ok()) {
    if (found) Leaf(leaf.mutable_data()).mutable_slots().Insert(i, key, replaced);
    FreeLeaf(*fresh);
    tree_->ReleasePlan(&plan);
    return separator.status();
  }
  const PageId leaf_id = leaf.id(), fresh_id = fresh->id();
  if (found) old_cell->emplace(std::move(replaced));
  next.Release();
  fresh->Release();
  leaf.Release();
  leaf_pages_.fetch_add(1, std::memory_order_relaxed);
  if (!found) entries_.fetch_add(1, std::memory_order_relaxed);
  splits_.fetch_add(1, std::memory_order_relaxed);
  if (predictor_) predictor_->OnSplit(0, leaf_id, fresh_id);
  return tree_->InsertChild(&path, &plan, std::move(*separator), core::EncodeChild(fresh_id));
}

Status BTree::Delete(const WriteContext&, Slice key, std::optional<std::string>* old_cell) {
  old_cell->reset();
  {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent(key, core::Seek::kAtOrAfter,
                                                                       IoCause::kDemand, false));
    const bool only_child = core::InnerNodeView(p.data()).count() == 1;
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf,
                           pool_->FetchWrite(core::InnerNodeView(p.data()).child(p.child)));
    p.shared.Release();
    const LeafView v(leaf.data());
    bool found;
    const int i = v.Find(key, &found);
    if (!found) return Status::Ok();
    const size_t bytes = SlottedPageView::CellBytes(v.key(i).size(), v.cell(i).size());
    // A leaf that stays at least a quarter full, or has no sibling to merge with, needs nothing
    // else.
    if (only_child || v.used_bytes() >= MinFill(v) + bytes) {
      old_cell->emplace(v.cell(i));
      Leaf(leaf.mutable_data()).mutable_slots().Remove(i);
      entries_.fetch_sub(1, std::memory_order_relaxed);
      return Status::Ok();
    }
  }
  return DeleteWithMerge(key, old_cell);
}

Status BTree::DeleteWithMerge(Slice key, std::optional<std::string>* old_cell) {
  std::vector<PageWriteGuard> path;
  core::Fences fences;
  GROVE_RETURN_IF_ERROR(tree_->LatchPath(key, core::BTreeCore::Change::kRemove, &path, &fences));
  const core::InnerNodeView parent(path.back().data());
  const int pos = parent.ChildIndexFor(key);
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, pool_->FetchWrite(parent.child(pos)));
  {
    bool found;
    const int i = LeafView(leaf.data()).Find(key, &found);
    if (!found) return Status::Ok();  // removed by a concurrent write between the two attempts
    old_cell->emplace(LeafView(leaf.data()).cell(i));
    Leaf(leaf.mutable_data()).mutable_slots().Remove(i);
    entries_.fetch_sub(1, std::memory_order_relaxed);
  }
  const LeafView v(leaf.data());
  if (v.used_bytes() >= MinFill(v)) return Status::Ok();
  if (parent.count() == 1) {
    // No sibling to merge with; the parent may still merge with its own.
    leaf.Release();
    return tree_->Rebalance(&path, key);
  }

  // Merge with the right sibling under the same parent, or, for the last child, the left one.
  PageWriteGuard left, right;
  int removed;
  if (pos + 1 < parent.count()) {
    left = std::move(leaf);
    GROVE_ASSIGN_OR_RETURN(right, pool_->FetchWrite(parent.child(pos + 1)));
    removed = pos + 1;
  } else {
    // Left sibling: release the leaf first to keep left-to-right latch order. The parent stays
    // exclusive, so nobody can reach the leaf in between.
    const PageId id = leaf.id();
    leaf.Release();
    GROVE_ASSIGN_OR_RETURN(left, pool_->FetchWrite(parent.child(pos - 1)));
    GROVE_ASSIGN_OR_RETURN(right, pool_->FetchWrite(id));
    removed = pos;
  }
  // The leaf after the pair takes a new left link. Latch it before moving anything, so that if
  // it cannot be read the pair stays as it was (the right leaf's keys stay where lookups go).
  PageWriteGuard next;
  if (const PageId after = LeafView(right.data()).right(); after != kInvalidPageId) {
    GROVE_ASSIGN_OR_RETURN(next, pool_->FetchWrite(after));
  }
  if (!core::MergeLeaves(left, right, next)) {
    // Does not fit: the leaf stays underfull (lazy), and underfull inner nodes above it may
    // still merge.
    next.Release();
    right.Release();
    left.Release();
    return tree_->Rebalance(&path, key);
  }
  const PageId right_id = right.id();
  FreeLeaf(right);
  next.Release();
  left.Release();
  leaf_pages_.fetch_sub(1, std::memory_order_relaxed);
  merges_.fetch_add(1, std::memory_order_relaxed);
  if (predictor_) predictor_->OnMerge(0, right_id);
  return tree_->RemoveChild(&path, removed, key);
}

}  // namespace grove
