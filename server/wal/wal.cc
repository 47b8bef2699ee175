#include "wal/wal.h"

#include <algorithm>
#include <array>
#include <chrono>

#include <fmt/format.h>

#include "util/clock.h"
#include "util/coding.h"
#include "wal/log_writer.h"

namespace grove::wal {

namespace {

// A leader gathers at most this many framed bytes (beyond the first record) into one group, so that
// one slow group does not hold back the writers queued behind it for long.
constexpr uint64_t kMaxGroupBytes = 1 << 20;

const char* SyncModeName(SyncMode mode) {
  switch (mode) {
    case SyncMode::kAlways:
      return "always";
    case SyncMode::kBatch:
      return "batch";
    case SyncMode::kNone:
      return "none";
  }
  return "?";
}

}  // namespace

// One Append waiting in the queue. Lives on the appending thread's stack.
struct Wal::Writer {
  explicit Writer(Mutex* mu) : cv(mu) {}
  Slice payload;
  bool sync = true;  // under kAlways, the group carrying it syncs before it is answered
  Lsn lsn = 0;
  Status status;
  bool done = false;
  CondVar cv;
};

// An open segment. Immutable once created; File is safe for concurrent use, so the batch thread and
// Sync() may fdatasync it while the leader writes.
struct Wal::Segment {
  std::unique_ptr<File> file;
  std::string path;
};

// What the leader captured under the mutex, and what its IO achieved.
struct Wal::GroupPlan {
  std::vector<Writer*> writers;
  Lsn first_lsn = 0;
  std::shared_ptr<Segment> segment;
  uint64_t offset = 0;    // where the group goes in `segment`
  uint64_t unsynced = 0;  // log bytes unsynced when the plan was made (an upper bound)
  bool roll = false;      // a new segment is due
  bool sync = false;      // a writer of the group waits for a sync (kAlways)

  bool synced_before = false;  // everything written before this group is durable
  std::shared_ptr<Segment> new_segment;
  bool written = false;
  bool synced = false;     // the group itself is durable
  bool retryable = false;  // no space for a new segment: nothing written, try again later
  std::string failed;      // what failed, for a fail-stop
};

Wal::Wal(IoBackend* io, std::string dir, const WalOptions& options, Lsn next_lsn, Logger* logger)
    : io_(io),
      dir_(std::move(dir)),
      options_(options),
      logger_(logger),
      group_limit_(std::min<uint64_t>(kMaxGroupBytes, options.max_unsynced_bytes / 2)),
      next_lsn_(next_lsn) {}

Wal::~Wal() {
  Status s = Close();
  if (!s.ok()) Log(LogLevel::kWarn, "wal: closing in the destructor: " + s.ToString());
}

void Wal::Log(LogLevel level, const std::string& message) const {
  if (logger_ != nullptr) logger_->Log(level, message);
}

StatusOr<std::unique_ptr<Wal>> Wal::Open(IoBackend* io, const std::string& dir,
                                         const WalOptions& options, Lsn next_lsn, Logger* logger) {
  GROVE_RETURN_IF_ERROR(ValidateWalOptions(options));
  if (next_lsn == 0) return Status::InvalidArgument("wal: next_lsn must be at least 1");
  GROVE_ASSIGN_OR_RETURN(std::vector<SegmentRef> segments, ListSegments(io, dir));

  // Never write over records: a segment at or beyond next_lsn means the caller did not take
  // next_lsn from Replay. The one exception is an empty segment named next_lsn (a crash right after
  // the previous Open or roll created it), which is replaced.
  if (!segments.empty() && segments.back().first_lsn >= next_lsn) {
    const SegmentRef& last = segments.back();
    bool empty = false;
    if (last.first_lsn == next_lsn) {
      GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> f,
                             io->OpenFile(last.path, FileOptions{.read_only = true}));
      std::array<char, kHeaderSize> header{};
      size_t n = 0;
      GROVE_RETURN_IF_ERROR(f->Read(0, header.size(), header.data(), &n));
      empty = std::all_of(header.begin(), header.begin() + n, [](char c) { return c == 0; });
    }
    if (!empty) {
      return Status::FailedPrecondition(fmt::format(
          "wal: {} already holds records at or beyond LSN {}; Open's next_lsn must be Replay's",
          last.path, next_lsn));
    }
    segments.pop_back();
  }

  const std::string path = dir + "/" + SegmentFileName(next_lsn);
  StatusOr<std::unique_ptr<File>> file = CreateSegmentFile(io, path, options.segment_bytes);
  // A full disk must not keep a database from opening (it still serves reads, and recovery needs
  // no new log space): open without an active segment and leave the segment to the first Append,
  // exactly like a roll that failed for lack of space. Replay has already fdatasynced the last old
  // segment, so there is nothing to seal before the new one gets records.
  const bool deferred = !file.ok() && file.status().IsResourceExhausted();
  if (!file.ok() && !deferred) return file.status();
  if (!deferred) {
    GROVE_RETURN_IF_ERROR(io->SyncDir(dir).WithContext("wal: syncing the directory"));
  }

  std::unique_ptr<Wal> wal(new Wal(io, dir, options, next_lsn, logger));
  {
    MutexLock lock(&wal->mu_);
    if (deferred) {
      wal->roll_pending_ = true;
    } else {
      wal->active_ = std::make_shared<Segment>(Segment{std::move(file).value(), path});
      segments.push_back({next_lsn, path});
    }
    wal->segments_ = std::move(segments);
  }
  if (options.sync == SyncMode::kBatch) {
    wal->batch_thread_ = std::thread([w = wal.get()] { w->BatchSyncLoop(); });
  }
  if (deferred) {
    wal->Log(LogLevel::kWarn,
             fmt::format("wal: no space for a new segment at LSN {} ({}); opened without one, "
                         "writes fail with RESOURCE_EXHAUSTED until space returns (sync: {})",
                         next_lsn, file.status().ToString(), SyncModeName(options.sync)));
  } else {
    wal->Log(LogLevel::kInfo, fmt::format("wal: appending at LSN {} in {} (sync: {})", next_lsn,
                                          path, SyncModeName(options.sync)));
  }
  return wal;
}

StatusOr<Lsn> Wal::Append(Slice payload, bool sync) {
  if (payload.size() > MaxPayloadBytes(options_)) {
    return Status::InvalidArgument(fmt::format(
        "wal: record of {} bytes exceeds the limit of {} bytes (wal.max_unsynced_bytes / 2)",
        payload.size(), MaxPayloadBytes(options_)));
  }
  Writer w(&mu_);
  w.payload = payload;
  w.sync = sync;

  MutexLock lock(&mu_);
  if (closed_) return Status::Unavailable("wal: closed");
  if (!stopped_.ok()) return stopped_;
  queue_.push_back(&w);
  while (!w.done && &w != queue_.front()) w.cv.Wait();
  if (!w.done) CommitGroup();
  if (!w.status.ok()) return w.status;
  return w.lsn;
}

std::vector<StatusOr<Lsn>> Wal::AppendMany(const std::vector<Slice>& payloads,
                                           const std::vector<bool>* no_sync) {
  std::vector<StatusOr<Lsn>> out(payloads.size(), StatusOr<Lsn>(Lsn{0}));
  std::deque<Writer> writers;  // a deque: queued writers must not move
  std::vector<size_t> index;   // writers[k] carries payloads[index[k]]
  for (size_t i = 0; i < payloads.size(); ++i) {
    if (payloads[i].size() > MaxPayloadBytes(options_)) {
      out[i] = Status::InvalidArgument(fmt::format(
          "wal: record of {} bytes exceeds the limit of {} bytes (wal.max_unsynced_bytes / 2)",
          payloads[i].size(), MaxPayloadBytes(options_)));
      continue;
    }
    Writer& w = writers.emplace_back(&mu_);
    w.payload = payloads[i];
    w.sync = no_sync == nullptr || !(*no_sync)[i];
    index.push_back(i);
  }
  if (writers.empty()) return out;

  MutexLock lock(&mu_);
  Status refused;
  if (closed_) {
    refused = Status::Unavailable("wal: closed");
  } else if (!stopped_.ok()) {
    refused = stopped_;
  }
  if (!refused.ok()) {
    for (size_t i : index) out[i] = refused;
    return out;
  }
  // Queued back to back, so a leader takes them into one group as far as its bound allows. Each
  // is waited for in turn: the one at the head of the queue leads the next group itself.
  for (Writer& w : writers) queue_.push_back(&w);
  for (size_t k = 0; k < writers.size(); ++k) {
    Writer& w = writers[k];
    while (!w.done && &w != queue_.front()) w.cv.Wait();
    if (!w.done) CommitGroup();
    out[index[k]] = w.status.ok() ? StatusOr<Lsn>(w.lsn) : StatusOr<Lsn>(w.status);
  }
  return out;
}

void Wal::CommitGroup() {
  Writer* const leader = queue_.front();
  GroupPlan plan;
  uint64_t bound = 0;
  for (Writer* w : queue_) {
    const uint64_t b = MaxFramedSize(kLsnSize + w->payload.size());
    if (!plan.writers.empty() && bound + b > group_limit_) break;
    plan.writers.push_back(w);
    plan.sync |= w->sync;
    bound += b;
  }

  Status result = stopped_;  // the batch thread or Sync() may have stopped the log meanwhile
  if (result.ok()) {
    plan.first_lsn = next_lsn_;
    plan.segment = active_;
    plan.offset = active_written_;
    plan.unsynced = written_ - synced_;
    plan.roll = roll_pending_;

    mu_.Unlock();
    const Status io = WriteGroup(&plan);
    mu_.Lock();

    if (plan.synced_before) {
      synced_ = written_;  // everything before this group is durable
      NoteSyncedLocked(records_);
    }
    if (plan.new_segment != nullptr) {
      active_ = plan.new_segment;
      active_written_ = 0;
      segments_.push_back({plan.first_lsn, plan.new_segment->path});
      roll_pending_ = false;
    } else if (plan.synced_before && plan.roll) {
      roll_pending_ = true;  // the old segment is sealed (synced); keep trying to roll
    }
    if (plan.written) {
      const uint64_t n = group_buf_.size();
      active_written_ += n;
      written_ += n;
      next_lsn_ += plan.writers.size();
      records_ += plan.writers.size();
      ++groups_;
      appended_bytes_.fetch_add(n, std::memory_order_relaxed);
    }
    if (plan.synced) {
      synced_ = written_;
      NoteSyncedLocked(records_);
    }

    if (io.ok()) {
      result = Status::Ok();
    } else if (plan.retryable) {
      result = Status::ResourceExhausted(
          fmt::format("wal: no space for a new segment ({}); nothing was written", io.message()));
      Log(LogLevel::kWarn, std::string(result.message()));
    } else {
      result = StopLocked(plan.failed, io);
    }
  }

  for (size_t i = 0; i < plan.writers.size(); ++i) {
    Writer* w = queue_.front();
    queue_.pop_front();
    w->status = result;
    w->lsn = plan.first_lsn + i;
    w->done = true;
    if (w != leader) w->cv.Signal();
  }
  if (!queue_.empty()) {
    queue_.front()->cv.Signal();  // the next leader
  } else {
    drained_cv_.SignalAll();
  }
}

Status Wal::WriteGroup(GroupPlan* plan) {
  const auto frame = [&](uint64_t offset) {
    group_buf_.clear();
    LogWriter writer(offset);
    char lsn[kLsnSize];
    for (size_t i = 0; i < plan->writers.size(); ++i) {
      EncodeFixed64(lsn, plan->first_lsn + i);
      const std::array<Slice, 2> parts = {Slice(lsn, kLsnSize), plan->writers[i]->payload};
      writer.AddRecord(parts, &group_buf_);
    }
  };
  frame(plan->offset);

  if (plan->roll || plan->offset + group_buf_.size() > options_.segment_bytes) {
    plan->roll = true;
    // Seal the old segment before the new one gets any record: Replay relies on every segment
    // but the last being complete and durable. There is no old segment when Open found no space
    // for its own; then the last segment on disk is the one Replay read and already synced.
    if (plan->segment != nullptr) {
      Status s = SyncFile(plan->segment->file.get());
      if (!s.ok()) {
        plan->failed = "fdatasync of " + plan->segment->path;
        return s;
      }
    }
    plan->synced_before = true;
    const std::string path = dir_ + "/" + SegmentFileName(plan->first_lsn);
    StatusOr<std::unique_ptr<File>> file = CreateSegmentFile(io_, path, options_.segment_bytes);
    if (!file.ok()) {
      plan->retryable = file.status().IsResourceExhausted();
      plan->failed = "creating " + path;
      return file.status();
    }
    // The new name must be durable before records that are acknowledged live in it.
    Status s = io_->SyncDir(dir_);
    if (!s.ok()) {
      plan->failed = "fsync of directory " + dir_;
      return s;
    }
    plan->new_segment = std::make_shared<Segment>(Segment{std::move(file).value(), path});
    plan->segment = plan->new_segment;
    plan->offset = 0;
    frame(0);
    Log(LogLevel::kInfo, fmt::format("wal: rolled to {}", path));
  } else if (plan->unsynced + group_buf_.size() > options_.max_unsynced_bytes) {
    Status s = SyncFile(plan->segment->file.get());
    if (!s.ok()) {
      plan->failed = "fdatasync of " + plan->segment->path;
      return s;
    }
    plan->synced_before = true;
  }

  Status s = plan->segment->file->Write(plan->offset, group_buf_);
  if (!s.ok()) {
    plan->failed = "write to " + plan->segment->path;
    return s;
  }
  plan->written = true;
  if (options_.sync == SyncMode::kAlways && plan->sync) {
    s = SyncFile(plan->segment->file.get());
    if (!s.ok()) {
      plan->failed = "fdatasync of " + plan->segment->path;
      return s;
    }
    plan->synced = true;
  }
  return Status::Ok();
}

void Wal::NoteSyncedLocked(uint64_t records) {
  if (records <= records_synced_) return;
  records_per_sync_.Record(static_cast<double>(records - records_synced_));
  records_synced_ = records;
}

Status Wal::SyncFile(File* file) {
  const uint64_t start = NowNanos();
  Status s = file->Sync();
  sync_seconds_.RecordNanos(NowNanos() - start);
  syncs_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Status Wal::StopLocked(const std::string& what, const Status& cause) {
  if (stopped_.ok()) {
    stopped_ = Status::Internal(
        fmt::format("wal: {} failed earlier ({}); reopen to recover", what, cause.ToString()));
    Log(LogLevel::kError,
        fmt::format("wal: {} failed ({}); the log is stopped (fail-stop)", what, cause.ToString()));
  }
  return Status::Internal(fmt::format("wal: {} failed ({}); the log is stopped, reopen to recover",
                                      what, cause.ToString()));
}

Status Wal::SyncActive() {
  mu_.Lock();
  if (!stopped_.ok()) {
    Status s = stopped_;
    mu_.Unlock();
    return s;
  }
  if (synced_ >= written_ || active_ == nullptr) {
    mu_.Unlock();
    return Status::Ok();
  }
  // Earlier segments were synced when the log rolled past them, so all unsynced bytes are here.
  const std::shared_ptr<Segment> segment = active_;
  const uint64_t target = written_;
  const uint64_t target_records = records_;
  mu_.Unlock();

  Status s = SyncFile(segment->file.get());

  mu_.Lock();
  if (s.ok()) {
    synced_ = std::max(synced_, target);
    NoteSyncedLocked(target_records);
  } else {
    s = StopLocked("fdatasync of " + segment->path, s);
  }
  mu_.Unlock();
  return s;
}

Status Wal::Sync() {
  {
    MutexLock lock(&mu_);
    if (closed_) return Status::Unavailable("wal: closed");
  }
  return SyncActive();
}

void Wal::BatchSyncLoop() {
  const auto interval = std::chrono::microseconds(options_.batch_interval_us);
  mu_.Lock();
  while (!closed_) {
    batch_cv_.WaitFor(interval);
    if (closed_) break;
    if (!stopped_.ok() || synced_ >= written_) continue;
    mu_.Unlock();
    // A failure stops the log; the next Append reports it.
    SyncActive().IgnoreError();
    mu_.Lock();
  }
  mu_.Unlock();
}

Status Wal::RemoveObsoleteSegments(Lsn redo_lsn) {
  std::vector<SegmentRef> doomed;
  {
    MutexLock lock(&mu_);
    if (closed_) return Status::Unavailable("wal: closed");
    // segments_[k] holds only records below segments_[k + 1].first_lsn. The active segment is last
    // and therefore never a candidate.
    size_t k = 0;
    while (k + 1 < segments_.size() && segments_[k + 1].first_lsn <= redo_lsn) ++k;
    doomed.assign(segments_.begin(), segments_.begin() + k);
    segments_.erase(segments_.begin(), segments_.begin() + k);
  }
  if (doomed.empty()) return Status::Ok();

  Status first_error;
  std::vector<SegmentRef> kept;
  for (const SegmentRef& seg : doomed) {
    Status s = io_->DeleteFile(seg.path);
    if (!s.ok() && !s.IsNotFound()) {
      if (first_error.ok()) first_error = s.WithContext("wal: removing an obsolete segment");
      kept.push_back(seg);
    }
  }
  if (!kept.empty()) {
    MutexLock lock(&mu_);
    segments_.insert(segments_.begin(), kept.begin(), kept.end());
  }
  Status s = io_->SyncDir(dir_);
  if (first_error.ok() && !s.ok()) first_error = s.WithContext("wal: syncing the directory");
  Log(LogLevel::kInfo, fmt::format("wal: removed {} segment(s) below LSN {}",
                                   doomed.size() - kept.size(), redo_lsn));
  return first_error;
}

Lsn Wal::next_lsn() const {
  MutexLock lock(&mu_);
  return next_lsn_;
}

LogExtent Wal::BackupExtent(Lsn from_lsn) const {
  MutexLock lock(&mu_);
  // A group's bytes, next_lsn_ and the segment list change together under mu_ once the group is
  // written, so this is a prefix of the log made of whole records.
  LogExtent e;
  size_t k = 0;
  while (k + 1 < segments_.size() && segments_[k + 1].first_lsn <= from_lsn) ++k;
  e.segments.assign(segments_.begin() + static_cast<std::ptrdiff_t>(k), segments_.end());
  e.last_is_active = active_ != nullptr;
  e.active_bytes = active_written_;
  e.next_lsn = next_lsn_;
  return e;
}

uint64_t Wal::RetainedBytes(Lsn from_lsn) const {
  MutexLock lock(&mu_);
  if (segments_.empty()) return 0;
  size_t k = 0;
  while (k + 1 < segments_.size() && segments_[k + 1].first_lsn <= from_lsn) ++k;
  const uint64_t sealed = segments_.size() - 1 - k;
  return sealed * options_.segment_bytes + active_written_;
}

WalStats Wal::GetStats() const {
  WalStats stats;
  {
    MutexLock lock(&mu_);
    stats.records = records_;
    stats.groups = groups_;
    stats.segments = segments_.size();
    stats.next_lsn = next_lsn_;
  }
  stats.bytes = appended_bytes_.load(std::memory_order_relaxed);
  stats.syncs = syncs_.load(std::memory_order_relaxed);
  stats.sync_seconds = sync_seconds_.Snapshot();
  stats.records_per_sync = records_per_sync_.Snapshot();
  return stats;
}

Status Wal::Close() {
  mu_.Lock();
  if (closed_) {
    mu_.Unlock();
    return Status::Ok();
  }
  closed_ = true;
  while (!queue_.empty()) drained_cv_.Wait();
  batch_cv_.SignalAll();
  mu_.Unlock();
  if (batch_thread_.joinable()) batch_thread_.join();

  Status s = SyncActive();

  mu_.Lock();
  std::shared_ptr<Segment> active = std::move(active_);
  active_ = nullptr;
  const uint64_t used = active_written_;
  const bool healthy = s.ok() && stopped_.ok();
  mu_.Unlock();

  if (healthy && active != nullptr) {
    // Give back the unused preallocation so the next Replay has no zeros to scan. Everything is
    // already durable; whether the new size survives a crash does not matter to Replay.
    Status t = active->file->Truncate(used);
    if (t.ok()) t = active->file->Sync();
    if (!t.ok()) Log(LogLevel::kWarn, "wal: trimming " + active->path + ": " + t.ToString());
  }
  return s;
}

}  // namespace grove::wal
