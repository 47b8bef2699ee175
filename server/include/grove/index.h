#pragma once

// Index: the interface every tree variant implements, and what the engine gives it (IndexContext).
// See docs/variants.md for the seam as a whole and a worked example of a minimal variant.
//
// The engine owns durability and values; a variant owns only the key -> cell mapping:
//   * A cell is an opaque byte string the engine encodes (an inline value, or a reference into the
//     shared value store). Variants store and return cells; they never interpret them.
//   * Writes arrive after their WAL record is durable, each with its LSN and the dirty-page room
//     the engine reserved for it (WriteContext). Writes to the same key never run concurrently
//     and arrive in LSN order; writes to different keys run concurrently. WAL replay calls the
//     same methods, so every write must be idempotent when replayed onto a state that already
//     contains it.
//   * Page memory is reached only through the BufferPool's guards. Pages are no-steal: a variant
//     marks pages dirty and the engine's checkpoints write them, so a page dirtied without room
//     would pin the cache. Room comes from the write's reservation (PagesDirtiedPerOp, extended
//     with WriteRoom::Extend) or from a maintenance unit (IndexServices::RunMaintenance).
//   * Variants that keep writes only in memory (a record cache, a memtable) report the oldest such
//     LSN so that the WAL keeps it, and the blob cells only memory references, so that recovery
//     frees them before replay creates them again.
//   * Blind writes: a variant that does not know the cell a write replaced (it did not read the
//     key) leaves old_cell empty and hands the cell to IndexServices::ReleaseCell when it meets it
//     later (write-back, merge, compaction); the engine frees the value pages then.
//   * Checkpoint hooks run with writers and maintenance units paused: PrepareCheckpoint() moves
//     in-memory state into pages, SerializeMetadata() returns what the variant needs to reopen
//     (roots, models), stored in the manifest. OnCheckpointDurable / OnCheckpointAbandoned follow,
//     so that state the new checkpoint no longer references (a variant's own files) is deleted
//     only once no durable checkpoint can need it. Pages freed through the ExtentAllocator need
//     no hook: the durable state keeps its copy until the next checkpoint replaces it atomically,
//     so buffer-pool pages may be freed and reused at once.
//
// Thread safety: every method may be called concurrently from many threads, except the checkpoint
// hooks, which the engine calls with writers paused, and BulkLoad, which runs alone.
//
// Checkpoint state machine, as a variant sees it (one checkpoint at a time):
//
//   PrepareCheckpoint(e) -> ListMemoryOnlyCells -> SerializeMetadata    (writers paused)
//        |                                                    (writers resume; pages are written)
//        +--> OnCheckpointDurable(e)    the superblock names epoch e
//        +--> OnCheckpointAbandoned(e)  e did not become durable (it failed, or had nothing to
//                                       write); the next checkpoint is epoch e again

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grove/logger.h"
#include "grove/options.h"
#include "grove/slice.h"
#include "grove/stats.h"
#include "grove/status.h"

namespace grove {

class BufferPool;
class ExtentAllocator;
class IoBackend;
using PageId = uint64_t;
using Lsn = uint64_t;
inline constexpr Lsn kMaxLsn = std::numeric_limits<Lsn>::max();

// Value cells are opaque to variants (the engine's format: engine/value_cell.h), but their size
// is bounded: a tag, up to 20 bytes of version and expiry, and an inline value of at most
// Options::inline_value_bytes or a 16-byte blob reference. Variants size pages and check bulk
// input by this.
inline constexpr size_t kMaxValueCellMetaBytes = 20;
inline constexpr size_t kValueCellBlobRefBytes = 16;
inline size_t MaxCellBytes(const Options& options) {
  return 1 + kMaxValueCellMetaBytes +
         std::max<size_t>(options.inline_value_bytes, kValueCellBlobRefBytes);
}

// Writes pages straight to the data file outside checkpoints, into space no durable checkpoint
// references yet (bulk loads, AHA-tree's sorted runs). They become part of the durable state with
// the next checkpoint that references them; a crash before it leaves them unreferenced. Space
// freed since the last durable checkpoint is still part of it: a variant writing directly outside
// a bulk load frees its extents only once no durable checkpoint names them (aha/run_space.h).
class DirectPageWriter {
 public:
  virtual ~DirectPageWriter() = default;
  // Seals and writes `count` consecutive page images starting at `first`. `images` holds
  // count * 4096 bytes, 4 KiB aligned; each image already carries its type and id. `cause` is
  // what the writes are counted as.
  virtual Status WriteRun(PageId first, size_t count, char* images,
                          IoCause cause = IoCause::kBulkLoad) = 0;
};

// Dirty-page room held by the write or maintenance unit in progress. Pages are no-steal, so every
// page a variant dirties must be covered: the engine reserves the variant's PagesDirtiedPerOp()
// before each operation, and a variant that needs more asks here.
class WriteRoom {
 public:
  virtual ~WriteRoom() = default;
  // Reserves `pages` more without waiting (a write holds the write gate and cannot wait for a
  // checkpoint). kResourceExhausted when the cache cannot take them now: the caller must then not
  // dirty them, and should defer the work to a maintenance unit, which can wait.
  virtual Status Extend(uint64_t pages) = 0;
  virtual uint64_t reserved() const = 0;
};

// What a write hands the variant besides its key and cell.
struct WriteContext {
  Lsn lsn = 0;
  WriteRoom* room = nullptr;
};

// Engine services for variants (IndexContext::services). Implemented by the engine.
class IndexServices {
 public:
  virtual ~IndexServices() = default;

  // Background maintenance: runs `unit` inside the write gate with `pages` of dirty-page room
  // reserved up front (waiting for room, or running a checkpoint first, as writes do), so that a
  // checkpoint never sees the unit half applied. The unit may extend its room (WriteRoom::Extend)
  // as it learns what it needs. Call it from a variant's own thread, never from inside a write or
  // another unit, and never while holding a page latch (it may wait for a checkpoint). Returns the
  // unit's status; kResourceExhausted when `pages` can never fit the cache; kUnavailable once the
  // Db is closing or fail-stopped. A unit that fails must leave the index as it found it; one that
  // cannot (it changed pages and then failed) calls FailStop.
  virtual Status RunMaintenance(uint64_t pages, const std::function<Status(WriteRoom*)>& unit) = 0;

  // Blind writes: `cell` is no longer referenced by the index (a replaced or deleted value the
  // variant learned about after the write that dropped it). The engine frees its value pages.
  // REQUIRES: called inside a write (Put/Delete) or a maintenance unit, so that the change that
  // dropped the cell and its release land in the same checkpoint.
  virtual void ReleaseCell(Slice cell) = 0;

  // Stops the Db for writes (reads continue) after an unrecoverable in-memory failure; reopening
  // recovers from the WAL.
  virtual void FailStop(const Status& cause) = 0;

  // Whether `cell` references pages of the value store (a blob) rather than holding its value.
  // The one thing a variant may ask about a cell: ListMemoryOnlyCells needs only those, and a
  // variant that keeps many writes in memory lists them without copying every inline value.
  virtual bool HoldsBlob(Slice cell) const = 0;

  // Log bytes that a redo point at `lsn` keeps on disk. A variant that holds writes in memory
  // (OldestUnpersistedLsn) persists them once this passes its share of
  // Options::checkpoint.wal_bytes, or the log grows without bound under overwrites that never
  // fill its buffer. 0 when the engine has no log.
  virtual uint64_t LogBytesFrom(Lsn lsn) const = 0;
};

// Everything a variant may use. Owned by the engine; outlives the index.
struct IndexContext {
  BufferPool* pool = nullptr;
  ExtentAllocator* allocator = nullptr;
  IoBackend* io = nullptr;
  DirectPageWriter* direct_writer = nullptr;
  std::string data_dir;  // variants with files of their own name them "<variant>-*" here
  const Options* options = nullptr;
  Logger* logger = nullptr;
  IndexServices* services = nullptr;
  // Memory of the variant's own beyond the buffer pool (cache_bytes minus the pool's share,
  // VariantSpec::buffer_pool_share); 0 for variants that leave all of it to the pool.
  uint64_t memory_bytes = 0;
};

// Bounds and direction of a cursor: keys in [lower, upper).
struct CursorOptions {
  std::string lower;
  std::string upper;
  bool has_upper = false;
  bool reverse = false;
  uint64_t expected_entries = 0;  // ScanOptions::expected_entries: a hint, 0 = unknown
  uint32_t readahead_pages = 0;   // Options::scan_readahead_pages (core/readahead.h); 0 = off
};

// Entries in key order (or reverse). Holds no latch between calls.
class IndexCursor {
 public:
  virtual ~IndexCursor() = default;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual Slice key() const = 0;
  virtual Slice cell() const = 0;
  virtual Status status() const = 0;
};

// What Verify() reports to. The engine checks claimed pages against the allocator (no page claimed
// twice, none leaked) and cells against the value store.
class IndexVerifier {
 public:
  virtual ~IndexVerifier() = default;
  // The index owns pages [first, first + count).
  virtual void ClaimPages(PageId first, uint32_t count, std::string_view what) = 0;
  // The index owns pages [first, first + count) that hold nothing it reads: space it keeps
  // allocated until it may be reused (AHA-tree's retired runs). Claimed like any other page.
  virtual void ClaimUnusedPages(PageId first, uint32_t count, std::string_view what) {
    ClaimPages(first, count, what);
  }
  // A live entry: counted, and its blob (if any) claimed and read back.
  virtual void OnCell(Slice key, Slice cell) = 0;
  // A cell the index still references but that is no entry any more (a replaced cell awaiting
  // ReleaseCell): its blob is claimed and checked like an entry's, and it is not counted.
  virtual void OnShadowedCell(Slice key, Slice cell) = 0;
  virtual void Problem(std::string description) = 0;
};

// Source of sorted, unique (key, cell) pairs for BulkLoad. Returns false at the end.
using BulkSource = std::function<StatusOr<bool>(std::string* key, std::string* cell)>;

class Index {
 public:
  virtual ~Index() = default;

  // Sets *cell and returns true when `key` is present.
  virtual StatusOr<bool> Get(Slice key, std::string* cell) = 0;

  // (*cells)[i] is keys[i]'s cell or nullopt. The default runs Get per key; variants that can
  // overlap the reads of many keys override it.
  virtual Status BatchGet(const std::vector<Slice>& keys,
                          std::vector<std::optional<std::string>>* cells);

  // Brings the pages a write of `key` will touch into the cache, changing nothing. The engine
  // calls it before logging a write, so that an unreadable page fails the write before it is
  // logged rather than after. The default is a Get.
  virtual Status Prepare(Slice key);

  // The most pages one Put or Delete may dirty without asking for more (WriteRoom::Extend): the
  // leaf it changes and whatever a split, merge or rebalance it triggers rewrites (inner levels
  // are covered by a constant per operation). The engine reserves this much cache before each
  // operation (WorstCaseWritePages in options.h). Must equal VariantSpec::pages_per_op for its
  // parameters.
  virtual uint64_t PagesDirtiedPerOp() const { return kDefaultPagesPerOp; }
  // The least buffer pool, in pages, the variant opens with for its parameters (an open with less
  // fails naming cache_bytes). Read by whoever opens another copy of the same index with a cache of
  // its own choosing (Db::VerifyOnline's snapshot view). The default: no least beyond the pool's.
  virtual uint64_t MinPoolPages() const { return 0; }

  // Inserts or replaces. *old_cell receives the replaced cell when the variant knows it; a variant
  // that does not (a blind write) leaves it empty and releases the cell later (ReleaseCell).
  virtual Status Put(const WriteContext& w, Slice key, Slice cell,
                     std::optional<std::string>* old_cell) = 0;
  // Removes `key` if present; *old_cell as for Put.
  virtual Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) = 0;

  virtual StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) = 0;

  // Builds the index from sorted unique input. REQUIRES: the index is empty; nothing else runs.
  virtual Status BulkLoad(const BulkSource& source) = 0;

  // --- Checkpoint hooks (writers and maintenance paused; see the state machine above) ---
  virtual Status PrepareCheckpoint(uint64_t epoch) { return Status::Ok(); }
  virtual std::string SerializeMetadata() = 0;
  // The oldest LSN whose effect lives only in memory (kMaxLsn when none).
  virtual Lsn OldestUnpersistedLsn() const { return kMaxLsn; }
  // Appends every blob cell that only memory references (cells written at or after
  // OldestUnpersistedLsn and not yet in a page; IndexServices::HoldsBlob tells them). Recovery
  // frees them before the WAL replay writes them again; a cell listed here must not be referenced
  // by any page of the checkpoint. It runs with writers paused: list what the services call a
  // blob, not every cell (inline cells are dropped by the engine anyway).
  virtual void ListMemoryOnlyCells(std::vector<std::string>* cells) {}
  // After the checkpoint of `epoch` became durable / was abandoned (see the state machine).
  virtual void OnCheckpointDurable(uint64_t epoch) {}
  virtual void OnCheckpointAbandoned(uint64_t epoch) {}

  // Stops the variant's background work. The engine calls it at close, after writes are refused
  // and before its final checkpoint; maintenance units still run until it returns, so a variant
  // that keeps writes only in memory moves them into pages here and the next open replays
  // nothing. It may be called again (the Db's destructor does); RunMaintenance fails with
  // kUnavailable once the first call returned.
  virtual void Shutdown() {}

  virtual Status Verify(IndexVerifier* verifier) = 0;
  virtual IndexStats GetStats() = 0;
};

}  // namespace grove
