#pragma once

// Index: the interface every tree variant implements, and what the engine gives it (IndexContext).
// See docs/variants.md for how each published design plugs in.
//
// The engine owns durability and values; a variant owns only the key -> cell mapping:
//   * A cell is an opaque byte string the engine encodes (an inline value, or a reference into the
//     shared value store). Variants store and return cells; they never interpret them.
//   * Writes arrive after their WAL record is durable, each with its LSN. The engine guarantees
//   that
//     writes to the same key never run concurrently and arrive in LSN order; writes to different
//     keys run concurrently. WAL replay calls the same methods, so every write must be idempotent
//     when replayed onto a state that already contains it.
//   * Page memory is reached only through the BufferPool's guards. Pages are no-steal: a variant
//     marks pages dirty and the engine's checkpoints write them. Variants that keep writes only in
//     memory (a record cache) report the oldest such LSN so that the WAL keeps it.
//   * Checkpoint hooks run with writers paused: PrepareCheckpoint() moves in-memory state into
//     pages, SerializeMetadata() returns what the variant needs to reopen (roots, models), stored
//     in the manifest. Reopening calls the variant's `open` factory with that blob.
//
// Thread safety: every method may be called concurrently from many threads, except the checkpoint
// hooks, which the engine calls with writers paused, and BulkLoad, which runs alone.

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

// Writes pages straight to the data file outside checkpoints, into space no durable checkpoint
// references yet (bulk loads). They become part of the durable state with the next checkpoint; a
// crash before it leaves them unreferenced and free.
class DirectPageWriter {
 public:
  virtual ~DirectPageWriter() = default;
  // Seals and writes `count` consecutive page images starting at `first`. `images` holds
  // count * 4096 bytes, 4 KiB aligned; each image already carries its type and id.
  virtual Status WriteRun(PageId first, size_t count, char* images) = 0;
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
};

// Bounds and direction of a cursor: keys in [lower, upper).
struct CursorOptions {
  std::string lower;
  std::string upper;
  bool has_upper = false;
  bool reverse = false;
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
  virtual void OnCell(Slice key, Slice cell) = 0;
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

  // The most pages one Put or Delete may dirty: the leaf it changes and whatever a split, merge
  // or rebalance it triggers rewrites (inner levels are covered by a constant per batch). The
  // engine reserves this much cache per operation before logging a write, because pages are
  // no-steal and a logged write must never find the cache full of dirty pages
  // (WorstCaseWritePages in options.h). Must equal VariantSpec::pages_per_op for its parameters.
  virtual uint64_t PagesDirtiedPerOp() const { return kDefaultPagesPerOp; }

  // Inserts or replaces. *old_cell receives the replaced cell, if any (the engine frees what it
  // references).
  virtual Status Put(Lsn lsn, Slice key, Slice cell, std::optional<std::string>* old_cell) = 0;
  // Removes `key` if present; *old_cell receives the removed cell.
  virtual Status Delete(Lsn lsn, Slice key, std::optional<std::string>* old_cell) = 0;

  virtual StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) = 0;

  // Builds the index from sorted unique input. REQUIRES: the index is empty; nothing else runs.
  virtual Status BulkLoad(const BulkSource& source) = 0;

  // --- Checkpoint hooks (writers paused) ---
  virtual Status PrepareCheckpoint() { return Status::Ok(); }
  virtual std::string SerializeMetadata() = 0;
  // The oldest LSN whose effect lives only in memory (kMaxLsn when none).
  virtual Lsn OldestUnpersistedLsn() const { return kMaxLsn; }

  virtual Status Verify(IndexVerifier* verifier) = 0;
  virtual IndexStats GetStats() = 0;
};

}  // namespace grove
