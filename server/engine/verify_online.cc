// DbImpl::VerifyOnline: Verify's checks on a snapshot of the newest checkpoint, while the
// database keeps serving.
//
// Verify checks the live state and must hold writers out for its whole walk: a page allocated or
// freed under it would look leaked or reachable-but-free. At a billion records that walk reads
// millions of pages. VerifyOnline instead takes a checkpoint C0 and checks C0: the data file as
// it stood when C0 became durable is reconstructed the way a backup copies it (backup.cc): every
// overwrite of the data file while it runs first copies the old pages into a scratch file
// (PreserveBeforeWrite), and a read of the snapshot takes each page from there if it was copied,
// from the data file otherwise (ReadAsOfCopy). C0's manifest and the variant's own files go into
// a scratch directory beside them, and that directory is opened as a second database, read-only
// (Options::read_only), through SnapshotBackend (snapshot_view.h), with a cache of its own. Its
// Verify then walks C0 with nothing to pause.
//
// It shares the backup's hook, so one backup or online verify runs at a time (backup_run_mu_).

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "engine/manifest.h"
#include "engine/snapshot_view.h"
#include "util/clock.h"

namespace grove {
namespace {

constexpr const char* kSnapshotDirName = "verify-snapshot";
constexpr const char* kPreservedFileName = "preserved";
constexpr uint64_t kMinSnapshotCache = 8ull << 20;

}  // namespace

Status DbImpl::VerifyOnline(const VerifyOnlineOptions& options, VerifyReport* report) {
  *report = VerifyReport();
  if (closed_.load()) return Status::Unavailable("database is closed");
  if (options_.read_only) {
    // Nothing writes a read-only database: the plain walk is already online.
    const uint64_t t0 = NowNanos();
    Status s = Verify(report);
    report->checkpoint_epoch = durable_epoch_.load();
    report->seconds = static_cast<double>(NowNanos() - t0) * 1e-9;
    return s;
  }
  if (!backup_run_mu_.TryLock()) {
    return Status::FailedPrecondition(
        "a backup or an online verify is already running; one at a time");
  }
  Status s = VerifyOnlineLocked(options, report);
  backup_run_mu_.Unlock();
  if (!s.ok()) logger_->Log(LogLevel::kWarn, "online verify failed: " + s.ToString());
  return s;
}

Status DbImpl::VerifyOnlineLocked(const VerifyOnlineOptions& options, VerifyReport* report) {
  // A fail-stopped database may have a half-written data file.
  GROVE_RETURN_IF_ERROR(CheckWritable());
  const uint64_t t0 = NowNanos();
  const std::string scratch = options_.data_dir + "/" + kSnapshotDirName;
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);  // a run that did not finish left it
  GROVE_RETURN_IF_ERROR(io_->CreateDir(scratch));
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      std::filesystem::remove_all(dir, e);
    }
  } cleanup{scratch};

  auto copy = std::make_unique<BackupCopy>();
  GROVE_ASSIGN_OR_RETURN(copy->dest,
                         io_->OpenFile(scratch + "/" + kPreservedFileName,
                                       FileOptions{.create = true, .direct = options_.direct_io}));
  std::string manifest;
  uint64_t epoch = 0;
  {
    std::optional<CheckpointWaiter> waiter(std::in_place, this);  // a paced checkpoint hurries
    MutexLock cp(&checkpoint_mu_);
    waiter.reset();
    // C0: every page it names is in place in the data file once it is durable.
    GROVE_RETURN_IF_ERROR(CheckpointLocked(CheckpointReason::kManual)
                              .WithContext("verify: the checkpoint it checks"));
    std::string problems;
    GROVE_ASSIGN_OR_RETURN(std::optional<Superblock> sb,
                           ReadSuperblock(data_file_.get(), &problems));
    if (!sb.has_value() || sb->epoch != durable_epoch_.load()) {
      return Status::Internal("verify: the superblock does not name the newest checkpoint");
    }
    GROVE_ASSIGN_OR_RETURN(manifest, ReadManifestFile(io_.get(), options_.data_dir, sb->epoch,
                                                      sb->manifest_size, sb->manifest_crc));
    epoch = sb->epoch;
    std::vector<std::string> linked;
    GROVE_RETURN_IF_ERROR(LinkVariantFiles(scratch, &linked));
    GROVE_ASSIGN_OR_RETURN(const uint64_t size, data_file_->Size());
    copy->end_pages = size / kPageSize;
    copy->preserved.assign(copy->end_pages, false);
    GROVE_RETURN_IF_ERROR(copy->dest->Truncate(copy->end_pages * kPageSize));
    // From here on no write into the data file changes a page before its C0 image is preserved.
    MutexLock b(&backup_mu_);
    backup_copy_ = copy.get();
    backup_active_.store(true, std::memory_order_release);
  }
  auto stop_preserving = [&] {
    MutexLock b(&backup_mu_);
    backup_active_.store(false, std::memory_order_release);
    backup_copy_ = nullptr;
    return copy->error;
  };

  Status s = WriteManifestFile(io_.get(), scratch, epoch, manifest);
  std::unique_ptr<Db> view;
  if (s.ok()) {
    const std::function<bool()> stop = [this, &options] {
      return closed_.load() || (options.cancelled && options.cancelled());
    };
    Options vo = options_;
    vo.data_dir = scratch;
    vo.read_only = true;
    vo.create_if_missing = false;
    // The pool the variant needs is a floor: hln with 256-page leaves needs 16 MiB. (hln's pool
    // is all of its cache; a variant with a smaller pool share and a floor would scale it.)
    vo.cache_bytes = options.cache_bytes != 0
                         ? options.cache_bytes
                         : std::max({kMinSnapshotCache, options_.cache_bytes / 16,
                                     index_->MinPoolPages() * kPageSize});
    vo.expiry.sweep_interval_seconds = 0;
    vo.index.variant = variant_;
    vo.logger = logger_;
    vo.io_backend = std::make_shared<SnapshotBackend>(
        io_, scratch + "/grove.data", copy->end_pages * kPageSize,
        [this, c = copy.get(), stop](uint64_t offset, size_t n, char* buf, size_t* got) {
          return ReadAsOfCopy(c, offset, n, buf, got, stop);
        });
    StatusOr<std::unique_ptr<Db>> opened = Db::Open(vo);
    if (opened.ok()) {
      view = std::move(*opened);
      s = view->Verify(report);
      Status closed = view->Close();
      if (s.ok()) s = closed;
    } else {
      s = opened.status().WithContext("verify: opening the snapshot");
    }
  }
  Status hook = stop_preserving();
  if (s.ok()) s = hook;
  report->checkpoint_epoch = epoch;
  report->pages_preserved = copy->pages_preserved;
  report->seconds = static_cast<double>(NowNanos() - t0) * 1e-9;
  if (s.ok()) {
    logger_->Log(LogLevel::kInfo,
                 fmt::format("online verify of checkpoint {}: {} pages, {} entries, {} problems, "
                             "{} pages copied ahead of overwrites, {:.2f} s",
                             epoch, report->pages_checked, report->entries_checked,
                             report->problems.size(), report->pages_preserved, report->seconds));
  }
  return s;
}

}  // namespace grove
