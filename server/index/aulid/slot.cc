#include "index/aulid/slot.h"

#include <bit>

namespace grove::aulid {
namespace {

// Tags as stored (slot.h).
enum RawTag : uint8_t {
  kRawNull = 0,
  kRawCopy = 1,
  kRawData = 2,
  kRawPacked = 3,
  kRawBranch = 4,
  kRawMixed = 5,
  kRawBranchExt = 6,
  kRawMixedExt = 7,
};

double DecodeDouble(const char* p) { return std::bit_cast<double>(DecodeFixed64(p)); }
void EncodeDouble(char* p, double v) { EncodeFixed64(p, std::bit_cast<uint64_t>(v)); }

uint8_t RawTagAt(const char* p, uint32_t i) {
  const size_t bit = 3 * size_t{i};
  const char* at = p + kSlotHeader + bit / 8;
  const uint32_t two =
      static_cast<uint8_t>(at[0]) | static_cast<uint32_t>(static_cast<uint8_t>(at[1])) << 8;
  return static_cast<uint8_t>((two >> (bit % 8)) & 7);
}

void SetRawTag(char* p, uint32_t i, uint8_t tag) {
  const size_t bit = 3 * size_t{i};
  char* at = p + kSlotHeader + bit / 8;
  uint32_t two = static_cast<uint8_t>(at[0]) | static_cast<uint32_t>(static_cast<uint8_t>(at[1]))
                                                   << 8;
  two = (two & ~(7u << (bit % 8))) | (uint32_t{tag} << (bit % 8));
  at[0] = static_cast<char>(two & 0xff);
  at[1] = static_cast<char>(two >> 8);
}

const char* SlotAt(const char* p, uint32_t i) {
  return p + LayoutFor(SlotPagePerPage(p)).slots_at + kSlotBytes * i;
}
char* SlotAt(char* p, uint32_t i) {
  return p + LayoutFor(SlotPagePerPage(p)).slots_at + kSlotBytes * i;
}
size_t DescriptorOffset(uint32_t d) { return kPageSize - kDescriptorBytes * (d + 1); }

void DecodeBranchDescriptor(const char* d, Slot* s) {
  for (uint32_t i = 0; i < kBranchChildren; ++i) s->child[i] = DecodeFixed64(d + 8 * i);
  for (uint32_t i = 0; i + 1 < kBranchChildren; ++i) s->pivot[i] = DecodeFixed64(d + 32 + 8 * i);
}

void DecodeMixedDescriptor(const char* d, MixedRef* m) {
  m->first = DecodeFixed64(d);
  m->model.base = DecodeFixed64(d + 8);
  m->model.slope = DecodeDouble(d + 16);
  m->model.intercept = DecodeDouble(d + 24);
  m->model.slots = DecodeFixed64(d + 32);
  m->size = DecodeFixed32(d + 40);
  m->init_size = DecodeFixed32(d + 44);
  m->l3_items = DecodeFixed32(d + 48);
}

void EncodeDescriptor(char* d, const Slot& s) {
  std::memset(d, 0, kDescriptorBytes);
  if (s.tag == SlotTag::kBranch) {
    for (uint32_t i = 0; i < kBranchChildren; ++i) EncodeFixed64(d + 8 * i, s.child[i]);
    for (uint32_t i = 0; i + 1 < kBranchChildren; ++i) EncodeFixed64(d + 32 + 8 * i, s.pivot[i]);
    return;
  }
  const MixedRef& m = s.mixed;
  EncodeFixed64(d, m.first);
  EncodeFixed64(d + 8, m.model.base);
  EncodeDouble(d + 16, m.model.slope);
  EncodeDouble(d + 24, m.model.intercept);
  EncodeFixed64(d + 32, m.model.slots);
  EncodeFixed32(d + 40, m.size);
  EncodeFixed32(d + 44, m.init_size);
  EncodeFixed32(d + 48, m.l3_items);
}

// The descriptor place slot `i` of page `p` holds now (kNone for slots without one, and for an
// in-page number the page cannot hold).
DescriptorPlace PlaceOf(const char* p, uint32_t i) {
  DescriptorPlace d;
  const char* q = SlotAt(p, i);
  switch (RawTagAt(p, i)) {
    case kRawBranch:
    case kRawMixed:
      if (static_cast<uint8_t>(q[0]) >= LayoutFor(SlotPagePerPage(p)).descriptors) break;
      d.kind = DescriptorPlace::kInPage;
      d.index = static_cast<uint8_t>(q[0]);
      break;
    case kRawBranchExt:
    case kRawMixedExt:
      d.kind = DescriptorPlace::kOutOfLine;
      d.slab = DecodeFixed64(q);
      d.object = DecodeFixed16(q + 8);
      break;
    default:
      break;
  }
  return d;
}

}  // namespace

bool SlotIsNull(const char* p, uint32_t i) {
  const uint8_t t = RawTagAt(p, i);
  return t == kRawNull || t == kRawCopy;
}

Slot DecodeSlot(const char* p, uint32_t i) {
  Slot s;
  const char* q = SlotAt(p, i);
  const uint8_t raw = RawTagAt(p, i);
  switch (raw) {
    case kRawNull:
      break;
    case kRawCopy:
      s.has_copy = true;
      s.copy = DecodeEntry(q);
      break;
    case kRawData:
      s.tag = SlotTag::kData;
      s.data = DecodeEntry(q);
      break;
    case kRawPacked:
      s.tag = SlotTag::kPacked;
      s.slab = DecodeFixed64(q);
      s.count = DecodeFixed16(q + 8);
      s.object = DecodeFixed16(q + 10);
      s.cls = static_cast<uint8_t>(q[12]);
      break;
    case kRawBranch:
    case kRawBranchExt:
    case kRawMixed:
    case kRawMixedExt:
      s.place = PlaceOf(p, i);
      if (s.place.kind == DescriptorPlace::kNone) {
        s.bad = true;
        break;
      }
      if (raw == kRawBranch || raw == kRawBranchExt) {
        s.tag = SlotTag::kBranch;
        if (raw == kRawBranch) {
          s.children = static_cast<uint8_t>(q[1]);
          DecodeBranchDescriptor(p + DescriptorOffset(s.place.index), &s);
        } else {
          s.children = static_cast<uint8_t>(q[10]);
          s.loaded = false;
        }
        break;
      }
      s.tag = SlotTag::kMixed;
      if (raw == kRawMixed) {
        s.mixed.per_page = DecodeFixed16(q + 2);
        s.mixed.depth = DecodeFixed32(q + 4);
        DecodeMixedDescriptor(p + DescriptorOffset(s.place.index), &s.mixed);
      } else {
        s.mixed.per_page = DecodeFixed16(q + 10);
        s.mixed.depth = DecodeFixed32(q + 12);
        s.loaded = false;
      }
      break;
  }
  return s;
}

void LoadDescriptor(const char* object, Slot* s) {
  if (s->tag == SlotTag::kBranch) {
    DecodeBranchDescriptor(object, s);
  } else {
    DecodeMixedDescriptor(object, &s->mixed);
  }
  s->loaded = true;
}

void StoreDescriptor(char* object, const Slot& s) { EncodeDescriptor(object, s); }

bool PlaceSlot(char* p, uint32_t i, Slot* s, DescriptorPlace* freed) {
  *freed = DescriptorPlace();
  const DescriptorPlace old = PlaceOf(p, i);
  uint64_t used = SlotPageDescriptorsUsed(p);
  if (s->HasDescriptor()) {
    if (s->place.kind != DescriptorPlace::kOutOfLine) {
      if (old.kind == DescriptorPlace::kInPage) {
        s->place = old;
      } else if (old.kind == DescriptorPlace::kOutOfLine) {
        s->place = old;
      } else {
        const uint32_t fit = LayoutFor(SlotPagePerPage(p)).descriptors;
        const uint32_t d = static_cast<uint32_t>(std::countr_one(used));
        if (d >= fit) return false;
        s->place = DescriptorPlace{DescriptorPlace::kInPage, d, kInvalidPageId, 0};
      }
    }
    if (old.kind == DescriptorPlace::kOutOfLine && !(s->place == old)) *freed = old;
    if (old.kind == DescriptorPlace::kInPage && s->place.kind != DescriptorPlace::kInPage) {
      used &= ~(uint64_t{1} << old.index);
    }
  } else {
    if (old.kind == DescriptorPlace::kInPage) used &= ~(uint64_t{1} << old.index);
    if (old.kind == DescriptorPlace::kOutOfLine) *freed = old;
  }
  char* q = SlotAt(p, i);
  std::memset(q, 0, kSlotBytes);
  uint8_t raw = kRawNull;
  switch (s->tag) {
    case SlotTag::kNull:
      if (s->has_copy) {
        raw = kRawCopy;
        EncodeEntry(q, s->copy);
      }
      break;
    case SlotTag::kData:
      raw = kRawData;
      EncodeEntry(q, s->data);
      break;
    case SlotTag::kPacked:
      raw = kRawPacked;
      EncodeFixed64(q, s->slab);
      EncodeFixed16(q + 8, static_cast<uint16_t>(s->count));
      EncodeFixed16(q + 10, static_cast<uint16_t>(s->object));
      q[12] = static_cast<char>(s->cls);
      break;
    case SlotTag::kBranch:
    case SlotTag::kMixed: {
      const bool branch = s->tag == SlotTag::kBranch;
      if (s->place.kind == DescriptorPlace::kInPage) {
        raw = branch ? kRawBranch : kRawMixed;
        used |= uint64_t{1} << s->place.index;
        q[0] = static_cast<char>(s->place.index);
        if (branch) {
          q[1] = static_cast<char>(s->children);
        } else {
          EncodeFixed16(q + 2, static_cast<uint16_t>(s->mixed.per_page));
          EncodeFixed32(q + 4, s->mixed.depth);
        }
        EncodeDescriptor(p + DescriptorOffset(s->place.index), *s);
      } else {
        raw = branch ? kRawBranchExt : kRawMixedExt;
        EncodeFixed64(q, s->place.slab);
        EncodeFixed16(q + 8, static_cast<uint16_t>(s->place.object));
        if (branch) {
          q[10] = static_cast<char>(s->children);
        } else {
          EncodeFixed16(q + 10, static_cast<uint16_t>(s->mixed.per_page));
          EncodeFixed32(q + 12, s->mixed.depth);
        }
      }
      break;
    }
  }
  SetRawTag(p, i, raw);
  EncodeFixed64(p + 48, used);
  return true;
}

}  // namespace grove::aulid
