#pragma once

// WAL segment files: naming, listing and creation. A segment is `wal-<first LSN>.log` with the LSN
// as 20 decimal digits, so that names sort like LSNs; its first record (if any) has that LSN.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/io_backend.h"
#include "grove/options.h"
#include "grove/status.h"

#include "wal/log_format.h"

namespace grove::wal {

// "wal-00000000000000000042.log"
std::string SegmentFileName(Lsn first_lsn);
// Accepts exactly the form above; anything else in the directory is not a segment.
bool ParseSegmentFileName(std::string_view name, Lsn* first_lsn);

struct SegmentRef {
  Lsn first_lsn = 0;
  std::string path;
};

// The segments in `dir`, sorted by first LSN.
StatusOr<std::vector<SegmentRef>> ListSegments(IoBackend* io, const std::string& dir);

// Creates `path` (buffered IO: the WAL writes through the page cache and fdatasyncs) and reserves
// `bytes` with File::Allocate, so that a full disk shows up here and never inside a segment. A file
// already at `path` is deleted first: callers only pass paths of segments that hold no record. On
// failure, removes what it created (best effort). The caller syncs the directory.
StatusOr<std::unique_ptr<File>> CreateSegmentFile(IoBackend* io, const std::string& path,
                                                  uint64_t bytes);

// Checks the WalOptions fields the WAL depends on; the message names the field.
Status ValidateWalOptions(const WalOptions& options);

// The largest payload Append accepts: half of max_unsynced_bytes, so that a group always fits
// under the unsynced-bytes bound after a sync.
inline uint64_t MaxPayloadBytes(const WalOptions& options) {
  return options.max_unsynced_bytes / 2;
}

}  // namespace grove::wal
