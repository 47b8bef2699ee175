// BTreeCore: descent, structure changes of the inner levels, metadata.

#include "index/core/tree.h"

#include <algorithm>

#include <fmt/format.h>

#include "page/extent_allocator.h"

namespace grove::core {

std::vector<PageTypeClaim> PageTypes() {
  return {{static_cast<uint16_t>(kLeafPage), "tree leaf"},
          {static_cast<uint16_t>(kInnerPage), "tree inner node"}};
}

BTreeCore::BTreeCore(const IndexContext& ctx, const TreeOptions& options, PageId root)
    : ctx_(ctx), pool_(ctx.pool), options_(options), root_(root) {}

StatusOr<std::unique_ptr<BTreeCore>> BTreeCore::Create(const IndexContext& ctx,
                                                       const TreeOptions& options,
                                                       Slice first_leaf) {
  if (first_leaf.size() != options.leaf_payload_bytes) {
    return Status::Internal(fmt::format("{}: a leaf payload of {} bytes, expected {}", options.name,
                                        first_leaf.size(), options.leaf_payload_bytes));
  }
  GROVE_ASSIGN_OR_RETURN(const PageId root, ctx.allocator->Allocate(1));
  auto g = ctx.pool->NewPage(root, kInnerPage, Retention::kHigh);
  if (!g.ok()) {
    ctx.allocator->Free(root, 1);
    return g.status();
  }
  InnerNode::Format(g->mutable_data(), 1);
  InnerNode(g->mutable_data()).InsertChild("", first_leaf);
  return std::unique_ptr<BTreeCore>(new BTreeCore(ctx, options, root));
}

StatusOr<std::unique_ptr<BTreeCore>> BTreeCore::Open(const IndexContext& ctx,
                                                     const TreeOptions& options, Slice* metadata) {
  uint64_t root, height, inner;
  if (!GetVarint64(metadata, &root) || !GetVarint64(metadata, &height) ||
      !GetVarint64(metadata, &inner) || root == kInvalidPageId || height < 2 ||
      height > predict::kMaxLevels || inner == 0) {
    return Status::DataLoss(
        fmt::format("{}: tree metadata in the manifest is malformed", options.name));
  }
  auto tree = std::unique_ptr<BTreeCore>(new BTreeCore(ctx, options, root));
  tree->height_ = static_cast<uint32_t>(height);
  tree->inner_pages_ = inner;
  return tree;
}

void BTreeCore::Serialize(std::string* out) const {
  PutVarint64(out, root_);
  PutVarint64(out, height_.load());
  PutVarint64(out, inner_pages_.load());
}

size_t BTreeCore::RoomForChild(uint16_t level) const {
  return SlottedPageView::CellBytes(options_.max_key, PayloadBytes(level));
}

bool BTreeCore::RemoveSafe(const InnerNodeView& n) const {
  return n.used_bytes() >= MinFill(n) + RoomForChild(n.level());
}

// --- Descents ---------------------------------------------------------------------------------

namespace {

Status CheckChild(const char* name, PageId parent, uint16_t level, PageId child,
                  const char* child_page) {
  if (page::Type(child_page) != static_cast<uint16_t>(kInnerPage) ||
      InnerNodeView(child_page).level() + 1 != level) {
    return Status::DataLoss(
        fmt::format("{}: page {} at level {} has child {} of type {} at level {}", name, parent,
                    level, child, page::Type(child_page), InnerNodeView(child_page).level()));
  }
  return Status::Ok();
}

int ChildFor(const InnerNodeView& n, Slice key, Seek mode) {
  switch (mode) {
    case Seek::kAtOrAfter:
      return n.ChildIndexFor(key);
    case Seek::kBefore:
      return std::max(0, n.ChildIndexBelow(key));
    case Seek::kLast:
      break;
  }
  return n.count() - 1;
}

}  // namespace

StatusOr<ParentLatch> BTreeCore::DescendToParent(Slice key, Seek mode, IoCause cause,
                                                 bool exclusive, PrefetchBatch* batch, Path* path) {
  for (;;) {
    if (path != nullptr) path->fill(kInvalidPageId);
    ParentLatch out;
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(root_, cause, Retention::kHigh));
    if (page::Type(g.data()) != static_cast<uint16_t>(kInnerPage)) {
      return Status::DataLoss(
          fmt::format("{}: root page {} has type {}", options_.name, root_, page::Type(g.data())));
    }
    if (InnerNodeView(g.data()).level() == 1 && exclusive) {
      g.Release();
      GROVE_ASSIGN_OR_RETURN(out.excl, pool_->FetchWrite(root_, cause, Retention::kHigh));
      if (InnerNodeView(out.excl.data()).level() != 1) continue;  // the root grew meanwhile
    } else {
      out.shared = std::move(g);
    }
    for (;;) {
      const InnerNodeView n(out.data());
      const int i = ChildFor(n, key, mode);
      if (n.level() == 1) {
        out.child = i;
        return out;
      }
      const PageId child = n.child(i);
      const Fences child_fences = n.ChildFences(i, out.fences);
      const uint16_t level = n.level();
      if (level == 2 && exclusive) {
        GROVE_ASSIGN_OR_RETURN(PageWriteGuard c, pool_->FetchWrite(child, cause, Retention::kHigh));
        GROVE_RETURN_IF_ERROR(CheckChild(options_.name.c_str(), out.id(), level, child, c.data()));
        if (path != nullptr) (*path)[1] = child;
        out.shared.Release();
        out.excl = std::move(c);
      } else {
        // A prefetched image is admitted only here, where the child pointer names exactly its page.
        GROVE_ASSIGN_OR_RETURN(PageReadGuard c,
                               pool_->FetchRead(child, cause, Retention::kHigh, batch));
        GROVE_RETURN_IF_ERROR(CheckChild(options_.name.c_str(), out.id(), level, child, c.data()));
        if (path != nullptr && level - 1 < predict::kMaxLevels) (*path)[level - 1] = child;
        out.shared = std::move(c);  // releases the parent after the child is latched
      }
      out.fences = child_fences;
    }
  }
}

Status BTreeCore::LatchPath(Slice key, Change change, std::vector<PageWriteGuard>* path,
                            Fences* fences) {
  return LatchPathIf(
      key,
      [&](const InnerNodeView& n) {
        return change == Change::kInsert ? n.free_bytes() >= RoomForChild(n.level())
                                         : RemoveSafe(n);
      },
      path, fences);
}

Status BTreeCore::LatchPathToReplace(Slice key, size_t cells, size_t cell_bytes,
                                     std::vector<PageWriteGuard>* path, Fences* fences) {
  // A level-1 node that takes all the new cells does not split; one that splits sends up fewer
  // separators than it has new cells, and so on upwards.
  return LatchPathIf(
      key,
      [&](const InnerNodeView& n) {
        return n.level() == 1 ? n.free_bytes() >= cell_bytes
                              : n.free_bytes() >= cells * RoomForChild(n.level());
      },
      path, fences);
}

Status BTreeCore::LatchPathIf(Slice key, const std::function<bool(const InnerNodeView&)>& safe,
                              std::vector<PageWriteGuard>* path, Fences* fences) {
  path->clear();
  Fences f;
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard g,
                         pool_->FetchWrite(root_, IoCause::kDemand, Retention::kHigh));
  path->push_back(std::move(g));
  for (;;) {
    const InnerNodeView n(path->back().data());
    if (n.level() == 1) {
      *fences = f;
      return Status::Ok();
    }
    const int i = n.ChildIndexFor(key);
    const PageId child = n.child(i);
    const Fences cf = n.ChildFences(i, f);
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard c,
                           pool_->FetchWrite(child, IoCause::kDemand, Retention::kHigh));
    GROVE_RETURN_IF_ERROR(
        CheckChild(options_.name.c_str(), path->back().id(), n.level(), child, c.data()));
    if (safe(InnerNodeView(c.data()))) path->clear();  // a change below cannot reach them
    path->push_back(std::move(c));
    f = cf;
  }
}

// --- Inserting a child ------------------------------------------------------------------------

StatusOr<PageWriteGuard> BTreeCore::NewInner(uint16_t level) {
  GROVE_ASSIGN_OR_RETURN(const PageId id, ctx_.allocator->Allocate(1));
  auto g = pool_->NewPage(id, kInnerPage, Retention::kHigh);
  if (!g.ok()) {
    ctx_.allocator->Free(id, 1);
    return g.status();
  }
  InnerNode::Format(g->mutable_data(), level);
  inner_pages_.fetch_add(1, std::memory_order_relaxed);
  return g;
}

void BTreeCore::FreeInner(PageWriteGuard& node) {
  const PageId id = node.id();
  node.Discard();
  ctx_.allocator->Free(id, 1);
  inner_pages_.fetch_sub(1, std::memory_order_relaxed);
}

Status BTreeCore::PlanInsert(const std::vector<PageWriteGuard>& path, size_t separator_len,
                             SplitPlan* plan) {
  // The same walk as InsertChild: a node without room splits (one new node) and passes a
  // separator up; the root grows (one new node) and then splits (another).
  for (size_t j = path.size(); j-- > 0;) {
    const InnerNodeView n(path[j].data());
    const size_t need = j + 1 == path.size()
                            ? SlottedPageView::CellBytes(separator_len, PayloadBytes(n.level()))
                            : RoomForChild(n.level());
    if (n.free_bytes() >= need) break;
    const int nodes = j == 0 && path[0].id() == root_ ? 2 : 1;
    for (int k = 0; k < nodes; ++k) {
      auto g = NewInner(n.level());
      if (!g.ok()) {
        ReleasePlan(plan);
        return g.status();
      }
      plan->spares.push_back(std::move(*g));
    }
  }
  return Status::Ok();
}

void BTreeCore::ReleasePlan(SplitPlan* plan) {
  for (PageWriteGuard& g : plan->spares) {
    if (g) FreeInner(g);
  }
  plan->spares.clear();
}

StatusOr<PageWriteGuard> BTreeCore::TakeSpare(SplitPlan* plan, uint16_t level) {
  for (PageWriteGuard& g : plan->spares) {
    if (g && InnerNodeView(g.data()).level() == level) return std::move(g);
  }
  return Status::Internal(
      fmt::format("{}: a split at level {} was not planned", options_.name, level));
}

Status BTreeCore::InsertChild(std::vector<PageWriteGuard>* path, SplitPlan* plan,
                              std::string separator, std::string payload) {
  Status s = [&]() -> Status {
    size_t i = path->size() - 1;
    for (;;) {
      InnerNode n((*path)[i].mutable_data());
      if (n.HasRoomFor(separator.size(), payload.size())) {
        n.InsertChild(separator, payload);
        return Status::Ok();
      }
      if (i == 0) {
        if ((*path)[0].id() != root_) {
          return Status::Internal(
              fmt::format("{}: a safe ancestor could not take a separator", options_.name));
        }
        GROVE_RETURN_IF_ERROR(GrowRoot(path, plan));
        i = 1;
        continue;
      }
      std::string up;
      PageId right;
      GROVE_RETURN_IF_ERROR(SplitInner((*path)[i], plan, separator, payload, &up, &right));
      separator = std::move(up);
      payload = EncodeChild(right);
      --i;
    }
  }();
  ReleasePlan(plan);
  return s;
}

Status BTreeCore::SplitInner(PageWriteGuard& node, SplitPlan* plan, Slice key, Slice payload,
                             std::string* separator, PageId* right_id) {
  const InnerNodeView v(node.data());
  const uint16_t level = v.level();
  std::vector<Cell> cells;
  cells.reserve(v.count() + 1);
  bool inserted = false;
  for (int j = 0; j < v.count(); ++j) {
    if (!inserted && j > 0 && key < v.key(j)) {
      cells.emplace_back(key, payload);
      inserted = true;
    }
    cells.emplace_back(v.key(j), v.payload(j));
  }
  if (!inserted) cells.emplace_back(key, payload);
  const size_t m = SplitPoint(cells, v.capacity(), /*right_key_moves_up=*/true);
  if (m == 0) {
    return Status::Internal(
        fmt::format("{}: inner page {} cannot be split", options_.name, node.id()));
  }
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard right, TakeSpare(plan, level));
  InnerNode::Format(node.mutable_data(), level);
  SlottedPage l = InnerNode(node.mutable_data()).mutable_slots();
  for (size_t j = 0; j < m; ++j) l.Insert(l.count(), cells[j].first, cells[j].second);
  SlottedPage r = InnerNode(right.mutable_data()).mutable_slots();
  r.Insert(0, "", cells[m].second);  // the separator moves up; the right node starts below it
  for (size_t j = m + 1; j < cells.size(); ++j)
    r.Insert(r.count(), cells[j].first, cells[j].second);
  *separator = cells[m].first;
  *right_id = right.id();
  if (options_.observer) options_.observer->OnSplit(level, node.id(), *right_id);
  return Status::Ok();
}

Status BTreeCore::GrowRoot(std::vector<PageWriteGuard>* path, SplitPlan* plan) {
  PageWriteGuard& root = (*path)[0];
  const uint16_t level = InnerNodeView(root.data()).level();
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard child, TakeSpare(plan, level));
  // The child takes the root's whole content; only its own id differs.
  std::memcpy(child.mutable_data() + kPageHeaderSize, root.data() + kPageHeaderSize,
              kPageSize - kPageHeaderSize);
  char* r = root.mutable_data();
  page::Init(r, kInnerPage, root_);
  InnerNode::Format(r, level + 1);
  InnerNode(r).InsertChild("", EncodeChild(child.id()));
  height_.fetch_add(1, std::memory_order_relaxed);
  if (options_.observer) options_.observer->OnShapeChange();
  path->insert(path->begin() + 1, std::move(child));
  return Status::Ok();
}

// --- Replacing a range of children -----------------------------------------------------------

namespace {

size_t CellsBytes(const std::vector<Cell>& cells, size_t from, size_t to) {
  size_t b = 0;
  for (size_t j = from; j < to; ++j) {
    // A chunk's first cell keeps an empty key: its key moves up as the separator.
    b += SlottedPageView::CellBytes(cells[j].first.size(), cells[j].second.size());
  }
  return b;
}

// Splits `cells` into consecutive chunks that each fit `capacity` (counting every chunk's first
// key as empty), as few as possible and about equally full. Returns the chunk starts.
std::vector<size_t> Chunk(const std::vector<Cell>& cells, size_t capacity) {
  const size_t total = CellsBytes(cells, 0, cells.size());
  for (size_t k = std::max<size_t>(1, (total + capacity - 1) / capacity);; ++k) {
    const size_t target = (total + k - 1) / k;
    std::vector<size_t> starts = {0};
    size_t bytes = 0;
    bool fits = true;
    for (size_t j = 0; j < cells.size(); ++j) {
      const size_t key = j == starts.back() ? 0 : cells[j].first.size();
      const size_t cell = SlottedPageView::CellBytes(key, cells[j].second.size());
      if (j > starts.back() && (bytes + cell > capacity || bytes >= target)) {
        starts.push_back(j);
        bytes = SlottedPageView::CellBytes(0, cells[j].second.size());
        continue;
      }
      bytes += cell;
      if (bytes > capacity) fits = false;
    }
    if (fits && starts.size() <= k) return starts;
  }
}

// Writes `cells[from, to)` into a formatted inner node; the first cell's key goes in empty.
void FillInner(char* page, uint16_t level, const std::vector<Cell>& cells, size_t from, size_t to) {
  InnerNode::Format(page, level);
  SlottedPage sp = InnerNode(page).mutable_slots();
  for (size_t j = from; j < to; ++j) {
    sp.Insert(sp.count(), j == from ? Slice() : Slice(cells[j].first), cells[j].second);
  }
}

}  // namespace

Status BTreeCore::ReplaceChildren(std::vector<PageWriteGuard>* path, int first, int count,
                                  std::vector<Cell> cells) {
  const InnerNodeView p(path->back().data());
  if (first < 0 || count < 1 || first + count > p.count() || cells.empty()) {
    return Status::Internal(fmt::format("{}: replacing children [{}, {}) of a node of {}",
                                        options_.name, first, first + count, p.count()));
  }
  // The new cells of the level-1 node: its own up to `first`, the new children (the first keeps
  // the replaced range's lower bound), the rest of its own.
  std::vector<Cell> level;
  for (int j = 0; j < first; ++j) level.emplace_back(p.key(j), p.payload(j));
  cells[0].first.assign(p.key(first));
  for (Cell& c : cells) level.push_back(std::move(c));
  for (int j = first + count; j < p.count(); ++j) level.emplace_back(p.key(j), p.payload(j));

  // Dry run, bottom-up: how each level chunks, and so how many new nodes it needs; the payload of
  // a new node's cell in its parent is a page id, 8 bytes whatever the id.
  struct Step {
    std::vector<Cell> cells;
    std::vector<size_t> starts;
  };
  std::vector<Step> steps;
  bool grow = false;
  for (size_t i = path->size(); i-- > 0;) {
    const InnerNodeView n((*path)[i].data());
    Step step{std::move(level), {}};
    step.starts = Chunk(step.cells, n.capacity());
    const bool split = step.starts.size() > 1;
    if (split && i == 0 && (*path)[0].id() != root_) {
      return Status::Internal(
          fmt::format("{}: a replacement must split the top of a partial path", options_.name));
    }
    steps.push_back(std::move(step));
    if (!split) break;
    if (i == 0) {
      grow = true;
      break;
    }
    // The parent's cells for the next round: its own, with a placeholder cell for every new node
    // right after this node's.
    const InnerNodeView parent((*path)[i - 1].data());
    int at = -1;
    for (int j = 0; j < parent.count(); ++j) {
      if (parent.child(j) == (*path)[i].id()) at = j;
    }
    if (at < 0) {
      return Status::Internal(fmt::format("{}: page {} is not a child of {}", options_.name,
                                          (*path)[i].id(), (*path)[i - 1].id()));
    }
    std::vector<Cell> up;
    for (int j = 0; j <= at; ++j) up.emplace_back(parent.key(j), parent.payload(j));
    const Step& s = steps.back();
    for (size_t c = 1; c < s.starts.size(); ++c) {
      up.emplace_back(s.cells[s.starts[c]].first, EncodeChild(kInvalidPageId));
    }
    for (int j = at + 1; j < parent.count(); ++j) up.emplace_back(parent.key(j), parent.payload(j));
    level = std::move(up);
  }

  // Acquire every new node: per split level one per chunk beyond the first; a root that grows
  // gives its content to new children, one per chunk.
  std::vector<std::vector<PageWriteGuard>> fresh(steps.size());
  auto give_back = [&] {
    for (auto& v : fresh) {
      for (PageWriteGuard& g : v) FreeInner(g);
    }
  };
  for (size_t k = 0; k < steps.size(); ++k) {
    const size_t i = path->size() - 1 - k;
    const uint16_t lvl = InnerNodeView((*path)[i].data()).level();
    const size_t need = steps[k].starts.size() - 1 + (grow && k + 1 == steps.size() ? 1 : 0);
    for (size_t c = 0; c < need; ++c) {
      auto g = NewInner(lvl);
      if (!g.ok()) {
        give_back();
        return g.status();
      }
      fresh[k].push_back(std::move(*g));
    }
  }

  // Apply, bottom-up. Each split level's new nodes get their ids into the parent's cells.
  for (size_t k = 0; k < steps.size(); ++k) {
    const size_t i = path->size() - 1 - k;
    PageWriteGuard& node = (*path)[i];
    const uint16_t lvl = InnerNodeView(node.data()).level();
    Step& s = steps[k];
    const bool root_grows = grow && k + 1 == steps.size();
    // With the root growing, chunk 0 also goes to a new node and the root points at them all.
    std::vector<PageId> ids;
    size_t next_fresh = 0;
    for (size_t c = 0; c < s.starts.size(); ++c) {
      const size_t from = s.starts[c];
      const size_t to = c + 1 < s.starts.size() ? s.starts[c + 1] : s.cells.size();
      if (c == 0 && !root_grows) {
        FillInner(node.mutable_data(), lvl, s.cells, from, to);
        ids.push_back(node.id());
        continue;
      }
      PageWriteGuard& g = fresh[k][next_fresh++];
      FillInner(g.mutable_data(), lvl, s.cells, from, to);
      if (options_.observer && !root_grows) options_.observer->OnSplit(lvl, ids.back(), g.id());
      ids.push_back(g.id());
    }
    if (root_grows) {
      char* r = node.mutable_data();
      page::Init(r, kInnerPage, root_);
      InnerNode::Format(r, lvl + 1);
      SlottedPage sp = InnerNode(r).mutable_slots();
      for (size_t c = 0; c < ids.size(); ++c) {
        sp.Insert(sp.count(), c == 0 ? Slice() : Slice(s.cells[s.starts[c]].first),
                  EncodeChild(ids[c]));
      }
      height_.fetch_add(1, std::memory_order_relaxed);
      if (options_.observer) options_.observer->OnShapeChange();
      break;
    }
    if (k + 1 < steps.size()) {
      // The parent's placeholders for the new nodes, in order after this node's cell.
      std::vector<Cell>& up = steps[k + 1].cells;
      size_t c = 1;
      for (Cell& cell : up) {
        if (c < ids.size() && DecodeFixed64(cell.second.data()) == kInvalidPageId &&
            cell.first == s.cells[s.starts[c]].first) {
          cell.second = EncodeChild(ids[c++]);
        }
      }
    }
  }
  path->clear();
  return Status::Ok();
}

// --- Removing a child -------------------------------------------------------------------------

Status BTreeCore::RemoveChild(std::vector<PageWriteGuard>* path, int index, Slice key) {
  if (index < 1) {
    return Status::Internal(
        fmt::format("{}: the first child of a node cannot be removed", options_.name));
  }
  InnerNode(path->back().mutable_data()).RemoveChild(index);
  return Rebalance(path, key);
}

Status BTreeCore::Rebalance(std::vector<PageWriteGuard>* path, Slice key) {
  Status s;
  for (size_t i = path->size() - 1; i > 0 && s.ok(); --i) {
    // The levels below are done: let go of them before latching a sibling of this node.
    path->resize(i + 1);
    PageWriteGuard& node = (*path)[i];
    PageWriteGuard& parent = (*path)[i - 1];
    const InnerNodeView n(node.data());
    if (n.used_bytes() >= MinFill(n)) break;
    const InnerNodeView p(parent.data());
    const int pos = p.ChildIndexFor(key);
    if (p.child(pos) != node.id()) {
      s = Status::Internal(fmt::format("{}: page {} is not the child of {} for the key",
                                       options_.name, node.id(), parent.id()));
      break;
    }
    if (pos + 1 < p.count()) {
      auto right = pool_->FetchWrite(p.child(pos + 1), IoCause::kDemand, Retention::kHigh);
      if (!right.ok()) {
        s = right.status();
        break;
      }
      MergeInner(node, *right, parent, pos + 1);
    } else if (pos > 0) {
      // Left sibling: release the node first (left-to-right latch order). The parent stays
      // exclusive, so nobody can reach the node in between.
      const PageId node_id = node.id();
      node.Release();
      auto left = pool_->FetchWrite(p.child(pos - 1), IoCause::kDemand, Retention::kHigh);
      if (!left.ok()) {
        s = left.status();
        break;
      }
      auto again = pool_->FetchWrite(node_id, IoCause::kDemand, Retention::kHigh);
      if (!again.ok()) {
        s = again.status();
        break;
      }
      node = std::move(*again);
      MergeInner(*left, node, parent, pos);
    }
    // Otherwise the node is its parent's only child; the parent's own turn handles it.
  }
  if (s.ok() && !path->empty() && (*path)[0].id() == root_) {
    PageWriteGuard& top = (*path)[0];
    const InnerNodeView r(top.data());
    if (r.level() >= 2 && r.count() == 1) {
      // The root's only child may be a node this change still holds: let go of everything below
      // the root before ShrinkRoot latches it.
      path->resize(1);
      s = ShrinkRoot(top);
    }
  }
  path->clear();
  return s;
}

void BTreeCore::MergeInner(PageWriteGuard& left, PageWriteGuard& right, PageWriteGuard& parent,
                           int sep_index) {
  const InnerNodeView l(left.data()), r(right.data());
  const Slice sep = InnerNodeView(parent.data()).key(sep_index);
  // Right's first cell takes the separator as its key.
  if (r.used_bytes() + sep.size() > l.free_bytes()) return;  // does not fit: stay underfull
  SlottedPage lsp = InnerNode(left.mutable_data()).mutable_slots();
  lsp.Insert(lsp.count(), sep, r.payload(0));
  for (int j = 1; j < r.count(); ++j) lsp.Insert(lsp.count(), r.key(j), r.payload(j));
  const uint16_t level = l.level();
  InnerNode(parent.mutable_data()).RemoveChild(sep_index);
  const PageId right_id = right.id();
  FreeInner(right);
  if (options_.observer) options_.observer->OnMerge(level, right_id);
}

Status BTreeCore::ShrinkRoot(PageWriteGuard& root) {
  const PageId child_id = InnerNodeView(root.data()).child(0);
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard child,
                         pool_->FetchWrite(child_id, IoCause::kDemand, Retention::kHigh));
  GROVE_RETURN_IF_ERROR(CheckChild(options_.name.c_str(), root_, InnerNodeView(root.data()).level(),
                                   child_id, child.data()));
  char* r = root.mutable_data();
  page::Init(r, kInnerPage, root_);
  std::memcpy(r + kPageHeaderSize, child.data() + kPageHeaderSize, kPageSize - kPageHeaderSize);
  FreeInner(child);
  height_.fetch_sub(1, std::memory_order_relaxed);
  if (options_.observer) options_.observer->OnShapeChange();
  return Status::Ok();
}

}  // namespace grove::core
