#pragma once

// DbImpl: the engine behind grove::Db. See docs/architecture.md for the read and write paths.
//
// Write path: validate -> Index::Prepare (fault pages in; a damaged page fails the write before it
// is logged) -> wait for dirty-page room -> enter the write gate -> lock the keys' stripes -> WAL
// append (group commit, synced per wal.sync) -> apply to the index (values above the inline
// threshold go to the value store first; replaced blobs are freed) -> unlock -> leave the gate.
// A failure after the record is logged but before it is applied leaves memory behind the log; the
// Db then refuses writes (fail-stop) until it is reopened, which replays the log.
//
// Checkpoint (one at a time, checkpoint_mu_): pause the gate -> index hooks, redo LSN, snapshot the
// dirty pages, stage the epoch map, encode the manifest -> resume the gate -> reserve space ->
// double-write file (sync) -> manifest file (sync) -> pages in place (sync) -> superblock flip
// (sync) -> commit epochs, release frames, drop old WAL segments and manifests. A failure before
// the in-place writes aborts cleanly (pages stay dirty); one after them is fail-stop (recovery
// repairs the data file from the double-write file).
//
// Lock order: checkpoint_mu_ -> gate -> key stripes -> (index latches, buffer pool internals);
// state_mu_ is a leaf.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "grove/db.h"
#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "engine/key_locks.h"
#include "engine/lock_file.h"
#include "engine/superblock.h"
#include "engine/value_store.h"
#include "engine/write_gate.h"
#include "index/registry.h"
#include "page/epoch_table.h"
#include "page/extent_allocator.h"
#include "util/histogram.h"
#include "util/mutex.h"
#include "wal/wal.h"

namespace grove {

// Validates `options` (every error names the field); returns a copy with defaults filled in.
StatusOr<Options> CheckOptions(const Options& options);

class DbImpl final : public Db {
 public:
  static StatusOr<std::unique_ptr<Db>> Open(const Options& options);
  ~DbImpl() override;

  Status Close() override;
  StatusOr<bool> Get(Slice key, std::string* value, const ReadOptions& options) override;
  Status BatchGet(const std::vector<Slice>& keys, std::vector<std::optional<std::string>>* values,
                  const ReadOptions& options) override;
  Status Put(Slice key, Slice value) override;
  Status Delete(Slice key) override;
  Status Write(const WriteBatch& batch) override;
  StatusOr<std::unique_ptr<Iterator>> NewIterator(const ScanOptions& options) override;
  Status BulkLoad(const BulkLoadSource& source) override;
  Status Checkpoint() override;
  DbStats GetStats() override;
  Status Verify(VerifyReport* report) override;

  // Turns a cell into its value, reading the value store for blob cells. A blob that no longer
  // matches its checksum may have been freed by a concurrent overwrite: the key's cell is read
  // again and only an unchanged cell makes it data loss.
  Status ResolveCell(Slice key, std::string cell, IoCause cause, std::string* value);

  Index* index() { return index_.get(); }

 private:
  class DirectWriter;
  enum class CheckpointReason { kManual, kDirty, kWal, kTimer, kRecovery, kClose, kCreate };

  explicit DbImpl(const Options& options);

  // --- open / recovery (db_open.cc) ---
  Status OpenImpl();
  // Creates grove.data holding a durable epoch-0 superblock, atomically (write, sync, rename).
  Status CreateDataFile(const FileOptions& opts);
  Status CreateFresh(const IndexRegistry& registry, const ParamMap& params);
  Status LoadCheckpoint(const Superblock& sb, const IndexRegistry& registry,
                        const ParamMap& params);
  // Finishes the checkpoint after *sb from a complete double-write batch (and advances *sb), or
  // leaves it when its manifest cannot be written for lack of space (it then never reached its
  // in-place writes, and the WAL recovers it).
  Status RepairFromDoubleWrite(Superblock* sb);
  Status ReplayWal();
  Status LoadEpochMap();

  // --- writes (db_write.cc) ---
  Status CheckKey(Slice key, const char* field) const;
  Status CheckWritable() const;
  // Pages `batch` may leave dirty, and a reservation for them (running a checkpoint first when
  // needed). RESOURCE_EXHAUSTED when the batch could never fit.
  uint64_t PagesNeeded(const WriteBatch& batch) const;
  Status BulkLoadLocked(const BulkLoadSource& source) REQUIRES(checkpoint_mu_);
  Status ReserveDirtyRoom(uint64_t pages);
  // Gives back what ReserveDirtyRoom reserved (what the write dirtied now counts as dirty pages).
  void ReleaseDirtyRoom(uint64_t pages);
  // Applies a logged batch to the index. Also the replay path.
  Status ApplyBatch(Lsn lsn, const WriteBatch& batch);
  Status ApplyPut(Lsn lsn, Slice key, Slice value);
  Status ApplyDelete(Lsn lsn, Slice key);
  void ReleaseCell(const std::optional<std::string>& old_cell);
  void SetBackgroundError(const Status& s);
  void MaybeScheduleCheckpoint();

  // --- checkpoints (checkpoint.cc) ---
  Status RunCheckpoint(CheckpointReason reason) EXCLUDES(checkpoint_mu_);
  // `gate_paused`: the caller already holds writers out (bulk load); otherwise the checkpoint
  // pauses them itself for its snapshot.
  Status CheckpointLocked(CheckpointReason reason, bool gate_paused = false)
      REQUIRES(checkpoint_mu_);
  void BackgroundLoop();
  bool CheckpointDue() const;

  Options options_;
  std::shared_ptr<Logger> logger_;
  std::shared_ptr<IoBackend> io_;
  std::unique_ptr<LockFile> lock_;
  std::unique_ptr<File> data_file_;
  std::unique_ptr<File> dw_file_;
  EpochTable epochs_;
  ExtentAllocator allocator_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<DirectWriter> direct_;
  std::unique_ptr<ValueStore> values_;
  std::unique_ptr<Index> index_;
  std::unique_ptr<wal::Wal> wal_;
  std::string variant_, params_string_, layout_;
  uint64_t created_unix_ = 0;

  WriteGate gate_;
  KeyLocks key_locks_;

  Mutex checkpoint_mu_;
  // Epoch of the newest durable checkpoint; the next one is durable_epoch_ + 1.
  std::atomic<uint64_t> durable_epoch_{0};
  std::atomic<uint64_t> redo_lsn_{1};
  // During recovery: the LSN of the next record to replay (the checkpoint's redo point).
  std::atomic<Lsn> replay_next_lsn_{0};
  std::atomic<uint64_t> wal_bytes_at_checkpoint_{0};
  std::atomic<uint64_t> last_checkpoint_nanos_{0};
  std::atomic<bool> last_checkpoint_no_space_{false};
  std::atomic<uint64_t> reserved_pages_{0};  // dirty-page room reserved by writes in flight
  // Reservations are taken under room_mu_; room_cv_ is signalled when a write releases its own.
  Mutex room_mu_;
  CondVar room_cv_{&room_mu_};

  Mutex state_mu_;
  Status bg_error_ GUARDED_BY(state_mu_);
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> recovering_{false};

  Mutex bg_mu_;
  CondVar bg_cv_{&bg_mu_};
  bool bg_stop_ GUARDED_BY(bg_mu_) = false;
  bool bg_kick_ GUARDED_BY(bg_mu_) = false;
  std::thread bg_thread_;

  std::atomic<uint64_t> gets_{0}, puts_{0}, deletes_{0}, writes_{0}, scans_{0};
  std::atomic<uint64_t> checkpoints_{0}, checkpoint_failures_{0}, checkpoint_pages_{0},
      checkpoint_bytes_{0};
  Histogram checkpoint_seconds_;
  uint64_t recovery_records_ = 0;
  double recovery_seconds_ = 0;
};

}  // namespace grove
