// DbImpl: close, statistics, verification, and DestroyDb.

#include <algorithm>
#include <cerrno>
#include <optional>

#include <fmt/format.h>
#include <unistd.h>

#include "engine/db_impl.h"
#include "engine/double_write.h"
#include "engine/manifest.h"
#include "util/crc32c.h"

namespace grove {

Status DbImpl::Close() {
  if (closed_.exchange(true)) return Status::Unavailable("database is closed");
  {
    // A running backup sees closed_ and gives up; it must be gone before the log closes.
    MutexLock backup(&backup_run_mu_);
  }
  {
    MutexLock lock(&bg_mu_);
    bg_stop_ = true;
    bg_cv_.SignalAll();
  }
  if (bg_thread_.joinable()) bg_thread_.join();
  StopExpirySweeper();
  // Writes are refused from here on, but the index may still run maintenance units: TreeLine
  // writes its record cache's dirty records back, so the next open replays nothing.
  if (index_) index_->Shutdown();
  maintenance_closed_ = true;
  Status s;
  if (failed_.load()) {
    MutexLock lock(&state_mu_);
    s = bg_error_;
  } else if (!options_.read_only) {
    s = RunCheckpoint(CheckpointReason::kClose);
  }
  if (wal_) {
    Status ws = wal_->Close();
    if (s.ok()) s = ws;
  }
  lock_.reset();
  if (s.ok()) logger_->Log(LogLevel::kInfo, "closed " + options_.data_dir);
  return s;
}

DbStats DbImpl::GetStats() {
  DbStats s;
  s.io_backend = std::string(io_->Name());
  s.gets = gets_.load();
  s.puts = puts_.load();
  s.deletes = deletes_.load();
  s.writes = writes_.load();
  s.scans = scans_.load();
  s.data_file_pages = allocator_.high_water_pages();
  s.free_pages = allocator_.free_pages();
  s.blob_values = values_->blob_values();
  s.blob_pages = values_->blob_pages();
  s.recovery_replayed_records = recovery_records_;
  s.recovery_seconds = recovery_seconds_;
  s.cache = pool_->GetStats();
  s.expiry.expired_reads = expired_reads_.load();
  s.expiry.keys_removed = expired_removed_.load();
  s.expiry.sweeps = expiry_sweeps_.load();
  s.expiry.may_hold_expiring = may_hold_expiring_.load();
  {
    MutexLock lock(&backup_stats_mu_);
    s.backup = backup_stats_;
  }
  if (wal_) s.wal = wal_->GetStats();
  s.checkpoint.count = checkpoints_.load();
  s.checkpoint.failures = checkpoint_failures_.load();
  s.checkpoint.epoch = durable_epoch_.load();
  s.checkpoint.redo_lsn = redo_lsn_.load();
  s.checkpoint.snapshot_lsn = snapshot_lsn_.load();
  s.checkpoint.pages_written = checkpoint_pages_.load();
  s.checkpoint.bytes_written = checkpoint_bytes_.load();
  s.checkpoint.duration_seconds = checkpoint_seconds_.Snapshot();
  s.checkpoint.pause_seconds = checkpoint_pause_seconds_.Snapshot();
  s.checkpoint.paced_seconds = static_cast<double>(checkpoint_paced_nanos_.load()) * 1e-9;
  if (dirty_room_) s.write_room = dirty_room_->GetStats();
  s.index = index_->GetStats();
  s.memory.epoch_table_bytes = epochs_.MemoryBytes();
  s.memory.allocator_bytes = allocator_.MemoryBytes();
  return s;
}

namespace {

// Collects what the index claims and checks it against the allocator and the value store.
class EngineVerifier final : public IndexVerifier {
 public:
  // One byte per page of the data file (whose claim it is), so that verifying a billion records
  // (some 7 million pages) costs 7 MiB.
  EngineVerifier(DbImpl* db, uint64_t pages, VerifyReport* report)
      : db_(db), owner_(pages, kNobody), report_(report) {}

  void ClaimPages(PageId first, uint32_t count, std::string_view what) override {
    for (PageId p = first; p < first + count; ++p) {
      if (p >= owner_.size()) {
        Problem(
            fmt::format("{} page {} lies beyond the data file ({} pages)", what, p, owner_.size()));
        continue;
      }
      if (owner_[p] != kNobody) {
        Problem(
            fmt::format("page {} is reachable twice: as {} and as {}", p, names_[owner_[p]], what));
        continue;
      }
      owner_[p] = Intern(what);
      ++report_->pages_checked;
    }
  }

  void OnCell(Slice key, Slice cell) override {
    ++report_->entries_checked;
    if (!IsValidCell(cell)) {
      Problem(fmt::format("malformed value cell ({} bytes)", cell.size()));
      return;
    }
    if (!IsBlobCell(cell)) return;
    const BlobRef ref = DecodeBlobCell(cell);
    ClaimPages(ref.first, ref.pages(), "blob");
    std::string value;
    // Writers are paused, so the blob cannot be freed underneath; expired values are checked
    // like any other (they keep their space until the expiry sweep removes them).
    if (Status s = db_->ReadBlob(ref, &value); !s.ok()) {
      Problem(fmt::format("blob at page {}: {}", ref.first, s.ToString()));
    }
    ++report_->blob_values_checked;
  }

  void OnShadowedCell(Slice key, Slice cell) override {
    if (!IsValidCell(cell)) {
      Problem(fmt::format("malformed shadowed value cell ({} bytes)", cell.size()));
      return;
    }
    if (!IsBlobCell(cell)) return;
    const BlobRef ref = DecodeBlobCell(cell);
    ClaimPages(ref.first, ref.pages(), "shadowed blob");
    // Writers are paused: the blob cannot be freed underneath, so a mismatch is damage.
    std::string value;
    if (Status s = db_->ReadBlob(ref, &value); !s.ok()) {
      Problem(fmt::format("shadowed blob at page {}: {}", ref.first, s.ToString()));
    }
  }

  void Problem(std::string description) override {
    if (report_->problems.size() < 1000) report_->problems.push_back(std::move(description));
  }

  bool owned(PageId p) const { return owner_[p] != kNobody; }

 private:
  static constexpr uint8_t kNobody = 0xff;

  // The index of `what` among the kinds of page seen so far (a handful per variant); past 254
  // kinds, the last one stands for the rest.
  uint8_t Intern(std::string_view what) {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == what) return static_cast<uint8_t>(i);
    }
    if (names_.size() + 1 >= kNobody) {
      names_.back() = "one of several kinds of page";
      return static_cast<uint8_t>(names_.size() - 1);
    }
    names_.emplace_back(what);
    return static_cast<uint8_t>(names_.size() - 1);
  }

  DbImpl* const db_;
  std::vector<uint8_t> owner_;
  std::vector<std::string> names_;
  VerifyReport* const report_;
};

}  // namespace

Status DbImpl::Verify(VerifyReport* report) {
  if (closed_.load()) return Status::Unavailable("database is closed");
  *report = VerifyReport();
  // Writers and maintenance units wait until the page accounting below is done: the walk must
  // see one consistent tree, and a page allocated or freed after it would look leaked or
  // reachable-but-free. Checkpoints wait too (their page ownership changes would look like leaks).
  std::optional<CheckpointWaiter> waiter(std::in_place, this);  // a paced checkpoint hurries
  MutexLock checkpoint_lock(&checkpoint_mu_);
  waiter.reset();
  gate_.Pause();
  struct Resume {
    WriteGate* gate;
    ~Resume() { gate->Resume(); }
  } resume{&gate_};
  const uint64_t pages = allocator_.high_water_pages();
  EngineVerifier v(this, pages, report);
  GROVE_RETURN_IF_ERROR(index_->Verify(&v));
  for (PageId p : {PageId{0}, PageId{1}}) {
    if (p < pages) v.ClaimPages(p, 1, "superblock");
  }
  for (PageId p : epochs_.map_page_ids()) v.ClaimPages(p, 1, "epoch map");
  if (std::string why = allocator_.CheckInvariants(); !why.empty()) v.Problem("allocator: " + why);
  uint64_t leaked = 0, reachable_free = 0;
  PageId first_leak = 0, first_free = 0;
  for (PageId p = 0; p < pages; ++p) {
    const bool free = allocator_.IsFree(p);
    if (v.owned(p) && free && reachable_free++ == 0) first_free = p;
    if (!v.owned(p) && !free && leaked++ == 0) first_leak = p;
  }
  if (reachable_free > 0) {
    v.Problem(
        fmt::format("{} reachable pages are marked free (first: {})", reachable_free, first_free));
  }
  if (leaked > 0) {
    // Say what the first one holds: a blob nobody references points at the value path, an index
    // page at the variant.
    std::string kind = "unreadable";
    AlignedBuffer page(kPageSize);
    if (pool_->ReadCopy(first_leak, page.data(), IoCause::kScan).ok()) {
      kind = fmt::format("a page of type {}", page::Type(page.data()));
    } else if (epochs_.Get(first_leak) == 0) {
      kind = "never written";
    }
    v.Problem(fmt::format("{} allocated pages are unreachable (leaked; first: {}, {})", leaked,
                          first_leak, kind));
  }
  return Status::Ok();
}

Status DestroyDb(const std::string& data_dir) {
  auto io = NewIoBackend(IoBackendOptions{.kind = IoBackendKind::kPsync}, nullptr);
  if (!io.ok()) return io.status();
  if (!(*io)->FileExists(data_dir)) return Status::Ok();
  GROVE_ASSIGN_OR_RETURN(auto lock, LockFile::Acquire(data_dir));
  GROVE_ASSIGN_OR_RETURN(const auto names, (*io)->ListDir(data_dir));
  for (const std::string& name : names) {
    uint64_t epoch;
    const bool ours = name == "grove.data" || name == kDoubleWriteFileName ||
                      ParseManifestFileName(name, &epoch) ||
                      (name.rfind("wal-", 0) == 0 && name.size() > 8 &&
                       name.compare(name.size() - 4, 4, ".log") == 0);
    if (ours) GROVE_RETURN_IF_ERROR((*io)->DeleteFile(data_dir + "/" + name));
  }
  lock.reset();
  (*io)->DeleteFile(data_dir + "/LOCK").IgnoreError();
  (*io)->SyncDir(data_dir).IgnoreError();
  if (auto rest = (*io)->ListDir(data_dir); rest.ok() && rest->empty()) {
    if (::rmdir(data_dir.c_str()) != 0) return Status::FromErrno(errno, "rmdir " + data_dir);
  }
  return Status::Ok();
}

}  // namespace grove
