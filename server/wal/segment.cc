#include "wal/segment.h"

#include <algorithm>

#include <fmt/format.h>

namespace grove::wal {

namespace {
constexpr std::string_view kPrefix = "wal-";
constexpr std::string_view kSuffix = ".log";
constexpr size_t kDigits = 20;  // enough for any uint64_t
}  // namespace

std::string SegmentFileName(Lsn first_lsn) { return fmt::format("wal-{:020d}.log", first_lsn); }

bool ParseSegmentFileName(std::string_view name, Lsn* first_lsn) {
  if (name.size() != kPrefix.size() + kDigits + kSuffix.size()) return false;
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return false;
  const std::string_view digits = name.substr(kPrefix.size(), kDigits);
  Lsn v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    const Lsn d = static_cast<Lsn>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;  // beyond uint64_t
    v = v * 10 + d;
  }
  *first_lsn = v;
  return true;
}

StatusOr<std::vector<SegmentRef>> ListSegments(IoBackend* io, const std::string& dir) {
  GROVE_ASSIGN_OR_RETURN(std::vector<std::string> names, io->ListDir(dir));
  std::vector<SegmentRef> segments;
  for (const std::string& name : names) {
    Lsn first = 0;
    if (ParseSegmentFileName(name, &first)) segments.push_back({first, dir + "/" + name});
  }
  std::sort(segments.begin(), segments.end(),
            [](const SegmentRef& a, const SegmentRef& b) { return a.first_lsn < b.first_lsn; });
  return segments;
}

StatusOr<std::unique_ptr<File>> CreateSegmentFile(IoBackend* io, const std::string& path,
                                                  uint64_t bytes) {
  if (io->FileExists(path)) GROVE_RETURN_IF_ERROR(io->DeleteFile(path));
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                         io->OpenFile(path, FileOptions{.create = true, .direct = false}));
  Status s = file->Allocate(0, bytes);
  if (!s.ok()) {
    file.reset();
    io->DeleteFile(path).IgnoreError();  // best effort: an empty leftover is harmless anyway
    return s.WithContext("wal: preallocating segment");
  }
  return file;
}

Status ValidateWalOptions(const WalOptions& options) {
  constexpr uint64_t kMinUnsynced = 2 * kBlockSize;
  if (options.max_unsynced_bytes < kMinUnsynced) {
    return Status::InvalidArgument(
        fmt::format("wal.max_unsynced_bytes is {}; it must be at least {}",
                    options.max_unsynced_bytes, kMinUnsynced));
  }
  if (options.segment_bytes < options.max_unsynced_bytes) {
    return Status::InvalidArgument(
        fmt::format("wal.segment_bytes ({}) must be at least wal.max_unsynced_bytes ({})",
                    options.segment_bytes, options.max_unsynced_bytes));
  }
  if (options.sync == SyncMode::kBatch && options.batch_interval_us == 0) {
    return Status::InvalidArgument("wal.batch_interval_us must be positive with sync: batch");
  }
  return Status::Ok();
}

}  // namespace grove::wal
