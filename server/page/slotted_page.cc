#include "page/slotted_page.h"

#include <cstring>
#include <vector>

namespace grove {

Slice SlottedPageView::Key(int i) const {
  const uint16_t off = SlotOffset(i);
  return Slice(p_ + off + kCellHeader, U16(off));
}

Slice SlottedPageView::Payload(int i) const {
  const uint16_t off = SlotOffset(i);
  return Slice(p_ + off + kCellHeader + U16(off), U16(off + 2));
}

int SlottedPageView::LowerBound(Slice key, bool* found) const {
  int lo = 0, hi = count();
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (Key(mid) < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  *found = lo < count() && Key(lo) == key;
  return lo;
}

size_t SlottedPageView::FreeBytes() const { return cell_start() - SlotsEnd() + frag_bytes(); }

size_t SlottedPageView::UsedBytes() const { return Capacity() - FreeBytes(); }

const char* SlottedPageView::CheckOffsets() const {
  if (SlotsEnd() > kPageSize) return "slot array runs past the page";
  if (cell_start() < SlotsEnd() || cell_start() > kPageSize) return "cell area overlaps the slots";
  size_t live = 0;
  for (int i = 0; i < count(); ++i) {
    const size_t off = SlotOffset(i);
    if (off < cell_start() || off + kCellHeader > kPageSize) return "slot points outside cell area";
    const size_t len = kCellHeader + U16(off) + U16(off + 2);
    if (off + len > kPageSize) return "cell runs past the page";
    live += len;
  }
  if (live + frag_bytes() != kPageSize - cell_start()) return "cell accounting does not add up";
  return "";
}

const char* SlottedPageView::CheckStructure() const {
  if (const char* why = CheckOffsets(); *why != 0) return why;
  for (int i = 1; i < count(); ++i) {
    if (!(Key(i - 1) < Key(i))) return "keys not strictly ascending";
  }
  return "";
}

void SlottedPage::Init(char* page, uint16_t base) {
  std::memset(page + base, 0, kRegionHeader);
  const auto cell_start = static_cast<uint16_t>(kPageSize);  // `base` may be odd: see U16()
  std::memcpy(page + base + 2, &cell_start, sizeof(cell_start));
}

uint16_t SlottedPage::Allocate(size_t n) {
  if (cell_start() < SlotsEnd() + kSlotSize + n) Compact();
  const auto off = static_cast<uint16_t>(cell_start() - n);
  SetU16(base_ + 2, off);
  return off;
}

void SlottedPage::Insert(int i, Slice key, Slice payload) {
  const size_t n = kCellHeader + key.size() + payload.size();
  const uint16_t off = Allocate(n);
  SetU16(off, static_cast<uint16_t>(key.size()));
  SetU16(off + 2, static_cast<uint16_t>(payload.size()));
  std::memcpy(p_ + off + kCellHeader, key.data(), key.size());
  std::memcpy(p_ + off + kCellHeader + key.size(), payload.data(), payload.size());
  char* slots = p_ + base_ + kRegionHeader;
  std::memmove(slots + kSlotSize * (i + 1), slots + kSlotSize * i, kSlotSize * (count() - i));
  SetU16(base_, count() + 1);
  SetU16(base_ + kRegionHeader + kSlotSize * i, off);
}

void SlottedPage::Remove(int i) {
  const uint16_t off = SlotOffset(i);
  const size_t len = kCellHeader + U16(off) + U16(off + 2);
  if (off == cell_start()) {
    SetU16(base_ + 2, static_cast<uint16_t>(off + len));
  } else {
    SetU16(base_ + 4, static_cast<uint16_t>(frag_bytes() + len));
  }
  char* slots = p_ + base_ + kRegionHeader;
  std::memmove(slots + kSlotSize * i, slots + kSlotSize * (i + 1), kSlotSize * (count() - i - 1));
  SetU16(base_, count() - 1);
}

bool SlottedPage::CanReplacePayload(int i, size_t new_len) const {
  const size_t old_len = Payload(i).size();
  return new_len <= old_len || FreeBytes() >= new_len - old_len;
}

void SlottedPage::ReplacePayload(int i, Slice payload) {
  const uint16_t off = SlotOffset(i);
  if (payload.size() == U16(off + 2)) {
    std::memcpy(p_ + off + kCellHeader + U16(off), payload.data(), payload.size());
    return;
  }
  // Copy the key first: Remove/Insert may compact over it.
  char key_buf[kPageSize];
  const Slice old_key = Key(i);
  std::memcpy(key_buf, old_key.data(), old_key.size());
  const Slice key(key_buf, old_key.size());
  Remove(i);
  Insert(i, key, payload);
}

void SlottedPage::Compact() {
  char buf[kPageSize];
  size_t end = kPageSize;
  const int n = count();
  for (int i = 0; i < n; ++i) {
    const uint16_t off = SlotOffset(i);
    const size_t len = kCellHeader + U16(off) + U16(off + 2);
    end -= len;
    std::memcpy(buf + end, p_ + off, len);
    SetU16(base_ + kRegionHeader + kSlotSize * i, static_cast<uint16_t>(end));
  }
  std::memcpy(p_ + end, buf + end, kPageSize - end);
  SetU16(base_ + 2, static_cast<uint16_t>(end));
  SetU16(base_ + 4, 0);
}

void SlottedPage::MoveTailTo(int from, SlottedPage* dst) {
  const int n = count();
  for (int i = from; i < n; ++i) dst->Insert(dst->count(), Key(i), Payload(i));
  for (int i = n - 1; i >= from; --i) Remove(i);
  Compact();
}

}  // namespace grove
