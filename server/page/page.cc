#include "page/page.h"

#include <cstring>

#include <fmt/format.h>

#include "util/crc32c.h"

namespace grove {

const char* PageTypeName(uint16_t type) {
  switch (static_cast<PageType>(type)) {
    case PageType::kFree:
      return "free";
    case PageType::kSuperblock:
      return "superblock";
    case PageType::kEpochMap:
      return "epoch-map";
    case PageType::kBlob:
      return "blob";
  }
  return "index page";
}

namespace page {

void Init(char* p, PageType type, PageId id) {
  std::memset(p, 0, kPageSize);
  *reinterpret_cast<uint16_t*>(p + 4) = static_cast<uint16_t>(type);
  *reinterpret_cast<uint16_t*>(p + 6) = kPageFormatVersion;
  *reinterpret_cast<PageId*>(p + 8) = id;
}

void Seal(char* p, uint32_t epoch) {
  *reinterpret_cast<uint32_t*>(p + 16) = epoch;
  *reinterpret_cast<uint32_t*>(p) = crc32c::Mask(crc32c::Value(p + 4, kPageSize - 4));
}

Status Verify(const char* p, PageId expected_id) {
  const uint32_t actual = crc32c::Value(p + 4, kPageSize - 4);
  if (crc32c::Unmask(Crc(p)) != actual) {
    return Status::DataLoss(
        fmt::format("page {}: checksum mismatch (stored {:08x}, computed {:08x})", expected_id,
                    crc32c::Unmask(Crc(p)), actual));
  }
  if (Format(p) != kPageFormatVersion) {
    return Status::DataLoss(
        fmt::format("page {}: unknown page format version {}", expected_id, Format(p)));
  }
  if (Id(p) != expected_id) {
    return Status::DataLoss(
        fmt::format("page {}: misdirected read: the page found there says it is "
                    "page {}",
                    expected_id, Id(p)));
  }
  if (Type(p) == static_cast<uint16_t>(PageType::kFree)) {
    return Status::DataLoss(
        fmt::format("page {}: page was never written (type free)", expected_id));
  }
  return Status::Ok();
}

}  // namespace page
}  // namespace grove
