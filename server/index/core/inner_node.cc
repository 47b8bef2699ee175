#include "index/core/inner_node.h"

#include <algorithm>

#include <fmt/format.h>

namespace grove::core {

Fences Fences::Between(const std::string* new_low, const std::string* new_high) const {
  Fences f = *this;
  if (new_low != nullptr) {
    f.low = *new_low;
    f.has_low = true;
  }
  if (new_high != nullptr) {
    f.high = *new_high;
    f.has_high = true;
  }
  return f;
}

Fences InnerNodeView::ChildFences(int i, const Fences& mine) const {
  Fences f = mine;
  if (i > 0) {
    f.low.assign(key(i));
    f.has_low = true;
  }
  if (i + 1 < count()) {
    f.high.assign(key(i + 1));
    f.has_high = true;
  }
  return f;
}

std::string InnerNodeView::Check(size_t payload_bytes) const {
  if (const char* why = slots().CheckStructure(); *why) return why;
  if (count() == 0) return "inner node without children";
  if (!key(0).empty()) return "first cell of an inner node has a non-empty key";
  for (int i = 0; i < count(); ++i) {
    if (payload(i).size() != payload_bytes) {
      return fmt::format("cell {} has a payload of {} bytes, expected {}", i, payload(i).size(),
                         payload_bytes);
    }
    if (child(i) == kInvalidPageId) return fmt::format("cell {} has a null child", i);
  }
  return "";
}

void InnerNode::Format(char* p, uint16_t level) {
  std::memset(p + kInnerLevelOffset, 0, kInnerSlotBase - kInnerLevelOffset);
  EncodeFixed16(p + kInnerLevelOffset, level);
  SlottedPage::Init(p, kInnerSlotBase);
}

void InnerNode::InsertChild(Slice separator, Slice payload) {
  bool found;
  const int pos = slots().LowerBound(separator, &found);
  mutable_slots().Insert(pos, separator, payload);
}

size_t SplitPoint(const std::vector<Cell>& cells, size_t capacity, bool right_key_moves_up) {
  std::vector<size_t> prefix(cells.size() + 1, 0);
  for (size_t j = 0; j < cells.size(); ++j) {
    prefix[j + 1] =
        prefix[j] + SlottedPageView::CellBytes(cells[j].first.size(), cells[j].second.size());
  }
  // The first point past the middle is not enough: with cells near the largest the options
  // allow, the cell that crosses the middle can push the left half past a page.
  size_t best = 0, best_gap = SIZE_MAX;
  for (size_t m = 1; m < cells.size(); ++m) {
    const size_t left = prefix[m];
    const size_t right =
        prefix.back() - prefix[m] - (right_key_moves_up ? cells[m].first.size() : 0);
    if (left > capacity || right > capacity) continue;
    const size_t gap = left > right ? left - right : right - left;
    if (gap < best_gap) {
      best_gap = gap;
      best = m;
    }
  }
  return best;
}

std::string ShortestSeparator(Slice a, Slice b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return std::string(b.substr(0, std::min(b.size(), i + 1)));
}

}  // namespace grove::core
