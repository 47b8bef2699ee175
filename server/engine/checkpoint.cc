// DbImpl: checkpoints and the background thread that triggers them.

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "engine/checkpoint_pacer.h"
#include "engine/db_impl.h"
#include "engine/double_write.h"
#include "engine/manifest.h"
#include "util/clock.h"
#include "util/crc32c.h"

namespace grove {
namespace {

// A checkpoint's pages in page order: the pool's captured pages (copied out of the pool as they
// are written, CopySnapshot) merged with the epoch map's changed pages (images of their own).
// With a pacer, each chunk waits for its turn first.
class CheckpointImages final : public PageImageSource {
 public:
  CheckpointImages(BufferPool* pool, const std::vector<PageId>& ids,
                   const std::vector<EpochTable::MapPageImage>& maps, CheckpointPacer* pacer)
      : pool_(pool), maps_(maps), pacer_(pacer) {
    entries_.reserve(ids.size() + maps.size());
    for (size_t i = 0; i < ids.size(); ++i) entries_.push_back({ids[i], static_cast<int64_t>(i)});
    for (size_t i = 0; i < maps.size(); ++i) {
      entries_.push_back({maps[i].id, -1 - static_cast<int64_t>(i)});
    }
    std::sort(entries_.begin(), entries_.end());
  }
  size_t size() const override { return entries_.size(); }
  PageId id(size_t i) const override { return entries_[i].first; }
  Status Copy(size_t first, size_t count, char* out) override {
    if (pacer_ != nullptr) pacer_->Before(count);
    for (size_t i = first; i < first + count;) {
      const int64_t source = entries_[i].second;
      char* dst = out + (i - first) * kPageSize;
      if (source < 0) {
        std::memcpy(dst, maps_[static_cast<size_t>(-1 - source)].image.data(), kPageSize);
        ++i;
        continue;
      }
      // Pool pages next to each other here are next to each other in the snapshot too.
      size_t j = i + 1;
      while (j < first + count && entries_[j].second == entries_[j - 1].second + 1) ++j;
      pool_->CopySnapshot(static_cast<size_t>(source), j - i, dst);
      i = j;
    }
    return Status::Ok();
  }

 private:
  BufferPool* const pool_;
  const std::vector<EpochTable::MapPageImage>& maps_;
  CheckpointPacer* const pacer_;
  // (page id, source): a snapshot slot (>= 0) or map image -1 - source.
  std::vector<std::pair<PageId, int64_t>> entries_;
};

}  // namespace

Status DbImpl::Checkpoint() {
  if (closed_.load()) return Status::Unavailable("database is closed");
  if (options_.read_only) {
    return Status::FailedPrecondition(options_.data_dir + " is open read-only: no checkpoints");
  }
  return RunCheckpoint(CheckpointReason::kManual);
}

Status DbImpl::RunCheckpoint(CheckpointReason reason) {
  // Queued ones count too: a writer short of room waits for this one rather than queue its own.
  DirtyRoom::CheckpointScope running(dirty_room_.get());
  std::optional<CheckpointWaiter> waiter;
  if (reason != CheckpointReason::kTimer) waiter.emplace(this);
  MutexLock lock(&checkpoint_mu_);
  waiter.reset();
  return CheckpointLocked(reason);
}

Status DbImpl::CheckpointLocked(CheckpointReason reason, bool gate_paused) {
  if (failed_.load()) {
    MutexLock lock(&state_mu_);
    return bg_error_;
  }
  const uint64_t t0 = NowNanos();
  const uint64_t epoch = durable_epoch_.load() + 1;
  const auto epoch32 = static_cast<uint32_t>(epoch);

  // 1. With writers paused: a consistent snapshot of dirty pages, epochs and metadata. The pages
  //    stay where they are (a writer that changes one copies it out first) and stream through
  //    fixed buffers from there into the double-write file and to their places.
  std::vector<PageId> ids;
  std::vector<EpochTable::MapPageImage> maps;
  std::string manifest, metadata;
  std::vector<std::string> memory_cells;
  uint64_t high_water = 0, wal_bytes = 0;
  Lsn redo = 0, snapshot_next_lsn = 0;
  uint64_t direct_runs = 0, flags = 0;
  bool snapshotted = false, prepared = false;
  const uint64_t paused_at = NowNanos();  // writers arriving from here on wait
  if (!gate_paused) gate_.Pause();
  const uint64_t drained_at = NowNanos();
  uint64_t captured_at = 0;
  Status s = [&]() -> Status {
    prepared = true;
    direct_runs = direct_runs_.load();
    GROVE_RETURN_IF_ERROR(index_->PrepareCheckpoint(epoch));
    snapshot_next_lsn = wal_ ? wal_->next_lsn() : replay_next_lsn_.load();
    // Batches half applied while their writers wait for room are replayed whole.
    redo = std::min({snapshot_next_lsn, index_->OldestUnpersistedLsn(), OldestPartialLsn()});
    wal_bytes = wal_ ? wal_->appended_bytes() : 0;
    ids = pool_->SnapshotDirty(epoch32);
    captured_at = NowNanos();
    snapshotted = true;
    GROVE_RETURN_IF_ERROR(epochs_.Stage(ids, epoch32, &allocator_));
    Manifest m;
    m.epoch = epoch;
    m.redo_lsn = redo;
    allocator_.Serialize(&m.allocator);
    allocator_.NoteCheckpoint(epoch);
    epochs_.Serialize(&m.epoch_map);
    m.variant = variant_;
    m.params = params_string_;
    index_->ListMemoryOnlyCells(&memory_cells);
    // Inline cells hold their value themselves: only blob cells have pages to free at recovery.
    std::erase_if(memory_cells, [](const std::string& c) { return !IsBlobCell(c); });
    metadata = index_->SerializeMetadata();
    m.index_metadata = metadata;
    m.memory_only_cells = memory_cells;
    m.blob_values = values_->blob_values();
    m.blob_pages = values_->blob_pages();
    {
      MutexLock marks_lock(&marks_mu_);
      for (const auto& [name, mark] : marks_) {
        if (!mark.value.empty()) m.marks.push_back({name, mark.value, mark.lsn});
      }
    }
    if (may_hold_expiring_.load()) m.flags |= Manifest::kMayHoldExpiring;
    flags = m.flags;
    manifest = m.Encode();
    high_water = allocator_.high_water_pages();
    return Status::Ok();
  }();
  if (!gate_paused) gate_.Resume();
  const uint64_t resumed_at = NowNanos();
  if (!gate_paused) checkpoint_pause_seconds_.RecordNanos(resumed_at - paused_at);

  auto abort = [&](const Status& cause) {
    if (snapshotted) pool_->EndCheckpoint(false);
    if (prepared) index_->OnCheckpointAbandoned(epoch);
    epochs_.Abort(&allocator_);
    checkpoint_failures_.fetch_add(1);
    last_checkpoint_no_space_ = cause.IsResourceExhausted();
    return cause.WithContext(fmt::format("checkpoint {}", epoch));
  };
  if (!s.ok()) return abort(s);
  // The epoch-map images cost a page each for every map page the dirty pages touch (with random
  // writes, nearly all of them on a large file): built here, after writers resumed.
  maps = epochs_.StagedImages(ids);
  // The checkpoint holds state it does not write (writes only the index's memory holds) or holds
  // part of a batch: the records from its redo point on must be durable before it is (with
  // wal.sync always they are, but for writes that opted out: WriteOptions::sync; Sync returns at
  // once when nothing is unsynced). This holds for a checkpoint that finds nothing to write
  // too: the state it stands for lives in those records alone.
  if (redo < snapshot_next_lsn && wal_) {
    if (Status ws = wal_->Sync(); !ws.ok()) return abort(ws);
  }
  if (ids.empty() && maps.empty() && redo == redo_lsn_.load() &&
      metadata == durable_index_metadata_ && memory_cells == durable_memory_cells_ &&
      flags == durable_flags_ && reason != CheckpointReason::kCreate) {
    pool_->EndCheckpoint(true);  // nothing changed since the last checkpoint
    epochs_.Commit({}, epoch32);
    index_->OnCheckpointAbandoned(epoch);
    snapshot_lsn_ = snapshot_next_lsn;
    last_checkpoint_nanos_ = NowNanos();
    return Status::Ok();
  }

  // A background checkpoint spreads its writes over a share of the time since the previous one
  // began; anything waiting for this one gets it at full speed.
  const uint64_t since = t0 - std::min(t0, last_checkpoint_start_nanos_);
  last_checkpoint_start_nanos_ = t0;
  const bool paced = reason == CheckpointReason::kTimer && options_.checkpoint.spread > 0;
  CheckpointPacer pacer(t0, paced ? static_cast<uint64_t>(options_.checkpoint.spread * since) : 0,
                        2 * (ids.size() + maps.size()), [this] {
                          return closed_.load() || checkpoint_waiters_.load() > 0 || !dirty_room_ ||
                                 dirty_room_->Pressed();
                        });
  CheckpointImages pages(pool_.get(), ids, maps, &pacer);

  // 2. Reserve space, so that a full disk fails here, before anything is overwritten. Pages the
  //    index wrote directly (bulk loads, sorted runs) and this state names must be durable before
  //    the double-write batch and manifest are: from those on, recovery finishes the checkpoint
  //    without rewriting them.
  const uint64_t allocating_at = NowNanos();
  s = data_file_->Allocate(0, high_water * kPageSize);
  if (s.ok() && direct_runs != direct_runs_synced_) {
    s = data_file_->Sync();
    if (s.ok()) direct_runs_synced_ = direct_runs;
  }
  // 3. The double-write batch, then the manifest: after these, recovery can finish this
  //    checkpoint on its own.
  const uint64_t allocated_at = NowNanos();
  if (s.ok()) s = WriteDoubleWrite(dw_file_.get(), epoch, pages, manifest);
  const uint64_t dw_at = NowNanos();
  if (s.ok()) s = WriteManifestFile(io_.get(), options_.data_dir, epoch, manifest);
  const uint64_t manifest_at = NowNanos();
  if (!s.ok()) {
    checkpoint_paced_nanos_.fetch_add(pacer.slept_nanos());
    return abort(s);
  }

  // 4. In place, then the superblock flip. A failure from here on is fail-stop: memory is ahead of
  //    a data file that may be half-written; reopening repairs it from the double-write batch.
  // A running backup copies what these writes overwrite first (backup.cc).
  for (size_t i = 0; i < pages.size();) {
    size_t j = i + 1;
    while (j < pages.size() && pages.id(j) == pages.id(j - 1) + 1) ++j;
    PreserveBeforeWrite(pages.id(i), j - i);
    i = j;
  }
  s = WritePagesInPlace(io_.get(), data_file_.get(), pages);
  const uint64_t in_place_at = NowNanos();
  checkpoint_paced_nanos_.fetch_add(pacer.slept_nanos());
  if (s.ok()) {
    PreserveBeforeWrite(epoch % 2, 1);  // the superblock slot this checkpoint flips
    Superblock sb;
    sb.epoch = epoch;
    sb.manifest_size = manifest.size();
    sb.manifest_crc = crc32c::Mask(crc32c::Value(manifest.data(), manifest.size()));
    sb.created_unix = created_unix_;
    sb.variant = variant_;
    sb.layout = layout_;
    s = WriteSuperblock(data_file_.get(), sb);
  }
  if (!s.ok()) {
    pool_->EndCheckpoint(false);
    index_->OnCheckpointAbandoned(epoch);
    checkpoint_failures_.fetch_add(1);
    const Status err = Status::Internal(fmt::format(
        "checkpoint {} failed while writing pages in place ({}); the database refuses writes "
        "until it is reopened, which completes the checkpoint from the double-write file",
        epoch, s.ToString()));
    SetBackgroundError(err);
    return err;
  }

  // 5. Durable: publish, then clean up what no recovery can need any more.
  epochs_.Commit(ids, epoch32);
  pool_->EndCheckpoint(true);
  durable_epoch_ = epoch;
  allocator_.NoteDurable(epoch);
  redo_lsn_ = redo;
  snapshot_lsn_ = snapshot_next_lsn;
  durable_index_metadata_ = std::move(metadata);
  durable_memory_cells_ = std::move(memory_cells);
  durable_flags_ = flags;
  index_->OnCheckpointDurable(epoch);
  wal_bytes_at_checkpoint_ = wal_bytes;
  last_checkpoint_no_space_ = false;
  pool_->RecordWrites(IoCause::kCheckpoint, 2 * pages.size());
  checkpoints_.fetch_add(1);
  checkpoint_pages_.fetch_add(pages.size());
  checkpoint_bytes_.fetch_add(2 * pages.size() * kPageSize + 2 * manifest.size());
  const uint64_t t1 = NowNanos();
  last_checkpoint_nanos_ = t1;
  checkpoint_seconds_.RecordNanos(t1 - t0);

  if (auto names = io_->ListDir(options_.data_dir); names.ok()) {
    for (const std::string& name : *names) {
      uint64_t e;
      if (ParseManifestFileName(name, &e) && e + 1 < epoch) {
        io_->DeleteFile(options_.data_dir + "/" + name).IgnoreError();  // a leftover is harmless
      }
    }
  }
  if (wal_) {
    if (Status ws = wal_->RemoveObsoleteSegments(std::min<Lsn>(redo, wal_pin_.load())); !ws.ok()) {
      logger_->Log(LogLevel::kWarn, "removing old WAL segments failed: " + ws.ToString());
    }
  }
  {
    const auto ms = [](uint64_t a, uint64_t b) { return static_cast<double>(b - a) * 1e-6; };
    // Where a checkpoint's time goes, for an operator chasing write stalls (debug level).
    logger_->Log(reason == CheckpointReason::kTimer || reason == CheckpointReason::kDirty
                     ? LogLevel::kDebug
                     : LogLevel::kInfo,
                 fmt::format("checkpoint {}: {} pages, redo LSN {}, {:.1f} ms: writers held {:.1f} "
                             "ms (in-flight writes drained {:.1f}, dirty pages captured {:.1f}), "
                             "allocate {:.1f}, double-write {:.1f}, manifest {:.1f}, in place "
                             "{:.1f}, superblock {:.1f}; paced {:.1f} ms{}",
                             epoch, pages.size(), redo, ms(t0, t1), ms(paused_at, resumed_at),
                             ms(paused_at, drained_at), ms(drained_at, captured_at),
                             ms(allocating_at, allocated_at), ms(allocated_at, dw_at),
                             ms(dw_at, manifest_at), ms(manifest_at, in_place_at),
                             ms(in_place_at, t1), static_cast<double>(pacer.slept_nanos()) * 1e-6,
                             pacer.hurried() ? " (then hurried)" : ""));
  }
  return Status::Ok();
}

bool DbImpl::CheckpointDue() const {
  const double dirty = static_cast<double>(pool_->dirty_pages());
  if (dirty >= options_.checkpoint.dirty_fraction * static_cast<double>(pool_->capacity_pages())) {
    return true;
  }
  const uint64_t wal_now = wal_ ? wal_->appended_bytes() : 0;
  const uint64_t wal_since = wal_now - std::min(wal_now, wal_bytes_at_checkpoint_.load());
  if (wal_since >= options_.checkpoint.wal_bytes) return true;
  if (options_.checkpoint.interval_seconds > 0 && (dirty > 0 || wal_since > 0)) {
    const uint64_t age = NowNanos() - last_checkpoint_nanos_.load();
    if (static_cast<double>(age) >= options_.checkpoint.interval_seconds * 1e9) return true;
  }
  return false;
}

void DbImpl::MaybeScheduleCheckpoint() {
  const double dirty = static_cast<double>(pool_->dirty_pages());
  if (dirty < options_.checkpoint.dirty_fraction * static_cast<double>(pool_->capacity_pages())) {
    const uint64_t wal_now = wal_->appended_bytes();
    if (wal_now - std::min(wal_now, wal_bytes_at_checkpoint_.load()) <
        options_.checkpoint.wal_bytes) {
      return;
    }
  }
  MutexLock lock(&bg_mu_);
  bg_kick_ = true;
  bg_cv_.Signal();
}

void DbImpl::BackgroundLoop() {
  uint64_t failures_logged = 0;
  for (;;) {
    {
      MutexLock lock(&bg_mu_);
      if (!bg_stop_ && !bg_kick_) bg_cv_.WaitFor(std::chrono::milliseconds(100));
      if (bg_stop_) return;
      bg_kick_ = false;
    }
    if (failed_.load() || closed_.load() || !CheckpointDue()) continue;
    Status s = RunCheckpoint(CheckpointReason::kTimer);
    if (!s.ok()) {
      // A full disk makes every attempt fail the same way; say so now and then, not every 100 ms.
      if (failures_logged++ % 100 == 0) {
        logger_->Log(LogLevel::kError, "background checkpoint failed: " + s.ToString());
      }
    } else {
      failures_logged = 0;
    }
  }
}

}  // namespace grove
