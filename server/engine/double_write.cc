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
// The double-write file is written and read sequentially through a buffer of this many pages.
constexpr size_t kStreamPages = 256;  // 1 MiB
// In place: two buffers of this many pages, each with up to kOpsPerBuffer writes in flight.
constexpr size_t kInPlacePages = 512;  // 2 MiB
constexpr size_t kOpsPerBuffer = 32;

size_t RoundUp(size_t n) { return (n + kPageSize - 1) / kPageSize * kPageSize; }
size_t DirPages(size_t count) { return (count + kIdsPerDirPage - 1) / kIdsPerDirPage; }

std::optional<DoubleWriteBatch> NoBatch() { return std::nullopt; }

// Reads exactly `n` bytes at `offset`; false when the file ends first.
StatusOr<bool> ReadFull(File* file, uint64_t offset, size_t n, char* out) {
  size_t got = 0;
  GROVE_RETURN_IF_ERROR(file->Read(offset, n, out, &got));
  return got == n;
}

// An image of a batch of `epoch` that is the page `id` and was written by this batch: an intact
// image of the same page left over from the previous batch (the new one's write of it was lost)
// must not pass for part of this batch.
bool ImageBelongs(const char* image, PageId id, uint64_t epoch) {
  return page::Verify(image, id).ok() && page::Epoch(image) == static_cast<uint32_t>(epoch);
}

}  // namespace

Status PageImageList::Copy(size_t first, size_t count, char* out) {
  for (size_t i = 0; i < count; ++i) {
    std::memcpy(out + i * kPageSize, pages_[first + i].second, kPageSize);
  }
  return Status::Ok();
}

Status WriteDoubleWrite(File* file, uint64_t epoch, PageImageSource& pages, Slice manifest) {
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
  for (size_t i = 0; i < n; ++i) EncodeFixed64(head.data() + kPageSize + i * 8, pages.id(i));
  GROVE_RETURN_IF_ERROR(file->Write(0, Slice(head.data(), head.size())));
  uint32_t crc = crc32c::Value(head.data(), head.size());

  uint64_t off = head.size();
  AlignedBuffer buf(std::min(n, kStreamPages) * kPageSize);
  for (size_t i = 0; i < n; i += kStreamPages) {
    const size_t count = std::min(kStreamPages, n - i);
    GROVE_RETURN_IF_ERROR(pages.Copy(i, count, buf.data()));
    crc = crc32c::Extend(crc, buf.data(), count * kPageSize);
    GROVE_RETURN_IF_ERROR(file->Write(off, Slice(buf.data(), count * kPageSize)));
    off += count * kPageSize;
  }

  AlignedBuffer tail(manifest_bytes + kPageSize);
  std::memcpy(tail.data(), manifest.data(), manifest.size());
  char* trailer = tail.data() + manifest_bytes;
  std::memcpy(trailer, kTrailerMagic, 8);
  EncodeFixed64(trailer + 8, epoch);
  crc = crc32c::Extend(crc, manifest.data(), manifest.size());
  EncodeFixed32(trailer + 16, crc32c::Mask(crc));
  GROVE_RETURN_IF_ERROR(file->Write(off, Slice(tail.data(), tail.size())));
  return file->Sync();
}

StatusOr<std::optional<DoubleWriteBatch>> ReadDoubleWrite(File* file,
                                                          std::optional<uint64_t> only_epoch) {
  GROVE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size < 2 * kPageSize) return NoBatch();
  AlignedBuffer header(kPageSize);
  GROVE_ASSIGN_OR_RETURN(bool whole, ReadFull(file, 0, kPageSize, header.data()));
  const bool v2 = whole && std::memcmp(header.data(), kHeaderMagic, 8) == 0;
  const bool v1 = whole && std::memcmp(header.data(), kHeaderMagicV1, 8) == 0;
  if (!(v1 || v2) ||
      crc32c::Unmask(DecodeFixed32(header.data() + 32)) != crc32c::Value(header.data(), 32)) {
    return NoBatch();
  }
  DoubleWriteBatch b;
  b.epoch = DecodeFixed64(header.data() + 8);
  if (only_epoch && b.epoch != *only_epoch) return NoBatch();
  const uint64_t n = DecodeFixed64(header.data() + 16);
  const uint64_t manifest_size = DecodeFixed64(header.data() + 24);
  const uint64_t dir_pages = DirPages(n);
  const uint64_t total = (1 + dir_pages + n + 1) * kPageSize + RoundUp(manifest_size);
  if (n > size / kPageSize || manifest_size > size || total > size) return NoBatch();

  // Header and directory, then the images a buffer at a time, then manifest and trailer.
  AlignedBuffer head((1 + dir_pages) * kPageSize);
  GROVE_ASSIGN_OR_RETURN(whole, ReadFull(file, 0, head.size(), head.data()));
  if (!whole) return NoBatch();
  // The crc covers the images (version 2): a retried checkpoint reuses its epoch, so an image
  // slot still holding the failed attempt's image of the same page carries the right epoch and
  // a valid page checksum; only the batch crc tells it apart.
  uint32_t crc = crc32c::Value(head.data(), head.size());
  b.ids.resize(n);
  for (uint64_t i = 0; i < n; ++i) b.ids[i] = DecodeFixed64(head.data() + kPageSize + i * 8);
  b.images_offset = head.size();
  AlignedBuffer buf(std::min<uint64_t>(n, kStreamPages) * kPageSize);
  for (uint64_t i = 0; i < n; i += kStreamPages) {
    const size_t count = std::min<uint64_t>(kStreamPages, n - i);
    GROVE_ASSIGN_OR_RETURN(
        whole, ReadFull(file, b.images_offset + i * kPageSize, count * kPageSize, buf.data()));
    if (!whole) return NoBatch();
    for (size_t j = 0; j < count; ++j) {
      if (!ImageBelongs(buf.data() + j * kPageSize, b.ids[i + j], b.epoch)) return NoBatch();
    }
    if (v2) crc = crc32c::Extend(crc, buf.data(), count * kPageSize);
  }
  const uint64_t manifest_at = b.images_offset + n * kPageSize;
  AlignedBuffer tail(RoundUp(manifest_size) + kPageSize);
  GROVE_ASSIGN_OR_RETURN(whole, ReadFull(file, manifest_at, tail.size(), tail.data()));
  if (!whole) return NoBatch();
  const char* trailer = tail.data() + RoundUp(manifest_size);
  crc = crc32c::Extend(crc, tail.data(), manifest_size);
  if (std::memcmp(trailer, kTrailerMagic, 8) != 0 || DecodeFixed64(trailer + 8) != b.epoch ||
      crc32c::Unmask(DecodeFixed32(trailer + 16)) != crc) {
    return NoBatch();
  }
  b.manifest.assign(tail.data(), manifest_size);
  return std::optional<DoubleWriteBatch>(std::move(b));
}

Status DoubleWriteImages::Copy(size_t first, size_t count, char* out) {
  GROVE_ASSIGN_OR_RETURN(const bool whole, ReadFull(file_, batch_.images_offset + first * kPageSize,
                                                    count * kPageSize, out));
  if (!whole) {
    return Status::DataLoss(
        fmt::format("{}: the double-write batch of epoch {} became shorter "
                    "after it was verified",
                    file_->path(), batch_.epoch));
  }
  for (size_t i = 0; i < count; ++i) {
    if (!ImageBelongs(out + i * kPageSize, batch_.ids[first + i], batch_.epoch)) {
      return Status::DataLoss(fmt::format(
          "{}: image {} (page {}) of the double-write batch of epoch {} changed after it was "
          "verified",
          file_->path(), first + i, batch_.ids[first + i], batch_.epoch));
    }
  }
  return Status::Ok();
}

Status WritePagesInPlace(IoBackend* io, File* data_file, PageImageSource& pages) {
  // Two buffers in turn: while one's writes are in flight the other is filled. Each holds up to
  // kInPlacePages images in up to kOpsPerBuffer runs of consecutive ids.
  struct Half {
    AlignedBuffer buf;
    std::vector<IoOp> ops;
  };
  const size_t n = pages.size();
  if (n == 0) return data_file->Sync();
  Half halves[2];
  for (Half& h : halves) {
    h.buf = AlignedBuffer(std::min(n, kInPlacePages) * kPageSize);
    h.ops.reserve(kOpsPerBuffer);
  }
  auto queue = io->AcquireQueue();
  Status first_error;
  auto finish = [&](Half& h) {
    for (IoOp& op : h.ops) {
      queue->Wait(&op);
      if (!op.status.ok() && first_error.ok()) first_error = op.status;
    }
    h.ops.clear();
  };
  size_t next = 0;
  for (int turn = 0; next < n && first_error.ok(); turn ^= 1) {
    Half& h = halves[turn];
    finish(h);
    if (!first_error.ok()) break;
    // The images [next, end): up to a buffer's worth, ending where the run count is reached.
    size_t end = next, runs = 0;
    while (end < n && end - next < kInPlacePages) {
      if (end == next || pages.id(end) != pages.id(end - 1) + 1) {
        if (runs == kOpsPerBuffer) break;
        ++runs;
      }
      ++end;
    }
    if (Status s = pages.Copy(next, end - next, h.buf.data()); !s.ok()) {
      first_error = s;
      break;
    }
    for (size_t i = next; i < end;) {
      size_t j = i + 1;
      while (j < end && pages.id(j) == pages.id(j - 1) + 1) ++j;
      h.ops.push_back(IoOp::Write(data_file, pages.id(i) * kPageSize,
                                  h.buf.data() + (i - next) * kPageSize,
                                  static_cast<uint32_t>((j - i) * kPageSize)));
      i = j;
    }
    for (IoOp& op : h.ops) queue->Push(&op);
    queue->Submit();
    next = end;
  }
  finish(halves[0]);
  finish(halves[1]);
  GROVE_RETURN_IF_ERROR(first_error);
  return data_file->Sync();
}

}  // namespace grove
