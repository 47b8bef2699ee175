// CheckBackup and RestoreBackup: reading back what Db::Backup wrote (engine/backup_files.h).

#include <fmt/format.h>

#include "grove/db.h"

#include "engine/backup_files.h"
#include "util/clock.h"

namespace grove {
namespace {

StatusOr<std::shared_ptr<IoBackend>> BackendFor(const Options& options) {
  if (options.io_backend) return options.io_backend;
  return NewIoBackend(options.io, options.logger.get());
}

StatusOr<backup::Description> ReadDescription(IoBackend* io, const std::string& dir) {
  const std::string path = dir + "/" + backup::kBackupFileName;
  if (!io->FileExists(path)) {
    return Status::NotFound(
        fmt::format("{} has no {} file: not a backup, or one that did not finish", dir,
                    backup::kBackupFileName));
  }
  GROVE_ASSIGN_OR_RETURN(auto file, io->OpenFile(path, FileOptions{}));
  GROVE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size > (16u << 20)) return Status::DataLoss(path + ": too large for a BACKUP file");
  std::string text(size, '\0');
  size_t got = 0;
  GROVE_RETURN_IF_ERROR(file->Read(0, size, text.data(), &got));
  text.resize(got);
  return backup::Decode(text);
}

StatusOr<backup::Description> Check(IoBackend* io, const std::string& dir) {
  GROVE_ASSIGN_OR_RETURN(backup::Description d, ReadDescription(io, dir));
  for (const backup::FileEntry& want : d.files) {
    if (!io->FileExists(dir + "/" + want.name)) {
      return Status::DataLoss(fmt::format("backup {}: {} is missing", dir, want.name));
    }
    GROVE_ASSIGN_OR_RETURN(const backup::FileEntry got, backup::Summarize(io, dir, want.name));
    if (got.bytes != want.bytes) {
      return Status::DataLoss(fmt::format("backup {}: {} holds {} bytes, the backup wrote {}", dir,
                                          want.name, got.bytes, want.bytes));
    }
    if (got.masked_crc != want.masked_crc) {
      return Status::DataLoss(
          fmt::format("backup {}: {} does not match its checksum (damaged)", dir, want.name));
    }
  }
  return d;
}

}  // namespace

StatusOr<BackupInfo> CheckBackup(const std::string& backup_dir) {
  IoBackendOptions o;
  o.kind = IoBackendKind::kPsync;
  GROVE_ASSIGN_OR_RETURN(std::shared_ptr<IoBackend> io, NewIoBackend(o, nullptr));
  GROVE_ASSIGN_OR_RETURN(backup::Description d, Check(io.get(), backup_dir));
  return d.info;
}

Status RestoreBackup(const std::string& backup_dir, const Options& options, RestoreReport* report) {
  *report = RestoreReport();
  uint64_t t = NowNanos();
  const auto lap = [&t] {
    const uint64_t now = NowNanos();
    const double seconds = static_cast<double>(now - t) * 1e-9;
    t = now;
    return seconds;
  };
  GROVE_ASSIGN_OR_RETURN(std::shared_ptr<IoBackend> io, BackendFor(options));
  GROVE_ASSIGN_OR_RETURN(backup::Description d, Check(io.get(), backup_dir));
  report->check_seconds = lap();
  report->backup = d.info;
  const std::string& target = options.data_dir;
  GROVE_RETURN_IF_ERROR(backup::PrepareEmptyDir(io.get(), target, "data_dir"));
  for (size_t i = 0; i < d.files.size(); ++i) {
    const backup::FileEntry& f = d.files[i];
    Status s = backup::CopyFile(io.get(), backup_dir + "/" + f.name, target + "/" + f.name, f.bytes,
                                /*bytes_per_second=*/0, nullptr);
    if (!s.ok()) {
      // Nothing half restored stays behind.
      for (size_t j = 0; j <= i; ++j) io->DeleteFile(target + "/" + d.files[j].name).IgnoreError();
      return s.WithContext("restoring " + f.name);
    }
  }
  GROVE_RETURN_IF_ERROR(io->SyncDir(target));
  report->copy_seconds = lap();
  auto left = [&](const Status& s) {
    return s.WithContext(fmt::format(
        "the restored files are left in {} for inspection; remove them before restoring there "
        "again",
        target));
  };

  // Open it as groved would: recovery replays the copied log up to the backup point.
  Options o = options;
  o.create_if_missing = false;
  o.io_backend = io;
  o.index.variant = d.info.variant;
  o.index.params = d.params;
  // No write of its own while it is checked: the expiry sweep would log deletes past the backup
  // point. (Sweeps run once groved opens the directory.)
  o.expiry.sweep_interval_seconds = 0;
  StatusOr<std::unique_ptr<Db>> db = Db::Open(o);
  if (!db.ok()) return left(db.status().WithContext("opening the restored database"));
  report->open_seconds = lap();
  const DbStats stats = (*db)->GetStats();
  report->replayed_records = stats.recovery_replayed_records;
  if (stats.wal.next_lsn != d.info.last_lsn + 1) {
    (*db)->Close().IgnoreError();
    return left(Status::DataLoss(
        fmt::format("the restored database recovered the log up to LSN {}, but the backup "
                    "point is {}",
                    stats.wal.next_lsn - 1, d.info.last_lsn)));
  }
  Status s = (*db)->Verify(&report->verify);
  report->verify_seconds = lap();
  Status closed = (*db)->Close();
  if (!s.ok()) return left(s);
  if (!closed.ok()) return left(closed);
  if (!report->verify.problems.empty()) {
    return left(Status::DataLoss(fmt::format("the restored database fails verification: {}",
                                             report->verify.problems.front())));
  }
  return Status::Ok();
}

}  // namespace grove
