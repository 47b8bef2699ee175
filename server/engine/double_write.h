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

// The pages of one checkpoint, ascending by id, whose sealed images are copied on demand into the
// writer's buffer: a batch streams through buffers of a fixed size (a few MiB, below) instead of
// being held in memory whole, so its memory does not grow with the checkpoint.
class PageImageSource {
 public:
  virtual ~PageImageSource() = default;
  virtual size_t size() const = 0;
  virtual PageId id(size_t i) const = 0;
  // Copies images [first, first + count) into `out` (count * kPageSize bytes, 4 KiB aligned).
  // The same image every time it is asked for.
  virtual Status Copy(size_t first, size_t count, char* out) = 0;
};

// Pages of one checkpoint: (id, sealed image), ascending by id.
using PageImages = std::vector<std::pair<PageId, const char*>>;

// Images already in memory.
class PageImageList final : public PageImageSource {
 public:
  explicit PageImageList(const PageImages& pages) : pages_(pages) {}
  size_t size() const override { return pages_.size(); }
  PageId id(size_t i) const override { return pages_[i].first; }
  Status Copy(size_t first, size_t count, char* out) override;

 private:
  const PageImages& pages_;
};

// Writes the batch (reserving space first) through a 1 MiB buffer and syncs it.
Status WriteDoubleWrite(File* file, uint64_t epoch, PageImageSource& pages, Slice manifest);

// A complete batch as found on disk: its directory and manifest. The images stay in the file
// (DoubleWriteImages reads them back).
struct DoubleWriteBatch {
  uint64_t epoch = 0;
  std::vector<PageId> ids;
  uint64_t images_offset = 0;  // where image 0 starts in the file
  std::string manifest;
};

// Reads and verifies the batch, streaming its images through a 1 MiB buffer; nullopt when the
// file holds no complete batch. With `only_epoch`, a batch of another epoch is nullopt too, and
// is not read past its header page: after a clean checkpoint the batch on disk is the one already
// applied, and an open must not read pages it will not use.
StatusOr<std::optional<DoubleWriteBatch>> ReadDoubleWrite(
    File* file, std::optional<uint64_t> only_epoch = std::nullopt);

// The images of a batch ReadDoubleWrite found complete, read back from its file. Each is checked
// again as it is read (own id, checksum, the batch's epoch): a file that changed since is
// kDataLoss, not a page applied.
class DoubleWriteImages final : public PageImageSource {
 public:
  DoubleWriteImages(File* file, const DoubleWriteBatch& batch) : file_(file), batch_(batch) {}
  size_t size() const override { return batch_.ids.size(); }
  PageId id(size_t i) const override { return batch_.ids[i]; }
  Status Copy(size_t first, size_t count, char* out) override;

 private:
  File* const file_;
  const DoubleWriteBatch& batch_;
};

// Writes `pages` to their places in the data file through an IO queue, runs of consecutive ids as
// one write each, through two 2 MiB buffers in turn (one filled while the other's writes are in
// flight), and syncs the file.
Status WritePagesInPlace(IoBackend* io, File* data_file, PageImageSource& pages);

}  // namespace grove
