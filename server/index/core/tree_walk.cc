// BTreeCore: walks over every inner node (Verify, SHORTCUT's shape collection) and the bulk
// building of the inner levels.

#include <fmt/format.h>

#include "index/core/tree.h"
#include "page/extent_allocator.h"

namespace grove::core {

// --- Verify -----------------------------------------------------------------------------------

Status BTreeCore::Verify(IndexVerifier* v, const LeafVisitor& leaf,
                         const LeavesAhead& before_leaves) {
  uint64_t inner = 0;
  GROVE_RETURN_IF_ERROR(VerifyNode(root_, static_cast<int>(height_.load()) - 1, Fences(), v, leaf,
                                   before_leaves, &inner));
  if (inner != inner_pages_.load()) {
    v->Problem(fmt::format("{}: {} inner nodes found, the counter says {}", options_.name, inner,
                           inner_pages_.load()));
  }
  return Status::Ok();
}

Status BTreeCore::VerifyNode(PageId id, int level, const Fences& f, IndexVerifier* v,
                             const LeafVisitor& leaf, const LeavesAhead& before_leaves,
                             uint64_t* inner) {
  auto g = pool_->FetchRead(id, IoCause::kScan, Retention::kHigh);
  if (!g.ok()) {
    v->Problem(
        fmt::format("{}: inner page {} unreadable: {}", options_.name, id, g.status().ToString()));
    return g.status().IsDataLoss() ? Status::Ok() : g.status();
  }
  v->ClaimPages(id, 1, options_.name + " inner node");
  ++*inner;
  const InnerNodeView n(g->data());
  if (page::Type(g->data()) != static_cast<uint16_t>(kInnerPage) || n.level() != level) {
    v->Problem(fmt::format("{}: page {} has type {} level {}, expected an inner node at level {}",
                           options_.name, id, page::Type(g->data()), n.level(), level));
    return Status::Ok();
  }
  if (std::string why = n.Check(PayloadBytes(n.level())); !why.empty()) {
    v->Problem(fmt::format("{}: inner page {}: {}", options_.name, id, why));
    return Status::Ok();
  }
  for (int i = 1; i < n.count(); ++i) {
    if (!f.Contains(n.key(i))) {
      v->Problem(fmt::format("{}: inner page {} cell {}: separator outside the node's fences",
                             options_.name, id, i));
    }
  }
  // Copy the children, then release the node before descending.
  std::vector<std::pair<std::string, Fences>> children;
  for (int i = 0; i < n.count(); ++i) children.emplace_back(n.payload(i), n.ChildFences(i, f));
  g->Release();
  if (level == 1 && before_leaves) {
    std::vector<std::string> payloads;
    payloads.reserve(children.size());
    for (const auto& [payload, cf] : children) payloads.push_back(payload);
    before_leaves(payloads);
  }
  for (auto& [payload, cf] : children) {
    if (level > 1) {
      GROVE_RETURN_IF_ERROR(
          VerifyNode(DecodeFixed64(payload.data()), level - 1, cf, v, leaf, before_leaves, inner));
    } else {
      GROVE_RETURN_IF_ERROR(leaf(payload, cf));
    }
  }
  return Status::Ok();
}

// --- SHORTCUT's training data -----------------------------------------------------------------

Status BTreeCore::CollectShape(predict::TreeSnapshot* snap, const LeafShape& leaves) {
  snap->levels.clear();
  const uint32_t height = height_.load();
  snap->levels.resize(height - 1);
  // Breadth first over the inner nodes, each child inheriting its fences from its parent (the
  // boundary key of a node is its lower fence). Copies bypass the cache so that training does not
  // change what is cached.
  struct Node {
    PageId id;
    Fences fences;
  };
  std::vector<Node> current = {{root_, Fences()}};
  AlignedBuffer buf(kPageSize);
  for (int level = static_cast<int>(height) - 1; level >= 1; --level) {
    std::vector<Node> next;
    predict::LevelSnapshot& ls = snap->levels[level - 1];
    for (const Node& it : current) {
      GROVE_RETURN_IF_ERROR(pool_->ReadCopy(it.id, buf.data(), IoCause::kScan));
      const InnerNodeView n(buf.data());
      if (n.level() != level) {
        return Status::Aborted(fmt::format(
            "{}: the tree changed shape while its models were collected", options_.name));
      }
      for (int i = 0; i < n.count(); ++i) {
        const Fences cf = n.ChildFences(i, it.fences);
        if (level > 1) next.push_back({n.child(i), cf});
        if (level == 1 && leaves) {
          leaves(n.payload(i), cf, &ls);
          continue;
        }
        ls.low_keys.push_back(cf.has_low ? Project(cf.low) : 0);
        ls.pages.push_back(n.child(i));
      }
    }
    current = std::move(next);
  }
  return Status::Ok();
}

// --- Bulk building ----------------------------------------------------------------------------

RunWriter::RunWriter(const IndexContext& ctx)
    : ctx_(ctx),
      cur_(ExtentAllocator::kMaxExtentPages * kPageSize),
      prev_(ExtentAllocator::kMaxExtentPages * kPageSize) {}

StatusOr<std::pair<PageId, char*>> RunWriter::Next() {
  GROVE_RETURN_IF_ERROR(WritePrev());
  if (first_ == kInvalidPageId || used_ == ExtentAllocator::kMaxExtentPages) {
    GROVE_ASSIGN_OR_RETURN(const PageId next,
                           ctx_.allocator->Allocate(ExtentAllocator::kMaxExtentPages));
    std::swap(cur_, prev_);
    prev_first_ = first_;
    prev_used_ = used_;
    first_ = next;
    used_ = 0;
  }
  const PageId id = first_ + used_;
  char* p = cur_.data() + used_ * kPageSize;
  ++used_;
  return std::make_pair(id, p);
}

Status RunWriter::Finish() {
  GROVE_RETURN_IF_ERROR(WritePrev());
  if (first_ == kInvalidPageId) return Status::Ok();
  if (used_ > 0) GROVE_RETURN_IF_ERROR(ctx_.direct_writer->WriteRun(first_, used_, cur_.data()));
  if (used_ < ExtentAllocator::kMaxExtentPages) {
    ctx_.allocator->Free(first_ + used_, ExtentAllocator::kMaxExtentPages - used_);
  }
  first_ = kInvalidPageId;
  return Status::Ok();
}

Status RunWriter::WritePrev() {
  if (prev_first_ == kInvalidPageId) return Status::Ok();
  const PageId first = std::exchange(prev_first_, kInvalidPageId);
  return ctx_.direct_writer->WriteRun(first, prev_used_, prev_.data());
}

Status BTreeCore::BuildAbove(std::vector<ChildRef> level, double fill_factor) {
  if (ctx_.direct_writer == nullptr) return Status::Internal("bulk load without a page writer");
  if (level.empty()) return Status::Internal("bulk load: no leaves to build on");
  const size_t target = static_cast<size_t>(
      fill_factor * (kPageSize - kInnerSlotBase - SlottedPageView::kRegionHeader));
  uint64_t inners = 1;  // the root
  uint16_t lvl = 1;
  for (;;) {
    std::vector<AlignedBuffer> nodes;
    std::vector<std::string> lows;
    for (ChildRef& c : level) {
      const bool start = nodes.empty() ||
                         InnerNodeView(nodes.back().data()).used_bytes() +
                                 SlottedPageView::CellBytes(c.low.size(), c.payload.size()) >
                             target ||
                         !InnerNode(nodes.back().data()).HasRoomFor(c.low.size(), c.payload.size());
      if (start) {
        nodes.emplace_back(kPageSize);
        page::Init(nodes.back().data(), kInnerPage, kInvalidPageId);
        InnerNode::Format(nodes.back().data(), lvl);
        InnerNode(nodes.back().data()).mutable_slots().Insert(0, "", c.payload);
        lows.push_back(std::move(c.low));
        continue;
      }
      SlottedPage sp = InnerNode(nodes.back().data()).mutable_slots();
      sp.Insert(sp.count(), c.low, c.payload);
    }
    if (nodes.size() == 1) {
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard root,
                             pool_->FetchWrite(root_, IoCause::kBulkLoad, Retention::kHigh));
      char* r = root.mutable_data();
      page::Init(r, kInnerPage, root_);
      std::memcpy(r + kPageHeaderSize, nodes[0].data() + kPageHeaderSize,
                  kPageSize - kPageHeaderSize);
      break;
    }
    // The nodes of one level go in contiguous runs: SHORTCUT maps a bulk-loaded level as one
    // extent.
    std::vector<ChildRef> next;
    RunWriter run(ctx_);
    for (size_t j = 0; j < nodes.size(); ++j) {
      GROVE_ASSIGN_OR_RETURN(auto slot, run.Next());
      std::memcpy(slot.second, nodes[j].data(), kPageSize);
      page::SetId(slot.second, slot.first);
      next.push_back({std::move(lows[j]), EncodeChild(slot.first)});
    }
    GROVE_RETURN_IF_ERROR(run.Finish());
    inners += nodes.size();
    level = std::move(next);
    ++lvl;
  }
  height_ = lvl + 1;
  inner_pages_ = inners;
  return Status::Ok();
}

}  // namespace grove::core
