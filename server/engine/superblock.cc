#include "engine/superblock.h"

#include <cstring>

#include <fmt/format.h>

#include "page/page.h"
#include "util/coding.h"

namespace grove {
namespace {

constexpr char kMagic[8] = {'G', 'R', 'O', 'V', 'E', 'D', 'B', '\0'};
constexpr size_t kMaxVariant = 64;
constexpr size_t kMaxLayout = 2048;

}  // namespace

Status WriteSuperblock(File* file, const Superblock& sb) {
  if (sb.variant.size() > kMaxVariant || sb.layout.size() > kMaxLayout) {
    return Status::InvalidArgument("superblock: variant name or layout parameters too long");
  }
  AlignedBuffer buf(kPageSize);
  char* p = buf.data();
  const PageId slot = sb.epoch % 2;
  page::Init(p, PageType::kSuperblock, slot);
  std::memcpy(p + 24, kMagic, 8);
  EncodeFixed32(p + 32, sb.format);
  EncodeFixed32(p + 36, static_cast<uint32_t>(kPageSize));
  EncodeFixed64(p + 40, sb.epoch);
  EncodeFixed64(p + 48, sb.manifest_size);
  EncodeFixed32(p + 56, sb.manifest_crc);
  EncodeFixed64(p + 64, sb.created_unix);
  size_t off = 72;
  EncodeFixed16(p + off, static_cast<uint16_t>(sb.variant.size()));
  std::memcpy(p + off + 2, sb.variant.data(), sb.variant.size());
  off += 2 + sb.variant.size();
  EncodeFixed16(p + off, static_cast<uint16_t>(sb.layout.size()));
  std::memcpy(p + off + 2, sb.layout.data(), sb.layout.size());
  page::Seal(p, static_cast<uint32_t>(sb.epoch));
  GROVE_RETURN_IF_ERROR(file->Write(slot * kPageSize, Slice(p, kPageSize)));
  return file->Sync();
}

StatusOr<std::optional<Superblock>> ReadSuperblock(File* file, std::string* problems) {
  AlignedBuffer buf(2 * kPageSize);
  size_t got = 0;
  GROVE_RETURN_IF_ERROR(file->Read(0, 2 * kPageSize, buf.data(), &got));
  std::optional<Superblock> best;
  for (PageId slot = 0; slot < 2; ++slot) {
    const char* p = buf.data() + slot * kPageSize;
    if (got < (slot + 1) * kPageSize) {
      *problems += fmt::format("slot {}: missing; ", slot);
      continue;
    }
    if (Status s = page::Verify(p, slot); !s.ok()) {
      *problems += fmt::format("slot {}: {}; ", slot, s.message());
      continue;
    }
    if (std::memcmp(p + 24, kMagic, 8) != 0 ||
        page::Type(p) != static_cast<uint16_t>(PageType::kSuperblock)) {
      *problems += fmt::format("slot {}: not a Grove superblock; ", slot);
      continue;
    }
    Superblock sb;
    sb.format = DecodeFixed32(p + 32);
    const uint32_t page_size = DecodeFixed32(p + 36);
    sb.epoch = DecodeFixed64(p + 40);
    sb.manifest_size = DecodeFixed64(p + 48);
    sb.manifest_crc = DecodeFixed32(p + 56);
    sb.created_unix = DecodeFixed64(p + 64);
    size_t off = 72;
    const uint16_t vlen = DecodeFixed16(p + off);
    if (vlen > kMaxVariant || page_size != kPageSize || sb.epoch % 2 != slot) {
      *problems += fmt::format("slot {}: inconsistent fields; ", slot);
      continue;
    }
    sb.variant.assign(p + off + 2, vlen);
    off += 2 + vlen;
    const uint16_t llen = DecodeFixed16(p + off);
    if (llen > kMaxLayout || off + 2 + llen > kPageSize) {
      *problems += fmt::format("slot {}: inconsistent fields; ", slot);
      continue;
    }
    sb.layout.assign(p + off + 2, llen);
    if (!best || sb.epoch > best->epoch) best = std::move(sb);
  }
  return best;
}

}  // namespace grove
