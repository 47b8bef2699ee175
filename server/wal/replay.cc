// Wal::Replay: reads the log back, tells a torn tail from corruption, and repairs a torn tail.
//
// The rules (docs/formats/wal.md has the reasoning):
//   * Segments are read in LSN order; a segment wholly below from_lsn (the next segment's name is
//     <= from_lsn) is skipped by name. Every record read must carry exactly the next LSN, and the
//     first record of a segment the LSN of its name; anything else is kDataLoss.
//   * A "stop" is an all-zero header (the end of the written data) or a bad record. After a stop
//     the reader looks at the rest of the segment:
//       - a valid record more than max_unsynced_bytes past the stop means the bad bytes had been
//         synced: mid-log corruption, kDataLoss;
//       - zeros with nothing non-zero after them: the clean end of this segment; go on to the next;
//       - otherwise it is a torn tail, provided no later segment holds a valid record (a roll syncs
//         the old segment before the new one gets records, so a valid record in a later segment
//         means the bad bytes had been synced too: kDataLoss).
//   * A torn tail is repaired: the segment is truncated to the end of its last valid record and
//     synced, later segments (only garbage) are deleted, and a warning is logged.

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "util/coding.h"
#include "wal/log_reader.h"
#include "wal/segment.h"
#include "wal/wal.h"

namespace grove::wal {

namespace {

using Kind = LogReader::Kind;

class Replayer {
 public:
  Replayer(IoBackend* io, Lsn from_lsn, const WalOptions& options, Logger* logger,
           const std::function<Status(Lsn, Slice)>& fn)
      : io_(io), from_lsn_(from_lsn), options_(options), logger_(logger), fn_(fn) {}

  StatusOr<ReplayResult> Run(const std::string& dir);

 private:
  // Reads segments_[i]; sets *repaired when a torn tail ended the log there.
  Status ReadSegment(size_t i, bool* repaired);
  // Handles a stop (zeros or a bad record) in segments_[i]; `last_end` is where its last valid
  // record ends.
  Status HandleStop(size_t i, LogReader* reader, const LogReader::Result& stop, uint64_t last_end,
                    bool* repaired);
  // Reads all of a later segment: where its first valid record is, and where its data ends.
  Status ScanSegment(const SegmentRef& seg, std::optional<uint64_t>* first_valid,
                     uint64_t* data_end);
  Status Repair(size_t i, uint64_t keep);
  void Log(LogLevel level, const std::string& message) const {
    if (logger_ != nullptr) logger_->Log(level, message);
  }

  IoBackend* const io_;
  const Lsn from_lsn_;
  const WalOptions& options_;
  Logger* const logger_;
  const std::function<Status(Lsn, Slice)>& fn_;

  std::string dir_;
  std::vector<SegmentRef> segments_;
  Lsn expected_ = 0;  // the LSN the next record must have
  bool have_expected_ = false;
  ReplayResult result_;
};

Status CorruptFollowed(const std::string& path, uint64_t offset, const std::string& reason,
                       const std::string& valid_path, uint64_t valid_offset) {
  return Status::DataLoss(fmt::format(
      "wal: corrupt record at {}:{} followed by valid records; refusing to open ({}; a valid "
      "record follows at {}:{})",
      path, offset, reason, valid_path, valid_offset));
}

StatusOr<ReplayResult> Replayer::Run(const std::string& dir) {
  GROVE_RETURN_IF_ERROR(ValidateWalOptions(options_));
  dir_ = dir;
  GROVE_ASSIGN_OR_RETURN(segments_, ListSegments(io_, dir));
  const Lsn from = std::max<Lsn>(from_lsn_, 1);  // LSN 0 is never used
  result_.next_lsn = from;
  if (segments_.empty()) return result_;

  if (segments_.front().first_lsn > from) {
    return Status::DataLoss(
        fmt::format("wal: the oldest segment {} starts at LSN {} but replay must start at LSN {}",
                    segments_.front().path, segments_.front().first_lsn, from));
  }

  bool repaired = false;
  for (size_t i = 0; i < segments_.size() && !repaired; ++i) {
    if (i + 1 < segments_.size() && segments_[i + 1].first_lsn <= from) continue;
    ++result_.segments;
    GROVE_RETURN_IF_ERROR(ReadSegment(i, &repaired));
  }
  result_.next_lsn = std::max(from, expected_);

  if (!repaired) {
    // After a process crash the tail may still sit unsynced in the page cache. Make it durable now:
    // the next Wal writes a new segment, and a power loss must not take records from under it.
    const SegmentRef& last = segments_.back();
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file, io_->OpenFile(last.path, FileOptions{}));
    Status s = file->Sync();
    if (!s.ok()) return Status::Internal("wal: fdatasync of " + last.path + ": " + s.ToString());
  }
  Log(LogLevel::kInfo,
      fmt::format("wal: replayed {} records ({} bytes) from {} segment(s); next LSN {}",
                  result_.records, result_.bytes, result_.segments, result_.next_lsn));
  return result_;
}

Status Replayer::ReadSegment(size_t i, bool* repaired) {
  const SegmentRef& seg = segments_[i];
  if (have_expected_ && seg.first_lsn != expected_) {
    return Status::DataLoss(
        fmt::format("wal: segment {} starts at LSN {} but the LSN after the previous segment is {}",
                    seg.path, seg.first_lsn, expected_));
  }
  expected_ = seg.first_lsn;
  have_expected_ = true;

  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                         io_->OpenFile(seg.path, FileOptions{.read_only = true}));
  LogReader reader(file.get());
  LogReader::Result r;
  uint64_t last_end = 0;
  while (true) {
    GROVE_RETURN_IF_ERROR(reader.Next(&r));
    switch (r.kind) {
      case Kind::kEof:
        return Status::Ok();
      case Kind::kZeros:
      case Kind::kBad:
        return HandleStop(i, &reader, r, last_end, repaired);
      case Kind::kRecord:
        break;
    }
    if (r.record.size() < kLsnSize) {
      return Status::DataLoss(fmt::format("wal: record at {}:{} has {} bytes, too few for an LSN",
                                          seg.path, r.offset, r.record.size()));
    }
    const Lsn lsn = DecodeFixed64(r.record.data());
    if (lsn != expected_) {
      return Status::DataLoss(
          last_end == 0
              ? fmt::format("wal: segment {} is named for LSN {} but its first record has LSN {}",
                            seg.path, seg.first_lsn, lsn)
              : fmt::format("wal: record at {}:{} has LSN {} where LSN {} was expected", seg.path,
                            r.offset, lsn, expected_));
    }
    ++expected_;
    last_end = r.end;
    if (lsn >= from_lsn_) {
      GROVE_RETURN_IF_ERROR(fn_(lsn, r.record.substr(kLsnSize)));
      ++result_.records;
      result_.bytes += r.end - r.offset;
    }
  }
}

Status Replayer::HandleStop(size_t i, LogReader* reader, const LogReader::Result& stop,
                            uint64_t last_end, bool* repaired) {
  const SegmentRef& seg = segments_[i];
  const std::string reason = stop.kind == Kind::kBad ? stop.reason : "zeros followed by data";

  // Valid records far past the stop prove the stop was not in the unsynced tail.
  LogReader::Result r;
  do {
    GROVE_RETURN_IF_ERROR(reader->Next(&r));
    if (r.kind == Kind::kRecord && r.offset - stop.offset > options_.max_unsynced_bytes) {
      return CorruptFollowed(seg.path, stop.offset, reason, seg.path, r.offset);
    }
  } while (r.kind != Kind::kEof);
  const uint64_t data_end = reader->data_end();
  if (stop.kind == Kind::kZeros && data_end <= stop.offset) return Status::Ok();  // clean end

  uint64_t dropped = data_end > last_end ? data_end - last_end : 0;
  for (size_t j = i + 1; j < segments_.size(); ++j) {
    std::optional<uint64_t> first_valid;
    uint64_t end = 0;
    GROVE_RETURN_IF_ERROR(ScanSegment(segments_[j], &first_valid, &end));
    if (first_valid) {
      return CorruptFollowed(seg.path, stop.offset, reason, segments_[j].path, *first_valid);
    }
    dropped += end;
  }

  GROVE_RETURN_IF_ERROR(Repair(i, last_end));
  Log(LogLevel::kWarn,
      fmt::format("wal: torn tail in {} at offset {} ({}): dropped {} bytes, truncated the segment "
                  "to {} bytes",
                  seg.path, stop.offset, reason, dropped, last_end));
  result_.torn_tail = true;
  result_.torn_tail_bytes = dropped;
  *repaired = true;
  return Status::Ok();
}

Status Replayer::ScanSegment(const SegmentRef& seg, std::optional<uint64_t>* first_valid,
                             uint64_t* data_end) {
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                         io_->OpenFile(seg.path, FileOptions{.read_only = true}));
  LogReader reader(file.get());
  LogReader::Result r;
  do {
    GROVE_RETURN_IF_ERROR(reader.Next(&r));
    if (r.kind == Kind::kRecord && !*first_valid) *first_valid = r.offset;
  } while (r.kind != Kind::kEof);
  *data_end = reader.data_end();
  return Status::Ok();
}

Status Replayer::Repair(size_t i, uint64_t keep) {
  const SegmentRef& seg = segments_[i];
  {
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file, io_->OpenFile(seg.path, FileOptions{}));
    GROVE_RETURN_IF_ERROR(file->Truncate(keep).WithContext("wal: repairing a torn tail"));
    Status s = file->Sync();
    if (!s.ok()) return Status::Internal("wal: fdatasync of " + seg.path + ": " + s.ToString());
  }
  if (i + 1 < segments_.size()) {
    for (size_t j = i + 1; j < segments_.size(); ++j) {
      GROVE_RETURN_IF_ERROR(
          io_->DeleteFile(segments_[j].path).WithContext("wal: deleting a torn segment"));
    }
    GROVE_RETURN_IF_ERROR(io_->SyncDir(dir_).WithContext("wal: syncing the directory"));
    segments_.resize(i + 1);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ReplayResult> Wal::Replay(IoBackend* io, const std::string& dir, Lsn from_lsn,
                                   const WalOptions& options, Logger* logger,
                                   const std::function<Status(Lsn, Slice)>& fn) {
  Replayer replayer(io, from_lsn, options, logger, fn);
  return replayer.Run(dir);
}

}  // namespace grove::wal
