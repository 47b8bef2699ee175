#include "index/core/leaf_node.h"

#include <fmt/format.h>

namespace grove::core {

void Leaf::Format(char* p) {
  std::memset(p + kLeafLevelOffset, 0, kLeafSlotBase - kLeafLevelOffset);
  SlottedPage::Init(p, kLeafSlotBase);
}

LeafPut PutInLeaf(PageWriteGuard& leaf, Slice key, Slice cell,
                  std::optional<std::string>* old_cell) {
  SlottedPage sp = Leaf(leaf.mutable_data()).mutable_slots();
  bool found;
  const int i = sp.LowerBound(key, &found);
  if (found && sp.CanReplacePayload(i, cell.size())) {
    old_cell->emplace(sp.Payload(i));
    sp.ReplacePayload(i, cell);
    return LeafPut::kReplaced;
  }
  if (!found && sp.HasRoomFor(key.size(), cell.size())) {
    sp.Insert(i, key, cell);
    return LeafPut::kInserted;
  }
  return LeafPut::kNoRoom;
}

StatusOr<std::string> SplitLeaf(PageWriteGuard& leaf, PageWriteGuard& fresh, PageWriteGuard& next,
                                Slice key, Slice cell) {
  const LeafView v(leaf.data());
  if (v.right() != (next ? next.id() : kInvalidPageId)) {
    return Status::Internal(
        fmt::format("leaf {} split without its right sibling {}", leaf.id(), v.right()));
  }
  // Every cell plus the new one, in order. A page holds at most 4 KiB, so this is cheap next to
  // the IO a split implies, and it keeps variable-size splitting simple.
  std::vector<Cell> cells;
  cells.reserve(v.count() + 1);
  bool inserted = false;
  for (int j = 0; j < v.count(); ++j) {
    if (!inserted && key < v.key(j)) {
      cells.emplace_back(key, cell);
      inserted = true;
    }
    cells.emplace_back(v.key(j), v.cell(j));
  }
  if (!inserted) cells.emplace_back(key, cell);
  const size_t m = SplitPoint(cells, v.capacity(), /*right_key_moves_up=*/false);
  if (m == 0) return Status::Internal(fmt::format("leaf {} cannot be split in two", leaf.id()));

  Leaf left(leaf.mutable_data()), right(fresh.mutable_data());
  SlottedPage lsp = left.mutable_slots();
  lsp.Clear();
  for (size_t j = 0; j < m; ++j) lsp.Insert(lsp.count(), cells[j].first, cells[j].second);
  SlottedPage rsp = right.mutable_slots();
  for (size_t j = m; j < cells.size(); ++j)
    rsp.Insert(rsp.count(), cells[j].first, cells[j].second);
  // Link `fresh` between this leaf and its old right sibling (left-to-right latch order).
  right.set_left(leaf.id());
  right.set_right(next ? next.id() : kInvalidPageId);
  left.set_right(fresh.id());
  if (next) Leaf(next.mutable_data()).set_left(fresh.id());
  return ShortestSeparator(cells[m - 1].first, cells[m].first);
}

bool MergeLeaves(PageWriteGuard& left, PageWriteGuard& right, PageWriteGuard& next) {
  const LeafView l(left.data()), r(right.data());
  if (r.used_bytes() > l.free_bytes()) return false;
  Leaf ln(left.mutable_data()), rn(right.mutable_data());
  SlottedPage lsp = ln.mutable_slots();
  SlottedPage rsp = rn.mutable_slots();
  rsp.MoveTailTo(0, &lsp);
  ln.set_right(next ? next.id() : kInvalidPageId);
  if (next) Leaf(next.mutable_data()).set_left(left.id());
  return true;
}

std::string CheckLeaf(const char* page, const Fences& fences) {
  const LeafView n(page);
  if (page::Type(page) != static_cast<uint16_t>(kLeafPage) || n.level() != 0) {
    return fmt::format("type {} level {}, expected a leaf", page::Type(page), n.level());
  }
  if (const char* why = n.slots().CheckStructure(); *why) return why;
  for (int i = 0; i < n.count(); ++i) {
    if (!fences.Contains(n.key(i))) return fmt::format("slot {}: key outside the leaf's fences", i);
  }
  return "";
}

}  // namespace grove::core
