#pragma once

// DbImpl: the engine behind grove::Db. See docs/architecture.md for the read and write paths.
//
// Write path: validate -> Index::Prepare (fault pages in; a damaged page fails the write before it
// is logged) -> lock the keys' stripes -> reserve dirty-page room (running a checkpoint when none
// is left) -> enter the write gate -> WAL append (group commit, synced per wal.sync) -> apply to
// the index (values above the inline threshold go to the value store first; replaced blobs are
// freed) -> leave the gate -> unlock. A batch whose worst case does not fit the write room at
// once is applied operation by operation, reserving before each; when an operation finds no room
// the write leaves the gate so that a checkpoint can run (its redo point stays at or below the
// batch's LSN until the batch is applied, and replay is idempotent). A failure after the record is
// logged but before it is applied leaves memory behind the log; the Db then refuses writes
// (fail-stop) until it is reopened, which replays the log.
//
// Maintenance units (IndexServices::RunMaintenance) reserve room and hold the gate like a write,
// without a log record.
//
// Checkpoint (one at a time, checkpoint_mu_): pause the gate -> index hooks, redo LSN, snapshot the
// dirty pages, stage the epoch map, encode the manifest -> resume the gate -> reserve space ->
// double-write file (sync) -> manifest file (sync) -> pages in place (sync) -> superblock flip
// (sync) -> commit epochs, release frames, drop old WAL segments and manifests. A failure before
// the in-place writes aborts cleanly (pages stay dirty); one after them is fail-stop (recovery
// repairs the data file from the double-write file).
//
// Lock order: key stripes -> checkpoint_mu_ -> gate -> (index latches, buffer pool internals);
// the DirtyRoom's mutex, partial_mu_ and state_mu_ are leaves. A writer waits for room (and may run
// a checkpoint) holding its stripes but never the gate; nobody waits for a stripe inside the gate.

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "grove/db.h"
#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "engine/dirty_room.h"
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

class DbImpl final : public Db, private IndexServices {
 public:
  using Clock = std::chrono::steady_clock;
  static StatusOr<std::unique_ptr<Db>> Open(const Options& options);
  ~DbImpl() override;

  Status Close() override;
  StatusOr<bool> Get(Slice key, std::string* value, const ReadOptions& options) override;
  StatusOr<bool> GetWithMeta(Slice key, std::string* value, ValueMeta* meta) override;
  Status BatchGet(const std::vector<Slice>& keys, std::vector<std::optional<std::string>>* values,
                  const ReadOptions& options) override;
  Status Put(Slice key, Slice value) override;
  Status Delete(Slice key) override;
  Status Write(const WriteBatch& batch) override;
  Status Write(const WriteBatch& batch, const WriteOptions& options, WriteResult* result) override;
  void WriteMany(std::span<WriteRequest> writes) override;
  Status DeleteRange(Slice start, Slice end, uint64_t limit, DeleteRangeResult* result) override;
  StatusOr<std::unique_ptr<Iterator>> NewIterator(const ScanOptions& options) override;
  Status Backup(const std::string& dir, const BackupOptions& options, BackupInfo* info) override;
  Status BulkLoad(const BulkLoadSource& source) override;
  Status Checkpoint() override;
  Status SyncWal() override;
  StatusOr<bool> GetMark(Slice name, std::string* value) override;
  DbStats GetStats() override;
  Status Verify(VerifyReport* report) override;
  Status VerifyOnline(const VerifyOnlineOptions& options, VerifyReport* report) override;

  // Turns a cell into its value, reading the value store for blob cells. A blob that no longer
  // matches its checksum may have been freed by a concurrent overwrite: the key's cell is read
  // again and only an unchanged cell makes it data loss.
  // `meta` (may be null) receives the cell's version and expiry.
  Status ResolveCell(Slice key, Slice cell, IoCause cause, std::string* value,
                     CellMeta* meta = nullptr);
  // Whether `cell` carries an expiry that has passed (counted as an expired read).
  bool CellExpired(Slice cell);
  // Reads a blob for Verify (no retry: writers are paused).
  Status ReadBlob(const BlobRef& ref, std::string* value) {
    return values_->Read(ref, IoCause::kScan, value);
  }

  Index* index() { return index_.get(); }
  // What the index gets as IndexContext::services (for tests).
  IndexServices* services() { return this; }

 private:
  class DirectWriter;
  class Room;
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
  // The end of a read-only open (Options::read_only): after the checkpoint is loaded.
  Status OpenedReadOnly(uint64_t t0);
  Status ReplayWal();
  Status LoadEpochMap();
  IndexContext MakeIndexContext();

  // --- writes (db_write.cc) ---
  Status CheckKey(Slice key, const char* field) const;
  Status CheckWritable() const;
  // As CheckWritable, for maintenance units: they also run during Close until the index's
  // Shutdown returns.
  Status CheckMaintainable() const;
  // The dirty pages one operation may leave (WorstCaseWritePages for one entry), and what a
  // whole batch may: `total` for all of it, `first` and `largest` for single operations.
  uint64_t OpPages(WriteBatch::OpType type, Slice value) const;
  struct BatchPages {
    uint64_t total = 0, first = 0, largest = 0;
  };
  BatchPages PagesNeeded(const WriteBatch& batch) const;
  // What CheckWrite learned about a write before it locks anything.
  struct CheckedWrite {
    bool empty = false;       // no operation and no condition: nothing to do
    std::vector<Slice> keys;  // the batch's keys, then its conditions' keys: what it locks
    BatchPages need;
    bool stepwise = false;  // room reserved operation by operation (a large batch)
    uint32_t puts = 0, deletes = 0;
  };
  // Validates a write against the limits, faults in its pages and sizes its room; nothing is
  // locked or logged.
  Status CheckWrite(const WriteBatch& batch, const WriteOptions& options, CheckedWrite* out);
  // Locks, checks the conditions, logs and applies one checked write.
  Status CommitWrite(const WriteBatch& batch, const WriteOptions& options, const CheckedWrite& w,
                     WriteResult* result);
  void CountWrite(const CheckedWrite& w);
  static Clock::time_point RoomDeadline(const WriteOptions& options);
  // WriteMany's group: writes on distinct keys, checked, logged in one AppendMany and applied.
  struct GroupedWrite;
  void CommitWriteGroup(std::vector<GroupedWrite>* group);
  Status BulkLoadLocked(const BulkLoadSource& source) GROVE_REQUIRES(checkpoint_mu_);
  // Applies a logged batch to the index; `room` holds the reservation for all of it, or (with
  // `stepwise`) for its first operation only, and the rest is reserved operation by operation.
  // `in_gate`: the caller holds the write gate and leaves it while it waits for room. Also the
  // replay path (stepwise, outside the gate).
  // With the stripes of the batch's keys held: reserves `first_pages` of room (the whole batch's,
  // or its first operation's when `stepwise`), logs the batch and applies it; *lsn_out receives
  // its LSN. A failure after the append fail-stops the Db.
  // `sync`: WriteOptions::sync.
  Status LogAndApply(const WriteBatch& batch, bool stepwise, uint64_t first_pages,
                     Clock::time_point room_deadline, Lsn* lsn_out, bool sync = true);
  // Operations replaced by a later one of the same key are skipped.
  Status ApplyBatch(Lsn lsn, const WriteBatch& batch, Room* room, bool stepwise, bool in_gate);
  // Sets the batch's marks as of record `lsn`.
  void ApplyMarks(Lsn lsn, const WriteBatch& batch) GROVE_EXCLUDES(marks_mu_);
  // BatchGet's reads, with the key stripes held shared.
  Status BatchGetLocked(const std::vector<Slice>& keys,
                        std::vector<std::optional<std::string>>* values);
  // Checks `options.conditions` with their keys' stripes held; kFailedPrecondition (and `result`
  // filled) for the first that does not hold.
  Status CheckConditions(const WriteOptions& options, WriteResult* result);
  // The cell of `key` resolved to its value and metadata; false when absent.
  StatusOr<bool> ReadCurrent(Slice key, std::string* value, CellMeta* meta);
  // version 0: the record's LSN.
  Status ApplyPut(const WriteContext& w, Slice key, Slice value, uint64_t version,
                  uint64_t expires_ms);
  Status ApplyDelete(const WriteContext& w, Slice key);
  // Deletes every key of [start, end) (end empty: unbounded). `first`: the room held is for this
  // op's first key; every later key reserves its own (stepwise).
  Status ApplyDeleteRange(Lsn lsn, Slice start, Slice end, Room* room, bool first, bool in_gate);
  // DeleteRange with every key stripe held.
  Status DeleteRangeLocked(Slice start, Slice end, uint64_t limit, const char* limit_name,
                           DeleteRangeResult* result);
  // The keys of [start, end) (end empty: unbounded) in order, at most `max` of them;
  // (*visible)[i] (may be null) says whether keys[i]'s value has not expired.
  Status CollectRange(Slice start, Slice end, uint64_t max, std::vector<std::string>* keys,
                      std::vector<bool>* visible);
  void FreeCell(const std::optional<std::string>& old_cell);
  // Waits outside the gate for `pages` of room while the batch at `lsn` is half applied: a
  // checkpoint meanwhile keeps its redo point at or below `lsn`.
  Status YieldForRoom(Lsn lsn, uint64_t pages, bool in_gate);
  Lsn OldestPartialLsn() GROVE_EXCLUDES(partial_mu_);
  void SetBackgroundError(const Status& s);

  // --- IndexServices (for the variant) ---
  Status RunMaintenance(uint64_t pages, const std::function<Status(WriteRoom*)>& unit) override;
  void ReleaseCell(Slice cell) override;
  void FailStop(const Status& cause) override { SetBackgroundError(cause); }
  bool HoldsBlob(Slice cell) const override;
  uint64_t LogBytesFrom(Lsn lsn) const override;
  void MaybeScheduleCheckpoint();

  // --- online backup (backup.cc) ---
  // The state of a backup's data file copy (backup.cc), or of an online verify's snapshot
  // (verify_online.cc: it copies only what writes overwrite, and `frontier` stays 0). Pages below
  // `frontier` have been copied; a page at or past it that `preserved` marks was copied by the
  // hook, before an overwrite.
  struct BackupCopy {
    std::unique_ptr<File> dest;
    uint64_t end_pages = 0;  // the data file's size when the copy began
    uint64_t frontier = 0;
    std::vector<bool> preserved;
    uint64_t pages_preserved = 0;
    Status error;  // the hook's first failure: it fails the backup, never the write
  };
  Status BackupLocked(const std::string& dir, const BackupOptions& options, BackupInfo* info)
      GROVE_REQUIRES(backup_run_mu_);
  Status CopyDataFile(BackupCopy* copy, const BackupOptions& options,
                      const std::function<bool()>& stop) GROVE_EXCLUDES(backup_mu_);
  // Called before anything overwrites data file pages [first, first + count) while the process
  // runs (checkpoints in place and their superblock, direct writes): a running backup (or online
  // verify) first copies the pages it has not copied yet. Cheap when neither runs.
  void PreserveBeforeWrite(PageId first, uint64_t count) GROVE_EXCLUDES(backup_mu_);
  // Links (or copies) the variant's own files into `dir`, naming each in *created.
  Status LinkVariantFiles(const std::string& dir, std::vector<std::string>* created)
      GROVE_REQUIRES(checkpoint_mu_);
  // Reads whole pages of the data file as they stood when `c` began: those overwritten since
  // from where the hook preserved them, the rest from the data file. kAborted once `stop` says.
  Status ReadAsOfCopy(BackupCopy* c, uint64_t offset, size_t n, char* buf, size_t* got,
                      const std::function<bool()>& stop) GROVE_EXCLUDES(backup_mu_);

  // --- online verify (verify_online.cc) ---
  Status VerifyOnlineLocked(const VerifyOnlineOptions& options, VerifyReport* report)
      GROVE_REQUIRES(backup_run_mu_);

  // --- the expiry sweep (db_expiry.cc) ---
  void StartExpirySweeper();
  void StopExpirySweeper() GROVE_EXCLUDES(expiry_mu_);
  bool ExpiryStopping() GROVE_EXCLUDES(expiry_mu_);
  void ExpiryLoop();
  // One walk over the key space, removing expired keys.
  Status SweepExpired();
  // Deletes each (key, version) still at that version and expired, with one log record.
  Status RemoveExpired(const std::vector<std::pair<std::string, uint64_t>>& expired);

  // --- checkpoints (checkpoint.cc) ---
  Status RunCheckpoint(CheckpointReason reason) GROVE_EXCLUDES(checkpoint_mu_);
  // `gate_paused`: the caller already holds writers out (bulk load); otherwise the checkpoint
  // pauses them itself for its snapshot.
  Status CheckpointLocked(CheckpointReason reason, bool gate_paused = false)
      GROVE_REQUIRES(checkpoint_mu_);
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
  uint64_t variant_memory_bytes_ = 0;  // cache_bytes beyond the pool's share (IndexContext)
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
  std::atomic<uint64_t> snapshot_lsn_{0};  // see CheckpointStats::snapshot_lsn
  // Runs written by the DirectPageWriter, and how many of them the data file's last sync covers:
  // a checkpoint whose state names directly written pages syncs them before its double-write
  // batch and manifest, which let recovery finish it without the pages themselves.
  std::atomic<uint64_t> direct_runs_{0};
  uint64_t direct_runs_synced_ = 0;  // checkpoint thread only
  // During recovery: the LSN of the next record to replay (the checkpoint's redo point).
  std::atomic<Lsn> replay_next_lsn_{0};
  std::atomic<uint64_t> wal_bytes_at_checkpoint_{0};
  std::atomic<uint64_t> last_checkpoint_nanos_{0};
  // When the newest checkpoint that wrote anything began: a paced one spreads its writes over a
  // share of the time since (CheckpointOptions::spread).
  uint64_t last_checkpoint_start_nanos_ GROVE_GUARDED_BY(checkpoint_mu_) = 0;
  // Threads waiting for checkpoint_mu_ that are not the background loop (a writer short of room,
  // Checkpoint(), Close, a backup, Verify, a bulk load): while there are any, a paced checkpoint
  // stops pacing. CheckpointWaiter counts one for its lifetime.
  std::atomic<int> checkpoint_waiters_{0};
  class CheckpointWaiter {
   public:
    explicit CheckpointWaiter(DbImpl* db) : db_(db) { db_->checkpoint_waiters_.fetch_add(1); }
    ~CheckpointWaiter() { db_->checkpoint_waiters_.fetch_sub(1); }
    CheckpointWaiter(const CheckpointWaiter&) = delete;
    CheckpointWaiter& operator=(const CheckpointWaiter&) = delete;

   private:
    DbImpl* const db_;
  };
  std::atomic<bool> last_checkpoint_no_space_{false};
  // The write room (engine/dirty_room.h), made with the pool; its Reserve runs checkpoints.
  std::unique_ptr<DirtyRoom> dirty_room_;
  // LSNs of batches that are logged but half applied while their writer waits for room.
  Mutex partial_mu_;
  std::multiset<Lsn> partial_lsns_ GROVE_GUARDED_BY(partial_mu_);
  // What the last durable checkpoint stored of the index (a checkpoint with no dirty page and the
  // same metadata has nothing to write).
  std::string durable_index_metadata_ GROVE_GUARDED_BY(checkpoint_mu_);
  std::vector<std::string> durable_memory_cells_ GROVE_GUARDED_BY(checkpoint_mu_);
  uint64_t durable_flags_ GROVE_GUARDED_BY(checkpoint_mu_) = 0;  // Manifest::flags

  Mutex state_mu_;
  Status bg_error_ GROVE_GUARDED_BY(state_mu_);
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_{false};
  // Set once the index's Shutdown returned at close: until then, maintenance units still run
  // (a variant moves what only memory holds into pages, so the next open replays nothing).
  std::atomic<bool> maintenance_closed_{false};
  std::atomic<bool> recovering_{false};
  std::atomic<bool> opened_{false};  // recovery is done and the WAL is open

  Mutex bg_mu_;
  CondVar bg_cv_{&bg_mu_};
  bool bg_stop_ GROVE_GUARDED_BY(bg_mu_) = false;
  bool bg_kick_ GROVE_GUARDED_BY(bg_mu_) = false;
  std::thread bg_thread_;

  Mutex backup_run_mu_;  // held by the running backup; Close waits for it
  Mutex backup_mu_;      // a leaf: the copy's frontier and preserved pages
  BackupCopy* backup_copy_ GROVE_GUARDED_BY(backup_mu_) = nullptr;
  std::atomic<bool> backup_active_{false};
  Mutex backup_stats_mu_;  // a leaf
  BackupStats backup_stats_ GROVE_GUARDED_BY(backup_stats_mu_);
  // Log segments holding records at or past this LSN stay (a backup copies them).
  std::atomic<Lsn> wal_pin_{kMaxLsn};
  ParamMap params_;  // the variant's resolved parameters

  Mutex expiry_mu_;
  CondVar expiry_cv_{&expiry_mu_};
  bool expiry_stop_ GROVE_GUARDED_BY(expiry_mu_) = false;
  std::thread expiry_thread_;
  // Values with an expiry may be present (Manifest::kMayHoldExpiring).
  std::atomic<bool> may_hold_expiring_{false};
  Mutex expiry_flag_mu_;  // a leaf: clearing the flag against puts counting themselves
  uint64_t expiring_puts_ GROVE_GUARDED_BY(expiry_flag_mu_) = 0;  // expiring puts applied
  std::atomic<uint64_t> expired_removed_{0};                      // keys the sweep removed
  std::atomic<uint64_t> expiry_sweeps_{0};                        // whole sweeps completed

  // The marks (Db::GetMark), each with the LSN of the record that set it: records apply out of
  // LSN order across keys, so a mark changes only with a newer record. An empty value is a
  // removed mark, kept until the next open so that an older record cannot set it again.
  struct MarkValue {
    std::string value;
    Lsn lsn = 0;
  };
  Mutex marks_mu_;  // a leaf
  std::map<std::string, MarkValue, std::less<>> marks_ GROVE_GUARDED_BY(marks_mu_);

  std::atomic<uint64_t> gets_{0}, puts_{0}, deletes_{0}, writes_{0}, scans_{0};
  // Reads that found a key whose value had expired (it read as absent).
  std::atomic<uint64_t> expired_reads_{0};
  std::atomic<uint64_t> checkpoints_{0}, checkpoint_failures_{0}, checkpoint_pages_{0},
      checkpoint_bytes_{0};
  Histogram checkpoint_seconds_;
  Histogram checkpoint_pause_seconds_;               // how long each checkpoint held writers
  std::atomic<uint64_t> checkpoint_paced_nanos_{0};  // time checkpoints slept to spread writes
  uint64_t recovery_records_ = 0;
  double recovery_seconds_ = 0;
};

// Dirty-page room held by one write, replayed record or maintenance unit: its share of the
// DirtyRoom (engine/dirty_room.h, which says why every write reserves first). Released on
// destruction.
class DbImpl::Room final : public WriteRoom {
 public:
  explicit Room(DbImpl* db) : db_(db) {}
  ~Room() override { ReleaseAll(); }
  Room(const Room&) = delete;
  Room& operator=(const Room&) = delete;

  Status Extend(uint64_t pages) override;
  uint64_t reserved() const override { return pages_; }

  // Takes over `pages` that the caller reserved.
  void Add(uint64_t pages) { pages_ += pages; }
  void ReleaseAll();

 private:
  DbImpl* const db_;
  uint64_t pages_ = 0;
};

}  // namespace grove
