#include "index/btree/btree.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "index/shortcut.h"
#include "page/extent_allocator.h"
#include "util/coding.h"

namespace grove {

using btree::Node;
using btree::NodeView;

VariantSpec BTree::Spec() {
  VariantSpec spec;
  spec.name = "btree";
  spec.summary = "B+-tree of 4 KiB slotted pages, update in place (the baseline)";
  spec.params = {
      {"fill_factor", "0.9", false, "bulk load packs nodes to this fraction of a page (0.5..1.0)"},
  };
  for (ParamSpec& p : shortcut::ParamSpecs()) spec.params.push_back(std::move(p));
  spec.page_types = {{static_cast<uint16_t>(PageType::kBTreeLeaf), "btree leaf"},
                     {static_cast<uint16_t>(PageType::kBTreeInner), "btree inner node"}};
  spec.create = &BTree::Create;
  spec.open = &BTree::Open;
  return spec;
}

BTree::BTree(const IndexContext& ctx, double fill_factor, PageId root,
             const predict::ShortcutOptions& prefetch)
    : ctx_(ctx),
      pool_(ctx.pool),
      fill_factor_(fill_factor),
      root_(root),
      max_key_(ctx.options->max_key_bytes),
      max_cell_(std::max<size_t>(ctx.options->inline_value_bytes + 1, 32)) {
  if (prefetch.mode != predict::PrefetchMode::kNone) {
    predictor_ = std::make_unique<predict::PathPredictor>(
        prefetch, [this](predict::TreeSnapshot* snap) { return CollectShape(snap); }, ctx.logger);
  }
}

StatusOr<std::unique_ptr<Index>> BTree::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const double fill, ParseDoubleParam(params, "fill_factor", 0.5, 1.0));
  GROVE_ASSIGN_OR_RETURN(const PageId root, ctx.allocator->Allocate(1));
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard g, ctx.pool->NewPage(root, PageType::kBTreeLeaf));
  Node::Format(g.mutable_data(), 0);
  g.Release();
  auto tree = std::unique_ptr<BTree>(new BTree(ctx, fill, root, prefetch));
  if (tree->predictor_) GROVE_RETURN_IF_ERROR(tree->predictor_->Rebuild());
  return std::unique_ptr<Index>(std::move(tree));
}

StatusOr<std::unique_ptr<Index>> BTree::Open(const IndexContext& ctx, const ParamMap& params,
                                             Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const double fill, ParseDoubleParam(params, "fill_factor", 0.5, 1.0));
  uint64_t root, height, entries, leaves, inners;
  Slice in = metadata;
  if (!GetVarint64(&in, &root) || !GetVarint64(&in, &height) || !GetVarint64(&in, &entries) ||
      !GetVarint64(&in, &leaves) || !GetVarint64(&in, &inners) || !in.empty() || height == 0 ||
      height > 64 || root == kInvalidPageId) {
    return Status::DataLoss("btree metadata in the manifest is malformed");
  }
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  auto tree = std::unique_ptr<BTree>(new BTree(ctx, fill, root, prefetch));
  tree->height_ = static_cast<uint32_t>(height);
  tree->entries_ = entries;
  tree->leaf_pages_ = leaves;
  tree->inner_pages_ = inners;
  // Models are not persisted: training reads only the inner nodes, so rebuild them now.
  if (tree->predictor_) GROVE_RETURN_IF_ERROR(tree->predictor_->Rebuild());
  return std::unique_ptr<Index>(std::move(tree));
}

std::string BTree::SerializeMetadata() {
  std::string s;
  PutVarint64(&s, root_);
  PutVarint64(&s, height_.load());
  PutVarint64(&s, entries_.load());
  PutVarint64(&s, leaf_pages_.load());
  PutVarint64(&s, inner_pages_.load());
  return s;
}

IndexStats BTree::GetStats() {
  IndexStats s;
  s.variant = "btree";
  s.height = height_.load();
  s.inner_pages = inner_pages_.load();
  s.leaf_pages = leaf_pages_.load();
  s.inner_bytes = s.inner_pages * kPageSize;
  s.entries = entries_.load();
  s.extra["splits_total"] = static_cast<double>(splits_.load());
  s.extra["merges_total"] = static_cast<double>(merges_.load());
  if (predictor_) shortcut::AddStats(*predictor_, &s);
  return s;
}

bool BTree::InsertSafe(const NodeView& n) const {
  const size_t payload = n.is_leaf() ? max_cell_ : 8;
  return n.free_bytes() >= SlottedPageView::CellBytes(max_key_, payload);
}

bool BTree::DeleteSafe(const NodeView& n) const {
  const size_t payload = n.is_leaf() ? max_cell_ : 8;
  const size_t biggest = SlottedPageView::CellBytes(max_key_, payload);
  return n.used_bytes() >= MinFill(n) + biggest;
}

// --- Reads ------------------------------------------------------------------------------------

StatusOr<PageReadGuard> BTree::DescendToLeaf(Slice key, Seek mode, IoCause cause, Fences* fences,
                                             PrefetchBatch* batch, Path* path) {
  if (fences) *fences = Fences();
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(root_, cause, Retention::kHigh));
  if (path != nullptr) path->fill(kInvalidPageId);
  for (;;) {
    const NodeView n(g.data());
    if (n.is_leaf()) return g;
    int i = -1;
    switch (mode) {
      case Seek::kAtOrAfter:
        i = n.ChildIndexFor(key);
        break;
      case Seek::kBefore:
        i = n.ChildIndexBelow(key);
        break;
      case Seek::kLast:
        i = n.count() - 1;
        break;
    }
    if (fences) {
      if (i >= 0) {
        fences->low.assign(n.key(i));
        fences->has_low = true;
      }
      if (i + 1 < n.count()) {
        fences->high.assign(n.key(i + 1));
        fences->has_high = true;
      }
    }
    const PageId child = n.child(i);
    // A prefetched image is admitted only here, where the child pointer names exactly its page.
    GROVE_ASSIGN_OR_RETURN(PageReadGuard c,
                           pool_->FetchRead(child, cause, RetentionFor(n.level() - 1), batch));
    if (path != nullptr && n.level() - 1 < predict::kMaxLevels) (*path)[n.level() - 1] = child;
    if (NodeView(c.data()).level() + 1 != n.level()) {
      return Status::DataLoss(fmt::format("btree: page {} at level {} has child {} at level {}",
                                          g.id(), n.level(), child, NodeView(c.data()).level()));
    }
    g = std::move(c);  // releases the parent after the child is latched
  }
}

StatusOr<bool> BTree::Get(Slice key, std::string* cell) {
  GROVE_ASSIGN_OR_RETURN(PageReadGuard leaf,
                         DescendPredicted(key, Seek::kAtOrAfter, IoCause::kDemand, nullptr));
  const NodeView n(leaf.data());
  bool found;
  const int i = n.slots().LowerBound(key, &found);
  if (found) cell->assign(n.payload(i));
  return found;
}

// --- Writes -----------------------------------------------------------------------------------

StatusOr<PageWriteGuard> BTree::LatchLeafOptimistic(Slice key) {
  for (;;) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g,
                           pool_->FetchRead(root_, IoCause::kDemand, Retention::kHigh));
    if (NodeView(g.data()).is_leaf()) {
      g.Release();
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard w, pool_->FetchWrite(root_));
      if (NodeView(w.data()).is_leaf()) return w;
      continue;  // the root split while we switched latches
    }
    for (;;) {
      const NodeView n(g.data());
      const PageId child = n.child(n.ChildIndexFor(key));
      if (n.level() == 1) {
        GROVE_ASSIGN_OR_RETURN(PageWriteGuard w, pool_->FetchWrite(child));
        if (!NodeView(w.data()).is_leaf()) {
          return Status::DataLoss(
              fmt::format("btree: page {} under level-1 page {} is no leaf", child, g.id()));
        }
        return w;
      }
      GROVE_ASSIGN_OR_RETURN(
          PageReadGuard c, pool_->FetchRead(child, IoCause::kDemand, RetentionFor(n.level() - 1)));
      g = std::move(c);
    }
  }
}

Status BTree::LatchPathPessimistic(Slice key, bool for_insert, std::vector<PageWriteGuard>* path) {
  path->clear();
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard g,
                         pool_->FetchWrite(root_, IoCause::kDemand, Retention::kHigh));
  path->push_back(std::move(g));
  for (;;) {
    const NodeView n(path->back().data());
    if (n.is_leaf()) return Status::Ok();
    const PageId child = n.child(n.ChildIndexFor(key));
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard c,
                           pool_->FetchWrite(child, IoCause::kDemand, RetentionFor(n.level() - 1)));
    const NodeView cn(c.data());
    if (cn.level() + 1 != n.level()) {
      return Status::DataLoss(fmt::format("btree: page {} at level {} has child {} at level {}",
                                          path->back().id(), n.level(), child, cn.level()));
    }
    if (for_insert ? InsertSafe(cn) : DeleteSafe(cn)) path->clear();  // ancestors will not change
    path->push_back(std::move(c));
  }
}

Status BTree::Put(const WriteContext&, Slice key, Slice cell,
                  std::optional<std::string>* old_cell) {
  old_cell->reset();
  {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, LatchLeafOptimistic(key));
    Node n(leaf.mutable_data());
    SlottedPage sp = n.mutable_slots();
    bool found;
    const int i = sp.LowerBound(key, &found);
    if (found && sp.CanReplacePayload(i, cell.size())) {
      old_cell->emplace(sp.Payload(i));
      sp.ReplacePayload(i, cell);
      return Status::Ok();
    }
    if (!found && sp.HasRoomFor(key.size(), cell.size())) {
      sp.Insert(i, key, cell);
      entries_.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
  }
  std::vector<PageWriteGuard> path;
  GROVE_RETURN_IF_ERROR(LatchPathPessimistic(key, /*for_insert=*/true, &path));
  Node n(path.back().mutable_data());
  SlottedPage sp = n.mutable_slots();
  bool found;
  const int i = sp.LowerBound(key, &found);
  if (found && sp.CanReplacePayload(i, cell.size())) {
    old_cell->emplace(sp.Payload(i));
    sp.ReplacePayload(i, cell);
    return Status::Ok();
  }
  // A replacement that does not fit needs a split just like an insert that does not.
  SplitPlan plan;
  GROVE_RETURN_IF_ERROR(PlanSplits(path, !found && sp.HasRoomFor(key.size(), cell.size()), &plan));
  if (found) {
    old_cell->emplace(sp.Payload(i));
    sp.Remove(i);  // re-inserted below, with a split
  }
  Status s = InsertWithSplits(&path, &plan, std::string(key), std::string(cell));
  ReleasePlan(&plan);
  if (s.ok() && !found) entries_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Status BTree::PlanSplits(const std::vector<PageWriteGuard>& path, bool leaf_fits, SplitPlan* plan) {
  Status s;
  // The same walk as InsertWithSplits: a node without room splits (one new node) and passes a
  // separator up; the root grows (one new node) and then splits (another).
  for (size_t j = path.size(); j-- > 0 && s.ok();) {
    const NodeView n(path[j].data());
    const bool fits = j + 1 == path.size()
                          ? leaf_fits
                          : n.free_bytes() >= SlottedPageView::CellBytes(max_key_, 8);
    if (fits) break;
    const int nodes = j == 0 && path[0].id() == root_ ? 2 : 1;
    for (int k = 0; k < nodes && s.ok(); ++k) {
      auto g = NewNode(n.level());
      if (g.ok()) {
        plan->spares.push_back(std::move(*g));
      } else {
        s = g.status();
      }
    }
  }
  if (s.ok() && !plan->spares.empty()) {
    const PageId right = NodeView(path.back().data()).right();
    if (right != kInvalidPageId) {
      auto g = pool_->FetchWrite(right);  // left-to-right among leaves
      if (g.ok()) {
        plan->leaf_right = std::move(*g);
      } else {
        s = g.status();
      }
    }
  }
  if (!s.ok()) ReleasePlan(plan);
  return s;
}

void BTree::ReleasePlan(SplitPlan* plan) {
  for (PageWriteGuard& g : plan->spares) {
    if (g) FreeNode(g);
  }
  plan->spares.clear();
  plan->leaf_right.Release();
}

StatusOr<PageWriteGuard> BTree::TakeSpare(SplitPlan* plan, uint16_t level) {
  for (PageWriteGuard& g : plan->spares) {
    if (g && NodeView(g.data()).level() == level) return std::move(g);
  }
  return Status::Internal(fmt::format("btree: a split at level {} was not planned", level));
}

Status BTree::InsertWithSplits(std::vector<PageWriteGuard>* path, SplitPlan* plan, std::string key,
                               std::string payload) {
  size_t i = path->size() - 1;
  for (;;) {
    Node n((*path)[i].mutable_data());
    SlottedPage sp = n.mutable_slots();
    if (sp.HasRoomFor(key.size(), payload.size())) {
      bool found;
      const int pos = sp.LowerBound(key, &found);
      if (found)
        return Status::Internal(fmt::format("btree: duplicate key in page {}", (*path)[i].id()));
      sp.Insert(pos, key, payload);
      return Status::Ok();
    }
    if (i == 0) {
      if ((*path)[0].id() != root_) {
        return Status::Internal("btree: a safe ancestor could not absorb a separator");
      }
      GROVE_RETURN_IF_ERROR(GrowRoot(path, plan));
      i = 1;
      continue;
    }
    std::string sep;
    PageId right;
    GROVE_RETURN_IF_ERROR(SplitInsert((*path)[i], plan, key, payload, &sep, &right));
    key = std::move(sep);
    payload = btree::EncodeChild(right);
    --i;
  }
}

StatusOr<PageWriteGuard> BTree::NewNode(uint16_t level) {
  GROVE_ASSIGN_OR_RETURN(const PageId id, ctx_.allocator->Allocate(1));
  auto g = pool_->NewPage(id, level == 0 ? PageType::kBTreeLeaf : PageType::kBTreeInner,
                          RetentionFor(level));
  if (!g.ok()) {
    ctx_.allocator->Free(id, 1);
    return g.status();
  }
  Node::Format(g->mutable_data(), level);
  (level == 0 ? leaf_pages_ : inner_pages_).fetch_add(1, std::memory_order_relaxed);
  return g;
}

void BTree::FreeNode(PageWriteGuard& node) {
  const PageId id = node.id();
  const bool leaf = NodeView(node.data()).is_leaf();
  node.Discard();
  ctx_.allocator->Free(id, 1);
  (leaf ? leaf_pages_ : inner_pages_).fetch_sub(1, std::memory_order_relaxed);
}

Status BTree::SplitInsert(PageWriteGuard& guard, SplitPlan* plan, Slice key, Slice payload,
                          std::string* sep, PageId* right_id) {
  Node n(guard.mutable_data());
  const uint16_t level = n.level();
  if (level == 0 && n.right() != plan->leaf_right.id()) {
    return Status::Internal(
        fmt::format("btree: split of leaf {} without its right sibling {}", guard.id(), n.right()));
  }
  // Gather every cell plus the new one in order. A page holds at most 4 KiB, so this is cheap
  // next to the IO a split implies, and it keeps variable-size splitting simple.
  std::vector<std::pair<std::string, std::string>> cells;
  cells.reserve(n.count() + 1);
  bool inserted = false;
  for (int j = 0; j < n.count(); ++j) {
    if (!inserted && key < n.key(j)) {
      cells.emplace_back(key, payload);
      inserted = true;
    }
    cells.emplace_back(n.key(j), n.payload(j));
  }
  if (!inserted) cells.emplace_back(key, payload);

  // Split at the point closest to half of the bytes among those where both halves fit in a
  // page. The first point past the middle is not enough: with cells near the largest the options
  // allow, the cell that crosses the middle can push the left half past a page. An inner split
  // moves cell m up to the parent, so that cell belongs to neither half.
  std::vector<size_t> prefix(cells.size() + 1, 0);
  for (size_t j = 0; j < cells.size(); ++j) {
    prefix[j + 1] =
        prefix[j] + SlottedPageView::CellBytes(cells[j].first.size(), cells[j].second.size());
  }
  const size_t capacity = n.capacity();
  size_t m = 0, best_gap = SIZE_MAX;
  for (size_t j = 1; j < cells.size(); ++j) {
    const size_t left_bytes = prefix[j];
    const size_t right_bytes = prefix.back() - prefix[level == 0 ? j : j + 1];
    if (left_bytes > capacity || right_bytes > capacity) continue;
    const size_t gap =
        left_bytes > right_bytes ? left_bytes - right_bytes : right_bytes - left_bytes;
    if (gap < best_gap) {
      best_gap = gap;
      m = j;
    }
  }
  if (m == 0) {
    return Status::Internal(
        fmt::format("btree: page {} cannot be split into two pages", guard.id()));
  }

  GROVE_ASSIGN_OR_RETURN(PageWriteGuard right, TakeSpare(plan, level));
  Node r(right.mutable_data());
  SlottedPage left_sp = n.mutable_slots();
  left_sp.Clear();
  for (size_t j = 0; j < m; ++j)
    left_sp.Insert(static_cast<int>(j), cells[j].first, cells[j].second);
  SlottedPage right_sp = r.mutable_slots();
  if (level == 0) {
    for (size_t j = m; j < cells.size(); ++j) {
      right_sp.Insert(right_sp.count(), cells[j].first, cells[j].second);
    }
    *sep = btree::ShortestSeparator(cells[m - 1].first, cells[m].first);
    // Link right between this leaf and its old right sibling (left-to-right latch order).
    const PageId old_right = n.right();
    r.set_left(guard.id());
    r.set_right(old_right);
    n.set_right(right.id());
    if (old_right != kInvalidPageId) Node(plan->leaf_right.mutable_data()).set_left(right.id());
  } else {
    // The middle separator moves up; its child becomes the right node's leftmost child.
    *sep = cells[m].first;
    r.set_leftmost(DecodeFixed64(cells[m].second.data()));
    for (size_t j = m + 1; j < cells.size(); ++j) {
      right_sp.Insert(right_sp.count(), cells[j].first, cells[j].second);
    }
  }
  *right_id = right.id();
  splits_.fetch_add(1, std::memory_order_relaxed);
  if (predictor_) predictor_->OnSplit(level, guard.id(), *right_id);
  return Status::Ok();
}

Status BTree::GrowRoot(std::vector<PageWriteGuard>* path, SplitPlan* plan) {
  PageWriteGuard& root = (*path)[0];
  const uint16_t level = NodeView(root.data()).level();
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard child, TakeSpare(plan, level));
  const PageId child_id = child.id();
  // The child takes the root's whole content; only its own id differs.
  std::memcpy(child.mutable_data() + kPageHeaderSize, root.data() + kPageHeaderSize,
              kPageSize - kPageHeaderSize);
  char* r = root.mutable_data();
  page::Init(r, PageType::kBTreeInner, root_);
  Node::Format(r, level + 1);
  Node(r).set_leftmost(child_id);
  inner_pages_.fetch_add(1, std::memory_order_relaxed);
  if (level == 0) leaf_pages_.fetch_sub(1, std::memory_order_relaxed);
  if (level > 0) inner_pages_.fetch_sub(1, std::memory_order_relaxed);
  height_.fetch_add(1, std::memory_order_relaxed);
  if (predictor_) predictor_->OnShapeChange();
  path->insert(path->begin() + 1, std::move(child));
  return Status::Ok();
}

Status BTree::Delete(const WriteContext&, Slice key, std::optional<std::string>* old_cell) {
  old_cell->reset();
  {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, LatchLeafOptimistic(key));
    const NodeView v(leaf.data());
    bool found;
    const int i = v.slots().LowerBound(key, &found);
    if (!found) return Status::Ok();
    const size_t bytes = SlottedPageView::CellBytes(v.key(i).size(), v.payload(i).size());
    if (leaf.id() == root_ || v.used_bytes() >= MinFill(v) + bytes) {
      old_cell->emplace(v.payload(i));
      Node(leaf.mutable_data()).mutable_slots().Remove(i);
      entries_.fetch_sub(1, std::memory_order_relaxed);
      return Status::Ok();
    }
  }
  std::vector<PageWriteGuard> path;
  GROVE_RETURN_IF_ERROR(LatchPathPessimistic(key, /*for_insert=*/false, &path));
  Node n(path.back().mutable_data());
  SlottedPage sp = n.mutable_slots();
  bool found;
  const int i = sp.LowerBound(key, &found);
  if (!found) return Status::Ok();  // removed by a concurrent write between the two attempts
  old_cell->emplace(sp.Payload(i));
  sp.Remove(i);
  entries_.fetch_sub(1, std::memory_order_relaxed);
  return Rebalance(&path, key);
}

Status BTree::Rebalance(std::vector<PageWriteGuard>* path, Slice key) {
  for (size_t i = path->size() - 1; i > 0; --i) {
    // The levels below are done: let go of them before latching a sibling of this node. Latches
    // are taken top-down, and whoever holds that sibling may be waiting for one of our lower
    // nodes (a split or merge next door latches its right neighbour leaf), so holding them while
    // we wait for the sibling can deadlock.
    path->resize(i + 1);
    PageWriteGuard& node = (*path)[i];
    PageWriteGuard& parent = (*path)[i - 1];
    const NodeView n(node.data());
    if (n.used_bytes() >= MinFill(n)) break;
    const NodeView p(parent.data());
    const int pos = p.ChildIndexFor(key);
    if (p.child(pos) != node.id()) {
      return Status::Internal(
          fmt::format("btree: page {} is not the child of {} for the key", node.id(), parent.id()));
    }
    if (pos + 1 < p.count()) {
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard right, pool_->FetchWrite(p.child(pos + 1)));
      GROVE_RETURN_IF_ERROR(MergeSiblings(node, right, parent, pos + 1));
    } else if (pos >= 0) {
      // Left sibling: release the node first to keep left-to-right latch order. The parent stays
      // exclusively latched, so nobody can reach the node in between.
      const PageId node_id = node.id();
      node.Release();
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard left, pool_->FetchWrite(p.child(pos - 1)));
      GROVE_ASSIGN_OR_RETURN(node, pool_->FetchWrite(node_id));
      GROVE_RETURN_IF_ERROR(MergeSiblings(left, node, parent, pos));
    }
    // Otherwise the node is its parent's only child; the parent's own rebalance handles it.
  }
  PageWriteGuard& top = (*path)[0];
  if (top.id() == root_) {
    const NodeView r(top.data());
    if (!r.is_leaf() && r.count() == 0) {
      // The root's only child may be a node this delete still holds (the child that just took in
      // its right sibling): let go of everything below the root before ShrinkRoot latches it.
      path->resize(1);
      return ShrinkRoot(top);
    }
  }
  return Status::Ok();
}

Status BTree::MergeSiblings(PageWriteGuard& left, PageWriteGuard& right, PageWriteGuard& parent,
                            int sep_index) {
  const NodeView l(left.data()), r(right.data());
  const NodeView p(parent.data());
  const Slice sep = p.key(sep_index);
  size_t need = r.used_bytes();
  if (!l.is_leaf()) need += SlottedPageView::CellBytes(sep.size(), 8);
  if (need > l.free_bytes()) return Status::Ok();  // does not fit: stay underfull (lazy)

  // The leaf after the pair takes a new left link. Latch it before moving anything, so that if
  // it cannot be read the pair stays as it was (the right node's keys stay where lookups go).
  const PageId next = l.is_leaf() ? r.right() : kInvalidPageId;
  PageWriteGuard next_guard;
  if (next != kInvalidPageId) {
    GROVE_ASSIGN_OR_RETURN(next_guard, pool_->FetchWrite(next));
  }

  Node ln(left.mutable_data()), rn(right.mutable_data());
  SlottedPage lsp = ln.mutable_slots();
  if (l.is_leaf()) {
    SlottedPage rsp = rn.mutable_slots();
    rsp.MoveTailTo(0, &lsp);
    ln.set_right(next);
    if (next_guard) Node(next_guard.mutable_data()).set_left(left.id());
  } else {
    lsp.Insert(lsp.count(), sep, btree::EncodeChild(r.leftmost()));
    SlottedPage rsp = rn.mutable_slots();
    rsp.MoveTailTo(0, &lsp);
  }
  Node(parent.mutable_data()).mutable_slots().Remove(sep_index);
  const PageId right_id = right.id();
  FreeNode(right);
  merges_.fetch_add(1, std::memory_order_relaxed);
  if (predictor_) predictor_->OnMerge(NodeView(left.data()).level(), right_id);
  return Status::Ok();
}

Status BTree::ShrinkRoot(PageWriteGuard& root) {
  const PageId child_id = NodeView(root.data()).leftmost();
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard child, pool_->FetchWrite(child_id));
  const NodeView c(child.data());
  char* r = root.mutable_data();
  page::Init(r, c.is_leaf() ? PageType::kBTreeLeaf : PageType::kBTreeInner, root_);
  std::memcpy(r + kPageHeaderSize, child.data() + kPageHeaderSize, kPageSize - kPageHeaderSize);
  // The root stays and takes the child's role; the child's page goes. Either way one inner node
  // (the old root) fewer.
  child.Discard();
  ctx_.allocator->Free(child_id, 1);
  inner_pages_.fetch_sub(1, std::memory_order_relaxed);
  height_.fetch_sub(1, std::memory_order_relaxed);
  if (predictor_) predictor_->OnShapeChange();
  return Status::Ok();
}

}  // namespace grove
