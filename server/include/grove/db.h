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

#include <functional>
#include <memory>
#include <optional>
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

// What Verify() found. Counts describe the index and the allocator.
struct VerifyReport {
  uint64_t pages_checked = 0;
  uint64_t entries_checked = 0;
  uint64_t blob_values_checked = 0;
  std::vector<std::string> problems;  // empty when everything holds
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

  // Looks every key up; (*values)[i] is the value of keys[i] or nullopt when absent. Reads of
  // different keys overlap where the variant can. Fails as a whole on the first error.
  virtual Status BatchGet(const std::vector<Slice>& keys,
                          std::vector<std::optional<std::string>>* values,
                          const ReadOptions& options = {}) = 0;

  virtual Status Put(Slice key, Slice value) = 0;
  virtual Status Delete(Slice key) = 0;  // OK when the key is absent

  // Applies every operation of `batch` atomically: after a crash either all or none are visible.
  virtual Status Write(const WriteBatch& batch) = 0;

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

  virtual DbStats GetStats() = 0;

  // Walks every page and checks every structural invariant of the index, the value store and the
  // allocator. Returns OK with report->problems filled when it found inconsistencies (kDataLoss is
  // returned only when a page could not be read at all).
  virtual Status Verify(VerifyReport* report) = 0;
};

// Destroys the database in `data_dir`: deletes its files (only files the engine names) and the
// directory when it is then empty. Fails when the directory is locked by an open Db.
Status DestroyDb(const std::string& data_dir);

}  // namespace grove
