#include "engine/double_write.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "util/coding.h"
#include "util/crc32c.h"

namespace grove {
namespace {

// Version 2 extends the trailer's crc over the images; version 1 (the crc skips them) is still
// read.
constexpr char kHeaderMagic[8] = {'G', 'R', 'O', 'V', 'E', 'D', 'W', '2'};
constexpr char kHeaderMagicV1[8] = {'G', 'R', 'O', 'V', 'E', 'D', 'W', '1'};
constexpr char kTrailerMagic[8] = {'G', 'R', 'O', 'V', 'E', 'D', 'W', 'T'};
constexpr size_t kIdsPerDirPage = kPageSize / 8;
constexpr size_t kMaxRunBytes = 1 << 20;

size_t RoundUp(size_t n) { return (n + kPageSize - 1) / kPageSize * kPageSize; }
size_t DirPages(size_t count) { return (count + kIdsPerDirPage - 1) / kIdsPerDirPage; }

// Calls fn(first index, run length) for maximal runs of consecutive ids adjacent in memory.
template <typename Fn>
void ForEachRun(const PageImages& pages, bool need_consecutive_ids, Fn fn) {
  size_t i = 0;
  while (i < pages.size()) {
    size_t j = i + 1;
    while (j < pages.size() && (j - i) * kPageSize < kMaxRunBytes &&
           pages[j].second == pages[j - 1].second + kPageSize &&
           (!need_consecutive_ids || pages[j].first == pages[j - 1].first + 1)) {
      ++j;
    }
    fn(i, j - i);
    i = j;
  }
}

}  // namespace

PageImages DoubleWriteBatch::pages() const {
  PageImages out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) out.push_back({ids[i], image(i)});
  return out;
}

Status WriteDoubleWrite(File* file, uint64_t epoch, const PageImages& pages, Slice manifest) {
  const size_t n = pages.size();
  const size_t dir_pages = DirPages(n);
  const size_t manifest_bytes = RoundUp(manifest.size());
  const uint64_t total = (1 + dir_pages + n + 1) * kPageSize + manifest_bytes;
  GROVE_RETURN_IF_ERROR(file->Allocate(0, total));

  AlignedBuffer head((1 + dir_pages) * kPageSize);
  std::memcpy(head.data(), kHeaderMagic, 8);
  EncodeFixed64(head.data() + 8, epoch);
  EncodeFixed64(head.data() + 16, n);
  EncodeFixed64(head.data() + 24, manifest.size());
  EncodeFixed32(head.data() + 32, crc32c::Mask(crc32c::Value(head.data(), 32)));
  for (size_t i = 0; i < n; ++i) EncodeFixed64(head.data() + kPageSize + i * 8, pages[i].first);
  GROVE_RETURN_IF_ERROR(file->Write(0, Slice(head.data(), head.size())));

  uint64_t off = head.size();
  Status s;
  ForEachRun(pages, /*need_consecutive_ids=*/false, [&](size_t first, size_t count) {
    if (!s.ok()) return;
    s = file->Write(off, Slice(pages[first].second, count * kPageSize));
    off += count * kPageSize;
  });
  GROVE_RETURN_IF_ERROR(s);

  AlignedBuffer tail(manifest_bytes + kPageSize);
  std::memcpy(tail.data(), manifest.data(), manifest.size());
  char* trailer = tail.data() + manifest_bytes;
  std::memcpy(trailer, kTrailerMagic, 8);
  EncodeFixed64(trailer + 8, epoch);
  uint32_t crc = crc32c::Value(head.data(), head.size());
  for (const auto& [id, image] : pages) crc = crc32c::Extend(crc, image, kPageSize);
  crc = crc32c::Extend(crc, manifest.data(), manifest.size());
  EncodeFixed32(trailer + 16, crc32c::Mask(crc));
  GROVE_RETURN_IF_ERROR(file->Write(off, Slice(tail.data(), tail.size())));
  return file->Sync();
}

StatusOr<std::optional<DoubleWriteBatch>> ReadDoubleWrite(File* file,
                                                          std::optional<uint64_t> only_epoch) {
  GROVE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size < 2 * kPageSize) return std::optional<DoubleWriteBatch>();
  AlignedBuffer header(kPageSize);
  size_t got = 0;
  GROVE_RETURN_IF_ERROR(file->Read(0, kPageSize, header.data(), &got));
  const bool v2 = got == kPageSize && std::memcmp(header.data(), kHeaderMagic, 8) == 0;
  const bool v1 = got == kPageSize && std::memcmp(header.data(), kHeaderMagicV1, 8) == 0;
  if (!(v1 || v2) ||
      crc32c::Unmask(DecodeFixed32(header.data() + 32)) != crc32c::Value(header.data(), 32)) {
    return std::optional<DoubleWriteBatch>();
  }
  DoubleWriteBatch b;
  b.epoch = DecodeFixed64(header.data() + 8);
  if (only_epoch && b.epoch != *only_epoch) return std::optional<DoubleWriteBatch>();
  const uint64_t n = DecodeFixed64(header.data() + 16);
  const uint64_t manifest_size = DecodeFixed64(header.data() + 24);
  const uint64_t dir_pages = DirPages(n);
  const uint64_t total = (1 + dir_pages + n + 1) * kPageSize + RoundUp(manifest_size);
  if (n > size / kPageSize || manifest_size > size || total > size) {
    return std::optional<DoubleWriteBatch>();
  }
  AlignedBuffer all = AlignedBuffer::Uninitialized(total);  // read whole, or not used
  if (all.size() != total) {
    return Status::ResourceExhausted("no memory to read a double-write batch of " +
                                     std::to_string(total) + " bytes");
  }
  GROVE_RETURN_IF_ERROR(file->Read(0, total, all.data(), &got));
  if (got != total) return std::optional<DoubleWriteBatch>();
  const char* dir = all.data() + kPageSize;
  const char* images = all.data() + (1 + dir_pages) * kPageSize;
  const char* manifest = images + n * kPageSize;
  const char* trailer = manifest + RoundUp(manifest_size);
  // The crc covers the images (version 2): a retried checkpoint reuses its epoch, so an image
  // slot still holding the failed attempt's image of the same page carries the right epoch and
  // a valid page checksum; only the batch crc tells it apart.
  uint32_t crc = crc32c::Value(all.data(), (1 + dir_pages) * kPageSize);
  if (v2) crc = crc32c::Extend(crc, images, n * kPageSize);
  crc = crc32c::Extend(crc, manifest, manifest_size);
  if (std::memcmp(trailer, kTrailerMagic, 8) != 0 || DecodeFixed64(trailer + 8) != b.epoch ||
      crc32c::Unmask(DecodeFixed32(trailer + 16)) != crc) {
    return std::optional<DoubleWriteBatch>();
  }
  b.ids.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    b.ids[i] = DecodeFixed64(dir + i * 8);
    const char* img = images + i * kPageSize;
    // Every image carries the batch's epoch: an intact image of the same page left over from the
    // previous batch (the new one's write of it was lost) must not pass for part of this batch.
    if (!page::Verify(img, b.ids[i]).ok() || page::Epoch(img) != static_cast<uint32_t>(b.epoch)) {
      return std::optional<DoubleWriteBatch>();
    }
  }
  b.manifest.assign(manifest, manifest_size);
  b.images_at = static_cast<size_t>(images - all.data());
  b.file = std::move(all);  // the images stay where they were read: no second copy
  return std::optional<DoubleWriteBatch>(std::move(b));
}

Status WritePagesInPlace(IoBackend* io, File* data_file, const PageImages& pages) {
  constexpr size_t kDepth = 64;
  auto queue = io->AcquireQueue();
  std::vector<IoOp> ops;
  std::vector<std::pair<size_t, size_t>> runs;
  ForEachRun(pages, /*need_consecutive_ids=*/true, [&](size_t first, size_t count) {
    runs.push_back({first, count});
  });
  Status first_error;
  for (size_t i = 0; i < runs.size(); i += kDepth) {
    const size_t end = std::min(runs.size(), i + kDepth);
    ops.clear();
    ops.reserve(end - i);
    for (size_t r = i; r < end; ++r) {
      const auto [first, count] = runs[r];
      ops.push_back(IoOp::Write(data_file, pages[first].first * kPageSize,
                                const_cast<char*>(pages[first].second),
                                static_cast<uint32_t>(count * kPageSize)));
    }
    for (IoOp& op : ops) queue->Push(&op);
    queue->Submit();
    queue->WaitAll();
    for (const IoOp& op : ops) {
      if (!op.status.ok() && first_error.ok()) first_error = op.status;
    }
    if (!first_error.ok()) return first_error;
  }
  return data_file->Sync();
}

}  // namespace grove
