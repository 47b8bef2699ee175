// libFuzzer target: the page decoders (docs/reliability.md, "Fuzzing").
//
// Input: 8 bytes of expected page id, 1 byte of flags, then the page (zero padded to 4 KiB).
// Flag bit 0 reseals the page (a valid checksum over whatever the fuzzer wrote), so that the
// structural decoders behind the checksum are reached too: a checksummed page is trusted as
// a whole, so CheckStructure() must reject every page the accessors cannot walk safely.
//
// Checks, beyond "no crash, no UB": Verify() of a sealed, non-free page with its own id passes;
// after CheckStructure() accepts a B+-tree node, every slot's key and payload lie inside the page,
// keys ascend, lookups land in range, and leaf cells decode as the engine decodes them.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/value_cell.h"
#include "index/core/inner_node.h"
#include "index/core/leaf_node.h"
#include "page/page.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grove;
  if (size < 9) return 0;
  alignas(4096) static char page[kPageSize];
  const PageId id = DecodeFixed64(reinterpret_cast<const char*>(data)) % (uint64_t{1} << 40);
  const uint8_t flags = data[8];
  std::memset(page, 0, kPageSize);
  std::memcpy(page, data + 9, std::min(size - 9, kPageSize));
  if (flags & 1) page::Seal(page, page::Epoch(page));

  const Status verified = page::Verify(page, id);
  if (flags & 1) {
    // A sealed page fails only on its format version, its own id, or its type being kFree
    // (Verify() reports a page that was never written as damage).
    Check(verified.ok() || page::Format(page) != kPageFormatVersion || page::Id(page) != id ||
          page::Type(page) == static_cast<uint16_t>(PageType::kFree));
  }
  (void)PageTypeName(page::Type(page));

  // Read as a tree node of the core: an inner node (type 17) or a leaf (anything else).
  const bool inner = page::Type(page) == static_cast<uint16_t>(core::kInnerPage);
  const SlottedPageView slots(page, inner ? core::kInnerSlotBase : core::kLeafSlotBase);
  if (slots.CheckStructure()[0] != '\0') return 0;
  const int n = slots.count();
  Slice prev;
  for (int i = 0; i < n; ++i) {
    const Slice k = slots.Key(i), p = slots.Payload(i);
    Check(k.data() >= page && k.data() + k.size() <= page + kPageSize);
    Check(p.data() >= page && p.data() + p.size() <= page + kPageSize);
    Check(i == 0 || prev.compare(k) < 0);
    prev = k;
    if (inner && p.size() == 8) (void)core::InnerNodeView(page).child(i);
    if (!inner && IsValidCell(p) && IsBlobCell(p)) (void)DecodeBlobCell(p);
  }
  if (inner) (void)core::InnerNodeView(page).Check(8);
  (void)slots.FreeBytes();
  (void)slots.UsedBytes();
  // Lookups with keys taken from the input land on a valid slot index.
  const std::string probe(reinterpret_cast<const char*>(data), std::min<size_t>(size, 24));
  bool found = false;
  const int pos = slots.LowerBound(probe, &found);
  Check(pos >= 0 && pos <= n);
  if (inner) {
    const int child = core::InnerNodeView(page).ChildIndexFor(probe);
    Check(child >= -1 && child < n);
  }
  return 0;
}
