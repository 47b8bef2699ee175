#include "engine/value_store.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "util/crc32c.h"

namespace grove {

void ValueStore::FillPage(char* p, PageId id, uint32_t index, Slice value) {
  page::Init(p, PageType::kBlob, id);
  page::SetAux(p, index);
  const size_t off = static_cast<size_t>(index) * kBlobChunk;
  const size_t n = std::min(kBlobChunk, value.size() - off);
  std::memcpy(p + kPageHeaderSize, value.data() + off, n);
}

BlobRef ValueStore::MakeRef(PageId first, Slice value) {
  return BlobRef{first, static_cast<uint32_t>(value.size()),
                 crc32c::Mask(crc32c::Value(value.data(), value.size()))};
}

StatusOr<std::string> ValueStore::Write(Slice value, const CellMeta& meta) {
  const BlobRef probe{0, static_cast<uint32_t>(value.size()), 0};
  const uint32_t n = probe.pages();
  GROVE_ASSIGN_OR_RETURN(const PageId first, allocator_->Allocate(n));
  for (uint32_t i = 0; i < n; ++i) {
    auto g = pool_->NewPage(first + i, PageType::kBlob);
    if (!g.ok()) {
      for (uint32_t j = 0; j < i; ++j) pool_->Discard(first + j);
      allocator_->Free(first, n);
      return g.status();
    }
    FillPage(g->mutable_data(), first + i, i, value);
  }
  values_.fetch_add(1, std::memory_order_relaxed);
  pages_.fetch_add(n, std::memory_order_relaxed);
  return BlobCell(MakeRef(first, value), meta);
}

StatusOr<std::string> ValueStore::WriteDirect(Slice value, const CellMeta& meta) {
  const BlobRef probe{0, static_cast<uint32_t>(value.size()), 0};
  const uint32_t n = probe.pages();
  GROVE_ASSIGN_OR_RETURN(const PageId first, allocator_->Allocate(n));
  AlignedBuffer buf(static_cast<size_t>(n) * kPageSize);
  for (uint32_t i = 0; i < n; ++i) FillPage(buf.data() + i * kPageSize, first + i, i, value);
  Status s = direct_->WriteRun(first, n, buf.data());
  if (!s.ok()) {
    allocator_->Free(first, n);
    return s;
  }
  values_.fetch_add(1, std::memory_order_relaxed);
  pages_.fetch_add(n, std::memory_order_relaxed);
  return BlobCell(MakeRef(first, value), meta);
}

Status ValueStore::Read(const BlobRef& ref, IoCause cause, std::string* value) {
  const uint32_t n = ref.pages();
  if (n == 0 || n > ExtentAllocator::kMaxExtentPages) {
    return Status::DataLoss(
        fmt::format("blob at page {}: impossible length {}", ref.first, ref.length));
  }
  std::vector<PageId> ids(n);
  for (uint32_t i = 0; i < n; ++i) ids[i] = ref.first + i;
  if (n > 1) GROVE_RETURN_IF_ERROR(pool_->LoadMany(ids, cause));
  value->resize(ref.length);
  for (uint32_t i = 0; i < n; ++i) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(ids[i], cause));
    if (page::Type(g.data()) != static_cast<uint16_t>(PageType::kBlob) ||
        page::Aux(g.data()) != i) {
      return Status::DataLoss(
          fmt::format("blob at page {}: page {} is not its part {}", ref.first, ids[i], i));
    }
    const size_t off = static_cast<size_t>(i) * kBlobChunk;
    std::memcpy(value->data() + off, g.data() + kPageHeaderSize,
                std::min(kBlobChunk, static_cast<size_t>(ref.length) - off));
  }
  if (crc32c::Mask(crc32c::Value(value->data(), value->size())) != ref.masked_crc) {
    return Status::DataLoss(fmt::format("blob at page {}: value checksum mismatch", ref.first));
  }
  return Status::Ok();
}

void ValueStore::Free(const BlobRef& ref) {
  const uint32_t n = ref.pages();
  for (uint32_t i = 0; i < n; ++i) pool_->Discard(ref.first + i);
  allocator_->Free(ref.first, n);
  values_.fetch_sub(1, std::memory_order_relaxed);
  pages_.fetch_sub(n, std::memory_order_relaxed);
}

}  // namespace grove
