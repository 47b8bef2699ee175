// DbImpl::Backup: a consistent copy of a database that keeps serving.
//
// The data file is updated in place (checkpoints) and written directly (bulk loads, AHA-tree
// runs), so it cannot be copied as it is. The backup takes a checkpoint C0 under checkpoint_mu_
// and copies the data file as it stood when C0 became durable: it copies it front to back, and
// every write into the data file while the copy runs first calls PreserveBeforeWrite, which
// copies the old image of each page not yet copied before it is overwritten. The copy thus holds
// C0's pages (the superblock pair included), which opening treats like a crash right after C0.
// C0's manifest is copied while checkpoint_mu_ still keeps it from being deleted, and the log
// from C0's redo point up to the backup point is copied last; segments stay pinned meanwhile
// (wal_pin_). The double-write file is not copied: it may hold the images of a later checkpoint,
// which recovery would apply past the backup point.
//
// Lock order: backup_run_mu_ (one backup at a time) -> checkpoint_mu_ -> backup_mu_ (the copy's
// state, taken by the writers' hook and the copier; a leaf).

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "engine/backup_files.h"
#include "engine/db_impl.h"
#include "engine/manifest.h"
#include "util/clock.h"

namespace grove {
namespace {

constexpr uint64_t kCopyChunkPages = 256;  // 1 MiB per read of the data file
constexpr const char* kBackupDataFileName = "grove.data";

}  // namespace

void DbImpl::PreserveBeforeWrite(PageId first, uint64_t count) {
  if (!backup_active_.load(std::memory_order_acquire)) return;
  MutexLock lock(&backup_mu_);
  BackupCopy* c = backup_copy_;
  if (c == nullptr || !c->error.ok()) return;
  const uint64_t lo = std::max<uint64_t>(first, c->frontier);
  const uint64_t hi = std::min<uint64_t>(first + count, c->end_pages);
  for (uint64_t p = lo; p < hi;) {
    if (c->preserved[p]) {
      ++p;
      continue;
    }
    uint64_t q = p;
    while (q < hi && !c->preserved[q]) ++q;
    // [p, q) still holds what C0 left there: copy it before it changes.
    AlignedBuffer buf((q - p) * kPageSize);
    size_t got = 0;
    Status s = data_file_->Read(p * kPageSize, buf.size(), buf.data(), &got);
    if (s.ok() && got != buf.size()) s = Status::DataLoss("data file shorter than it was");
    if (s.ok()) s = c->dest->Write(p * kPageSize, Slice(buf.data(), buf.size()));
    if (!s.ok()) {
      c->error = s.WithContext("backup: copying pages ahead of an overwrite");
      return;
    }
    for (uint64_t i = p; i < q; ++i) c->preserved[i] = true;
    c->pages_preserved += q - p;
    p = q;
  }
}

Status DbImpl::LinkVariantFiles(const std::string& dir, std::vector<std::string>* created) {
  // A variant's own files ("<variant>-*", index.h) are immutable once a checkpoint names them,
  // but a later durable checkpoint may delete the newest one's: link (or copy) them while none
  // can run.
  GROVE_ASSIGN_OR_RETURN(const std::vector<std::string> names, io_->ListDir(options_.data_dir));
  for (const std::string& name : names) {
    if (name.rfind(variant_ + "-", 0) != 0) continue;
    created->push_back(name);
    std::error_code ec;
    std::filesystem::create_hard_link(options_.data_dir + "/" + name, dir + "/" + name, ec);
    if (!ec) continue;
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> f,
                           io_->OpenFile(options_.data_dir + "/" + name, FileOptions{}));
    GROVE_ASSIGN_OR_RETURN(const uint64_t size, f->Size());
    GROVE_RETURN_IF_ERROR(backup::CopyFile(io_.get(), options_.data_dir + "/" + name,
                                           dir + "/" + name, size, 0, nullptr));
  }
  return Status::Ok();
}

Status DbImpl::ReadAsOfCopy(BackupCopy* c, uint64_t offset, size_t n, char* buf, size_t* got,
                            const std::function<bool()>& stop) {
  *got = 0;
  if (offset % kPageSize != 0 || n % kPageSize != 0) {
    return Status::InvalidArgument("snapshot reads are whole pages");
  }
  if (stop()) return Status::Aborted("verify: cancelled, or the database is closing");
  MutexLock lock(&backup_mu_);
  GROVE_RETURN_IF_ERROR(c->error);
  // Under backup_mu_: a page not preserved yet cannot be overwritten before this read is done
  // (the hook runs before every overwrite and takes the same mutex).
  const uint64_t first = offset / kPageSize;
  const uint64_t end = std::min<uint64_t>(c->end_pages, first + n / kPageSize);
  for (uint64_t p = first; p < end;) {
    const bool preserved = c->preserved[p];
    uint64_t q = p + 1;
    while (q < end && c->preserved[q] == preserved) ++q;
    File* from = preserved ? c->dest.get() : data_file_.get();
    size_t bytes = 0;
    GROVE_RETURN_IF_ERROR(
        from->Read(p * kPageSize, (q - p) * kPageSize, buf + (p - first) * kPageSize, &bytes));
    *got += bytes;
    if (bytes != (q - p) * kPageSize) {
      return Status::DataLoss(fmt::format("snapshot: page {} is beyond the end of {}",
                                          p + bytes / kPageSize, from->path()));
    }
    p = q;
  }
  return Status::Ok();
}

Status DbImpl::CopyDataFile(BackupCopy* c, const BackupOptions& options,
                            const backup::StopFn& stop) {
  AlignedBuffer buf(kCopyChunkPages * kPageSize);
  const uint64_t started = NowNanos();
  for (uint64_t f = 0; f < c->end_pages;) {
    if (stop()) return Status::Aborted("backup: cancelled, or the database is closing");
    const uint64_t n = std::min(kCopyChunkPages, c->end_pages - f);
    std::vector<bool> skip(n);
    {
      // The read and the frontier move together: a writer's hook for a page of this chunk
      // either ran before (the page is preserved, skip it) or runs after (the page is behind the
      // frontier, and what was read here is its old image).
      MutexLock lock(&backup_mu_);
      GROVE_RETURN_IF_ERROR(c->error);
      size_t got = 0;
      GROVE_RETURN_IF_ERROR(data_file_->Read(f * kPageSize, n * kPageSize, buf.data(), &got));
      if (got != n * kPageSize) return Status::DataLoss("backup: data file shorter than it was");
      for (uint64_t i = 0; i < n; ++i) skip[i] = c->preserved[f + i];
      c->frontier = f + n;
    }
    for (uint64_t i = 0; i < n;) {
      if (skip[i]) {
        ++i;
        continue;
      }
      uint64_t j = i;
      while (j < n && !skip[j]) ++j;
      GROVE_RETURN_IF_ERROR(c->dest->Write((f + i) * kPageSize,
                                           Slice(buf.data() + i * kPageSize, (j - i) * kPageSize)));
      i = j;
    }
    f += n;
    if (!backup::Pace(f * kPageSize, started, options.max_bytes_per_second, stop)) {
      return Status::Aborted("backup: cancelled, or the database is closing");
    }
  }
  return c->dest->Sync();
}

Status DbImpl::Backup(const std::string& dir, const BackupOptions& options, BackupInfo* info) {
  *info = BackupInfo();
  if (closed_.load()) return Status::Unavailable("database is closed");
  if (!backup_run_mu_.TryLock()) {
    return Status::FailedPrecondition("a backup is already running; one at a time");
  }
  {
    MutexLock stats(&backup_stats_mu_);
    backup_stats_.running = true;
  }
  Status s = BackupLocked(dir, options, info);
  backup_run_mu_.Unlock();
  {
    MutexLock stats(&backup_stats_mu_);
    backup_stats_.running = false;
    if (s.ok()) {
      ++backup_stats_.completed;
      backup_stats_.last_seconds = info->seconds;
      backup_stats_.last_bytes = info->data_bytes + info->wal_bytes;
      backup_stats_.last_unix_ms = info->created_unix_ms;
      backup_stats_.last_pages_preserved = info->pages_preserved;
    } else {
      ++backup_stats_.failed;
    }
  }
  if (!s.ok()) {
    logger_->Log(LogLevel::kWarn, "backup to " + dir + " failed: " + s.ToString());
  } else {
    logger_->Log(LogLevel::kInfo,
                 fmt::format("backup to {}: checkpoint {}, log up to LSN {}, {:.1f} MiB, "
                             "{} pages copied ahead of overwrites, {:.2f} s",
                             dir, info->checkpoint_epoch, info->last_lsn,
                             static_cast<double>(info->data_bytes + info->wal_bytes) / (1 << 20),
                             info->pages_preserved, info->seconds));
  }
  return s;
}

Status DbImpl::BackupLocked(const std::string& dir, const BackupOptions& options,
                            BackupInfo* info) {
  // A fail-stopped database may have a half-written data file.
  GROVE_RETURN_IF_ERROR(CheckWritable());
  if (options.max_bytes_per_second != 0 &&
      options.max_bytes_per_second < backup::kMinBytesPerSecond) {
    return Status::InvalidArgument(
        fmt::format("max_bytes_per_second: {} is below {} (1 MiB/s); 0 means unlimited",
                    options.max_bytes_per_second, backup::kMinBytesPerSecond));
  }
  const backup::StopFn stop = [this, &options] {
    return closed_.load() || (options.cancelled && options.cancelled());
  };
  const uint64_t t0 = NowNanos();
  bool made_dir = false;
  GROVE_RETURN_IF_ERROR(backup::PrepareEmptyDir(io_.get(), dir, "backup directory", &made_dir));
  // Nobody opens the backup as a database while it is written.
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<LockFile> lock, LockFile::Acquire(dir));

  std::vector<std::string> created;  // removed again when the backup fails
  auto cleanup = [&](const Status& cause) {
    // The directory was empty: what is in it now is this backup's, and it goes with it.
    for (const std::string& name : created) io_->DeleteFile(dir + "/" + name).IgnoreError();
    lock.reset();
    io_->DeleteFile(dir + "/LOCK").IgnoreError();
    if (made_dir) {
      std::error_code ec;
      std::filesystem::remove(dir, ec);  // only when empty
    }
    return cause;
  };
  backup::Description d;
  auto copy = std::make_unique<BackupCopy>();
  FileOptions create;
  create.create = true;
  created.push_back(kBackupDataFileName);
  StatusOr<std::unique_ptr<File>> dest = io_->OpenFile(dir + "/" + kBackupDataFileName, create);
  if (!dest.ok()) return cleanup(dest.status());
  copy->dest = std::move(*dest);
  std::string manifest;
  {
    std::optional<CheckpointWaiter> waiter(std::in_place, this);  // a paced checkpoint hurries
    MutexLock cp(&checkpoint_mu_);
    waiter.reset();
    // C0: every page it names is in place in the data file once it is durable.
    Status s = CheckpointLocked(CheckpointReason::kManual);
    if (!s.ok()) return cleanup(s.WithContext("backup: the checkpoint it starts from"));
    std::string problems;
    StatusOr<std::optional<Superblock>> sb = ReadSuperblock(data_file_.get(), &problems);
    if (!sb.ok()) return cleanup(sb.status());
    if (!sb->has_value() || (*sb)->epoch != durable_epoch_.load()) {
      return cleanup(
          Status::Internal("backup: the superblock does not name the newest checkpoint"));
    }
    StatusOr<std::string> m = ReadManifestFile(io_.get(), options_.data_dir, (*sb)->epoch,
                                               (*sb)->manifest_size, (*sb)->manifest_crc);
    if (!m.ok()) return cleanup(m.status());
    manifest = std::move(*m);
    s = LinkVariantFiles(dir, &created);
    if (!s.ok()) return cleanup(s);
    d.info.checkpoint_epoch = (*sb)->epoch;
    d.info.redo_lsn = redo_lsn_.load();
    StatusOr<uint64_t> size = data_file_->Size();
    if (!size.ok()) return cleanup(size.status());
    copy->end_pages = *size / kPageSize;
    copy->preserved.assign(copy->end_pages, false);
    s = copy->dest->Truncate(copy->end_pages * kPageSize);
    if (!s.ok()) return cleanup(s);
    // From here on, no checkpoint drops the log the backup needs, and no write into the data
    // file changes a page before the copy has it.
    wal_pin_ = d.info.redo_lsn;
    MutexLock b(&backup_mu_);
    backup_copy_ = copy.get();
    backup_active_.store(true, std::memory_order_release);
  }
  Status s = CopyDataFile(copy.get(), options, stop);
  {
    MutexLock b(&backup_mu_);
    backup_active_.store(false, std::memory_order_release);
    backup_copy_ = nullptr;
    if (s.ok()) s = copy->error;
  }
  d.info.pages_preserved = copy->pages_preserved;
  d.info.data_bytes = copy->end_pages * kPageSize;
  copy.reset();

  // The log: whole records from C0's redo point up to now (the backup point).
  if (s.ok() && stop()) s = Status::Aborted("backup: cancelled, or the database is closing");
  if (s.ok()) {
    const wal::LogExtent log = wal_->BackupExtent(d.info.redo_lsn);
    d.info.last_lsn = log.next_lsn - 1;
    for (size_t i = 0; i < log.segments.size() && s.ok(); ++i) {
      const wal::SegmentRef& seg = log.segments[i];
      const std::string name = seg.path.substr(seg.path.rfind('/') + 1);
      uint64_t bytes = log.active_bytes;
      if (i + 1 < log.segments.size() || !log.last_is_active) {
        StatusOr<std::unique_ptr<File>> f = io_->OpenFile(seg.path, FileOptions{});
        StatusOr<uint64_t> size = f.ok() ? (*f)->Size() : StatusOr<uint64_t>(f.status());
        if (!size.ok()) {
          s = size.status();
          break;
        }
        bytes = *size;
      }
      created.push_back(name);
      s = backup::CopyFile(io_.get(), seg.path, dir + "/" + name, bytes,
                           options.max_bytes_per_second, stop);
      d.info.wal_bytes += bytes;
    }
  }
  wal_pin_ = kMaxLsn;
  if (!s.ok()) return cleanup(s);

  const std::string manifest_name = ManifestFileName(d.info.checkpoint_epoch);
  created.push_back(manifest_name);
  s = WriteManifestFile(io_.get(), dir, d.info.checkpoint_epoch, manifest);
  if (!s.ok()) return cleanup(s);

  d.info.variant = variant_;
  d.params = params_;
  for (const auto& [k, v] : params_) {
    d.info.params += (d.info.params.empty() ? "" : ";") + k + "=" + v;
  }
  d.info.created_unix_ms = NowUnixMillis();
  for (const std::string& name : created) {
    StatusOr<backup::FileEntry> f = backup::Summarize(io_.get(), dir, name);
    if (!f.ok()) return cleanup(f.status());
    d.files.push_back(std::move(*f));
  }
  d.info.seconds = static_cast<double>(NowNanos() - t0) * 1e-9;
  // The BACKUP file last: a directory without one is an unfinished backup.
  const std::string text = backup::Encode(d);
  StatusOr<std::unique_ptr<File>> f = io_->OpenFile(dir + "/" + backup::kBackupFileName, create);
  if (!f.ok()) return cleanup(f.status());
  created.push_back(backup::kBackupFileName);
  s = (*f)->Truncate(0);
  if (s.ok()) s = (*f)->Write(0, text);
  if (s.ok()) s = (*f)->Sync();
  if (s.ok()) s = io_->SyncDir(dir);
  if (!s.ok()) return cleanup(s);
  lock.reset();
  io_->DeleteFile(dir + "/LOCK").IgnoreError();  // harmless if it stays
  *info = d.info;
  return Status::Ok();
}

}  // namespace grove
