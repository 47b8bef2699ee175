#pragma once

// The double-write file (DOUBLEWRITE): every checkpoint first writes all of its pages here,
// sequentially, and syncs, before writing any page in place. A crash during the in-place writes
// leaves a torn or half-updated data file, and recovery repairs it by re-applying the complete
// batch found here (docs/formats/double_write.md):
//
//   +-------------+------------------+-------------------+-------------------+--------------+
//   | header page | directory pages  | page images       | manifest bytes    | trailer page |
//   |             | u64 id per image | (sealed, 4 KiB)   | (padded to 4 KiB) |              |
//   +-------------+------------------+-------------------+-------------------+--------------+
//   header:  magic "GROVEDW2" | epoch u64 | page count u64 | manifest bytes u64 | masked crc u32
//   trailer: magic "GROVEDWT" | epoch u64 | masked crc u32 of header + directory + images +
//   manifest
//
// A batch is complete when header and trailer agree (the trailer's crc covers the images, so a
// slot left holding an earlier attempt's image of the same page fails it) and every image
// verifies as the page the directory names. Anything less (a crash while writing the batch) is
// ignored: in that case no page was written in place yet.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grove/io_backend.h"
#include "grove/status.h"

#include "page/page.h"

namespace grove {

inline constexpr const char* kDoubleWriteFileName = "DOUBLEWRITE";

// Pages of one checkpoint: (id, sealed image), ascending by id.
using PageImages = std::vector<std::pair<PageId, const char*>>;

// Writes the batch (reserving space first) and syncs it.
Status WriteDoubleWrite(File* file, uint64_t epoch, const PageImages& pages, Slice manifest);

struct DoubleWriteBatch {
  uint64_t epoch = 0;
  std::vector<PageId> ids;
  AlignedBuffer file;  // the batch as read: header, directory, then the images from images_at
  size_t images_at = 0;
  std::string manifest;
  const char* image(size_t i) const { return file.data() + images_at + i * kPageSize; }
  PageImages pages() const;
};

// Reads the batch; nullopt when the file holds no complete batch. With `only_epoch`, a batch of
// another epoch is nullopt too, and is not read past its header page: after a clean checkpoint
// the batch on disk is the one already applied, and an open must not read (up to three quarters
// of the cache's worth of) pages it will not use.
StatusOr<std::optional<DoubleWriteBatch>> ReadDoubleWrite(
    File* file, std::optional<uint64_t> only_epoch = std::nullopt);

// Writes `pages` to their places in the data file through an IO queue, coalescing runs of
// consecutive pages that are contiguous in memory, and syncs the file.
Status WritePagesInPlace(IoBackend* io, File* data_file, const PageImages& pages);

}  // namespace grove
