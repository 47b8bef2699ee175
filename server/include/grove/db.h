#pragma once

// Start here.
//
// A Db is a persistent ordered map from byte-string keys to byte-string values, stored in one data
// directory on SSD and indexed by a configurable tree variant (Options::index). It is safe for
// concurrent use from many threads without external synchronisation: readers never block readers,
// and writes to different keys proceed in parallel (their log records commit in groups).
//
// Durability: a write is acknowledged after its WAL record is as durable as Options::wal.sync says
// (kAlways: survives kill -9 and power loss). Pages are written only by checkpoints, atomically,
// through a double-write file. Open() recovers: newest valid superblock, any complete double-write
// batch, then WAL replay. See docs/architecture.md.
//
// Errors: every call returns Status/StatusOr. kInvalidArgument names the bad field; kDataLoss means
// a checksum, own-id or epoch check failed (the data on disk is damaged and was not returned);
// kResourceExhausted means a limit or a full disk; kInternal after an IO or fsync failure. After a
// failed fsync or a failure between logging and applying a write, the Db refuses further writes
// (fail-stop) until it is reopened, which recovers from the WAL; reads keep working.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "grove/iterator.h"
#include "grove/options.h"
#include "grove/slice.h"
#include "grove/stats.h"
#include "grove/status.h"
#include "grove/write_batch.h"

namespace grove {

// Source of sorted, unique key/value pairs for Db::BulkLoad: sets *key and *value and returns true,
// or returns false at the end.
using BulkLoadSource = std::function<StatusOr<bool>(std::string* key, std::string* value)>;

// A condition a write places on one key (WriteOptions). Checked with the key locked against other
// writers, before the write is logged: every condition holds and the whole write applies, or
// nothing of it applies and Write() fails with kFailedPrecondition.
struct WriteCondition {
  enum class Kind : uint8_t {
    kAbsent,         // the key is absent
    kValueEquals,    // the key is present and holds exactly `value`
    kVersionEquals,  // the key is present at version `version`
  };
  std::string key;
  Kind kind = Kind::kAbsent;
  std::string value;     // kValueEquals
  uint64_t version = 0;  // kVersionEquals
};

struct WriteOptions {
  std::vector<WriteCondition> conditions;  // on any keys, written by the batch or not
  // The longest the write waits for dirty-page room (it runs checkpoints meanwhile) before it is
  // refused with kResourceExhausted, nothing written. groved passes what is left of the call's
  // deadline.
  std::chrono::milliseconds room_wait{60000};
  // false: acknowledge once the write is in the log, without waiting for its sync even under
  // wal.sync: always; it becomes durable with the next write that syncs, a checkpoint or a
  // Db::SyncWal. For writes held durably elsewhere: a replicated range's entries are in the
  // Raft log (synced) before they apply, so the engine need not sync them too.
  bool sync = true;
};

// What a read returns besides the value (Db::GetWithMeta); zeros when the key is absent.
struct ValueMeta {
  // The version: WriteResult::version of the write that set the value (0 for a value written
  // before versions existed).
  uint64_t version = 0;
  uint64_t expires_ms = 0;  // Unix milliseconds from which the key reads as absent; 0: never
};

// What Write() reports besides its status.
struct WriteResult {
  // The version every key the write set now carries: the LSN of the write's log record (a
  // versioned put's key carries the version it names). A key's version increases with every
  // write to it, across restarts; Get can return it.
  uint64_t version = 0;
  // After kFailedPrecondition: the index of the first condition that did not hold and what its
  // key holds now (current_value only when the key is present).
  int failed_condition = -1;
  bool current_found = false;
  uint64_t current_version = 0;
  std::string current_value;
};

// One write of Db::WriteMany: Write(*batch, *options, result), its outcome in `status`.
struct WriteRequest {
  const WriteBatch* batch = nullptr;
  const WriteOptions* options = nullptr;  // null: no conditions, the default room wait
  WriteResult* result = nullptr;          // may be null
  Status status;                          // set by WriteMany
};

// What DeleteRange() did.
struct DeleteRangeResult {
  uint64_t deleted = 0;  // keys removed that were visible (expired ones are removed uncounted)
  uint64_t version = 0;  // the LSN of the range delete's log record (0 when nothing was removed)
  // Keys remain in the range because the call stopped at its limit; the next call continues from
  // resume_key (the first key not removed). limited_by names the limit: "limit" (the caller's)
  // or "limits.max_batch_entries" (the most one call removes).
  bool more = false;
  std::string resume_key;
  std::string limited_by;
};

// How Db::Backup copies.
struct BackupOptions {
  // Pace of the copy (data file and log), in bytes per second; 0: as fast as the disk goes.
  uint64_t max_bytes_per_second = 0;
  // Asked between chunks of the copy; true gives the backup up (kAborted; what it wrote is
  // removed). Null: never.
  std::function<bool()> cancelled;
};

// What a backup holds (Db::Backup, CheckBackup).
struct BackupInfo {
  uint64_t checkpoint_epoch = 0;  // the checkpoint the data file copy stands for
  uint64_t redo_lsn = 0;          // recovery replays the copied log from here ...
  uint64_t last_lsn = 0;          // ... up to this record: the backup point
  std::string variant;            // the index variant and its parameters ("k=v;...")
  std::string params;
  uint64_t created_unix_ms = 0;
  uint64_t data_bytes = 0;       // bytes of the data file copy
  uint64_t wal_bytes = 0;        // bytes of log copied
  uint64_t pages_preserved = 0;  // pages copied ahead of an overwrite during the copy
  double seconds = 0;
};

// What Verify() found. Counts describe the index and the allocator.
struct VerifyReport {
  uint64_t pages_checked = 0;
  uint64_t entries_checked = 0;
  uint64_t blob_values_checked = 0;
  std::vector<std::string> problems;  // empty when everything holds
  // VerifyOnline: the checkpoint it checked, the pages writers overwrote meanwhile that it copied
  // first, and how long it took.
  uint64_t checkpoint_epoch = 0;
  uint64_t pages_preserved = 0;
  double seconds = 0;
};

// How Db::VerifyOnline runs.
struct VerifyOnlineOptions {
  // The snapshot's cache while it runs, on top of the database's cache_bytes (0: a sixteenth of
  // cache_bytes, at least 8 MiB and at least the pool the variant needs: Index::MinPoolPages).
  uint64_t cache_bytes = 0;
  // Polled while it runs: true gives up (kAborted). Null: never.
  std::function<bool()> cancelled;
};

// What RestoreBackup found in the restored database.
struct RestoreReport {
  BackupInfo backup;
  uint64_t replayed_records = 0;  // log records recovery replayed
  VerifyReport verify;
  // Where the time went: checking the files' checksums, copying them, opening (recovery replays
  // the copied log), and verifying.
  double check_seconds = 0, copy_seconds = 0, open_seconds = 0, verify_seconds = 0;
};

class Db {
 public:
  // Opens (creating when allowed) the database in options.data_dir and recovers it. Fails with
  // kFailedPrecondition when another process holds the directory, or when the directory holds a
  // different variant, layout parameters or format version (the message says what is on disk and
  // what was asked).
  static StatusOr<std::unique_ptr<Db>> Open(const Options& options);

  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  // Closes if Close() was not called (its status is then logged, not returned).
  virtual ~Db() = default;

  // Finishes background work, writes a final checkpoint and releases the directory. Later calls
  // fail with kUnavailable. REQUIRES: no iterator of this Db is alive.
  virtual Status Close() = 0;

  // Looks `key` up. Returns true and sets *value when found, false when absent.
  virtual StatusOr<bool> Get(Slice key, std::string* value, const ReadOptions& options = {}) = 0;

  // Get that also returns what the engine knows of the value (ValueMeta).
  virtual StatusOr<bool> GetWithMeta(Slice key, std::string* value, ValueMeta* meta) = 0;
  // Get with the key's version only.
  StatusOr<bool> GetWithVersion(Slice key, std::string* value, uint64_t* version) {
    ValueMeta meta;
    StatusOr<bool> found = GetWithMeta(key, value, &meta);
    *version = meta.version;
    return found;
  }

  // Looks every key up; (*values)[i] is the value of keys[i] or nullopt when absent. Reads of
  // different keys overlap where the variant can. Fails as a whole on the first error.
  virtual Status BatchGet(const std::vector<Slice>& keys,
                          std::vector<std::optional<std::string>>* values,
                          const ReadOptions& options = {}) = 0;

  virtual Status Put(Slice key, Slice value) = 0;
  virtual Status Delete(Slice key) = 0;  // OK when the key is absent

  // Applies every operation of `batch` atomically: after a crash either all or none are visible.
  // A reader never sees a value that a later operation of the same batch replaces, and BatchGet
  // sees all of a batch or none of it.
  virtual Status Write(const WriteBatch& batch) = 0;
  // The same, applied only when every condition in `options` holds (kFailedPrecondition naming
  // the condition otherwise). `result` (may be null) receives the version the write set, or what
  // the key of a failed condition holds.
  virtual Status Write(const WriteBatch& batch, const WriteOptions& options,
                       WriteResult* result) = 0;

  // Runs each of `writes` as Write() would, in order, each atomic and succeeding or failing on its
  // own (its own conditions, limits and status). What it adds is shared log syncs: consecutive
  // writes on distinct keys (a write's keys include its conditions' keys) are logged in one group
  // commit, so under wal.sync: always the call pays about one fdatasync, not one per write. A
  // write on a key an earlier write of the call touched starts a new group after it: writes of one
  // key apply in call order. Each write is as durable as Write()'s when WriteMany returns; writes
  // of a call that were not yet acknowledged may survive a crash independently of each other.
  virtual void WriteMany(std::span<WriteRequest> writes) {
    for (WriteRequest& w : writes) {
      w.status = Write(*w.batch, w.options != nullptr ? *w.options : WriteOptions(), w.result);
    }
  }

  // Removes the keys of [start, end) (end empty: to the last key), at most `limit` of them (0, or
  // more than limits.max_batch_entries: that many). Atomic, and one log record however many keys
  // it removes: it runs while no other write does, so readers see the range before or after.
  virtual Status DeleteRange(Slice start, Slice end, uint64_t limit, DeleteRangeResult* result) = 0;

  // An iterator over the range and direction in `options`, positioned on its first entry.
  virtual StatusOr<std::unique_ptr<Iterator>> NewIterator(const ScanOptions& options) = 0;

  // Loads sorted, unique pairs into an empty database, much faster than Put: the index builds its
  // pages bottom-up and writes them directly, and a checkpoint makes the load durable before this
  // returns. All or nothing: a crash during the load leaves the database empty. Input out of order
  // is kInvalidArgument (naming the entry). If the load fails part way, the Db refuses writes until
  // it is reopened, which returns it to empty. REQUIRES: the database is empty; writes wait.
  virtual Status BulkLoad(const BulkLoadSource& source) = 0;

  // Writes a checkpoint now and waits for it: afterwards recovery replays nothing older.
  virtual Status Checkpoint() = 0;

  // Makes every write acknowledged so far durable against power loss (an fdatasync of the log),
  // whatever wal.sync says.
  virtual Status SyncWal() = 0;

  // Reads the mark `name`: a small value outside the key space that a WriteBatch sets
  // (WriteBatch::SetMark) atomically with its keys, kept by checkpoints and recovered with them.
  // Returns true and sets *value when the mark is set. A replicated range keeps the Raft index
  // its data has applied in one.
  virtual StatusOr<bool> GetMark(Slice name, std::string* value) = 0;

  virtual DbStats GetStats() = 0;

  // Walks every page and checks every structural invariant of the index, the value store and the
  // allocator. Returns OK with report->problems filled when it found inconsistencies (kDataLoss is
  // returned only when a page could not be read at all).
  virtual Status Verify(VerifyReport* report) = 0;

  // The same checks on the newest checkpoint while reads and writes go on: takes a checkpoint,
  // opens it read-only as a second database in data_dir/verify-snapshot (pages that later
  // checkpoints or direct writes overwrite are copied there first, as a backup copies them),
  // verifies that, and removes it. Writers wait only for the checkpoint it starts with. It checks
  // the database as of that checkpoint (report->checkpoint_epoch): its pages. A variant that keeps
  // recent writes in memory across checkpoints (TreeLine's record cache, AHA-tree's buffers)
  // holds those in the log, not in pages, so they are neither checked nor counted. One backup or
  // online verify at a time (kFailedPrecondition); Close makes a running one give up (kAborted).
  virtual Status VerifyOnline(const VerifyOnlineOptions& options, VerifyReport* report) = 0;

  // Writes a consistent copy of the database into `dir` (created; it must not exist or be empty)
  // while reads and writes go on: the newest checkpoint's pages (a page a later checkpoint or
  // direct write is about to overwrite is copied first), its manifest, and the log from its redo
  // point up to the moment the copy of the log starts. Opening the copy (RestoreBackup) recovers
  // every write acknowledged before that moment. One backup at a time (kFailedPrecondition
  // otherwise); Close waits for a backup to give up. Format: docs/formats/backup.md.
  virtual Status Backup(const std::string& dir, const BackupOptions& options, BackupInfo* info) = 0;
};

// Checks a backup written by Db::Backup: its BACKUP file and every file's size and checksum.
StatusOr<BackupInfo> CheckBackup(const std::string& backup_dir);

// Restores the backup in `backup_dir` into options.data_dir (created; it must not exist or be
// empty): checks it (CheckBackup), copies its files, opens the database with the backup's variant
// and parameters (the log is replayed up to the backup point), runs Verify, and closes it. The
// rest of `options` (cache, IO) is used for that opening. The restored directory is then a normal
// database for groved's data_dir.
Status RestoreBackup(const std::string& backup_dir, const Options& options, RestoreReport* report);

// Destroys the database in `data_dir`: deletes its files (only files the engine names) and the
// directory when it is then empty. Fails when the directory is locked by an open Db.
Status DestroyDb(const std::string& data_dir);

}  // namespace grove
