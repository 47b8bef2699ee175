#include "index/aulid/slot.h"

#include <bit>

namespace grove::aulid {
namespace {

double DecodeDouble(const char* p) { return std::bit_cast<double>(DecodeFixed64(p)); }
void EncodeDouble(char* p, double v) { EncodeFixed64(p, std::bit_cast<uint64_t>(v)); }

}  // namespace

Slot DecodeSlot(const char* p) {
  Slot s;
  s.tag = static_cast<SlotTag>(static_cast<uint8_t>(p[0]));
  switch (s.tag) {
    case SlotTag::kNull:
      s.has_copy = p[1] != 0;
      if (s.has_copy) s.copy = DecodeEntry(p + 8);
      break;
    case SlotTag::kData:
      s.data = DecodeEntry(p + 8);
      break;
    case SlotTag::kPacked:
      s.cls = static_cast<uint8_t>(p[1]);
      s.count = DecodeFixed16(p + 2);
      s.object = DecodeFixed16(p + 4);
      s.slab = DecodeFixed64(p + 8);
      break;
    case SlotTag::kBranch:
      s.children = static_cast<uint8_t>(p[1]);
      for (uint32_t i = 0; i < kBranchChildren; ++i) s.child[i] = DecodeFixed64(p + 8 + 8 * i);
      for (uint32_t i = 0; i + 1 < kBranchChildren; ++i) s.pivot[i] = DecodeFixed64(p + 40 + 8 * i);
      break;
    case SlotTag::kMixed:
      s.mixed.depth = DecodeFixed32(p + 4);
      s.mixed.first = DecodeFixed64(p + 8);
      s.mixed.model.base = DecodeFixed64(p + 16);
      s.mixed.model.slope = DecodeDouble(p + 24);
      s.mixed.model.intercept = DecodeDouble(p + 32);
      s.mixed.model.slots = DecodeFixed64(p + 40);
      s.mixed.size = DecodeFixed32(p + 48);
      s.mixed.init_size = DecodeFixed32(p + 52);
      s.mixed.l3_items = DecodeFixed32(p + 56);
      break;
  }
  return s;
}

void EncodeSlot(char* p, const Slot& s) {
  std::memset(p, 0, kSlotBytes);
  p[0] = static_cast<char>(s.tag);
  switch (s.tag) {
    case SlotTag::kNull:
      if (s.has_copy) {
        p[1] = 1;
        EncodeEntry(p + 8, s.copy);
      }
      break;
    case SlotTag::kData:
      EncodeEntry(p + 8, s.data);
      break;
    case SlotTag::kPacked:
      p[1] = static_cast<char>(s.cls);
      EncodeFixed16(p + 2, static_cast<uint16_t>(s.count));
      EncodeFixed16(p + 4, static_cast<uint16_t>(s.object));
      EncodeFixed64(p + 8, s.slab);
      break;
    case SlotTag::kBranch:
      p[1] = static_cast<char>(s.children);
      for (uint32_t i = 0; i < kBranchChildren; ++i) EncodeFixed64(p + 8 + 8 * i, s.child[i]);
      for (uint32_t i = 0; i + 1 < kBranchChildren; ++i) EncodeFixed64(p + 40 + 8 * i, s.pivot[i]);
      break;
    case SlotTag::kMixed:
      EncodeFixed32(p + 4, s.mixed.depth);
      EncodeFixed64(p + 8, s.mixed.first);
      EncodeFixed64(p + 16, s.mixed.model.base);
      EncodeDouble(p + 24, s.mixed.model.slope);
      EncodeDouble(p + 32, s.mixed.model.intercept);
      EncodeFixed64(p + 40, s.mixed.model.slots);
      EncodeFixed32(p + 48, s.mixed.size);
      EncodeFixed32(p + 52, s.mixed.init_size);
      EncodeFixed32(p + 56, s.mixed.l3_items);
      break;
  }
}

}  // namespace grove::aulid
