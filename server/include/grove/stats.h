#pragma once

// DbStats: a point-in-time copy of the engine's counters (Db::GetStats). Counters are cumulative
// since Open; gauges are current values. Units are base units: bytes, seconds, counts.
// The metrics layer exports these as grove_* Prometheus series.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grove {

// Why a page moved between disk and memory.
enum class IoCause : uint8_t {
  kDemand = 0,      // a lookup or a write needed the page
  kPrefetch = 1,    // read ahead of need (path prediction, batched reads)
  kScan = 2,        // an iterator
  kCheckpoint = 3,  // written by a checkpoint (double-write and in place)
  kRecovery = 4,    // recovery reads and re-applied double-write pages
  kBulkLoad = 5,    // written directly by a bulk load
  kCompaction = 6,  // read or written by an LSM buffer's flush or compaction (aha)
};
inline constexpr int kNumIoCauses = 7;
const char* IoCauseName(IoCause cause);  // "demand", "prefetch", ...

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bounds of the buckets, ascending (seconds, or a count)
  std::vector<uint64_t> counts;  // counts[i] observations <= bounds[i]; one extra for +Inf
  uint64_t count = 0;
  double sum = 0;
  double Percentile(double p) const;  // linear within a bucket; 0 when empty
};

struct BufferPoolStats {
  uint64_t capacity_pages = 0;
  uint64_t resident_pages = 0;  // gauge
  uint64_t dirty_pages = 0;     // gauge
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  std::array<uint64_t, kNumIoCauses> page_reads{};
  std::array<uint64_t, kNumIoCauses> page_writes{};
  uint64_t prefetch_issued = 0;    // pages read into the side pool
  uint64_t prefetch_used = 0;      // confirmed by a traversal and admitted
  uint64_t prefetch_wasted = 0;    // dropped unconfirmed
  uint64_t checksum_failures = 0;  // pages that failed the crc, own-id or epoch check
  // Pages a checkpoint had captured that a writer changed or freed before the checkpoint ended:
  // each was copied out first, into a frame of the pool (within its limit) or, when every frame
  // was pinned, dirty or being written, onto the heap (outside the memory budget).
  uint64_t checkpoint_copies = 0;
  uint64_t checkpoint_heap_copies = 0;
};

struct WalStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t groups = 0;  // group commits (one write, at most one sync each)
  uint64_t syncs = 0;
  uint64_t segments = 0;  // gauge: live segment files
  uint64_t next_lsn = 0;  // gauge
  HistogramSnapshot sync_seconds;
  // Records each fdatasync of the log made durable (group commit: many writers share one sync).
  // Bounds are record counts.
  HistogramSnapshot records_per_sync;
};

struct CheckpointStats {
  uint64_t count = 0;
  uint64_t failures = 0;
  uint64_t epoch = 0;     // gauge: the epoch of the newest durable checkpoint
  uint64_t redo_lsn = 0;  // gauge: recovery replays the WAL from here
  // gauge: the WAL position the newest checkpoint of this process was taken at (0 before the
  // first). Every record below it survives a crash, whatever wal.sync says: the checkpoint holds
  // it or made it durable in the log first.
  uint64_t snapshot_lsn = 0;
  uint64_t pages_written = 0;
  uint64_t bytes_written = 0;  // double-write + in place + manifest
  HistogramSnapshot duration_seconds;
  // How long each checkpoint held writers (the capture), and the time checkpoints spent pacing
  // their writes (CheckpointOptions::spread) in all.
  HistogramSnapshot pause_seconds;
  double paced_seconds = 0;
};

// Writes short of dirty-page room (the write room, docs/operations.md): each waits for a write in
// flight to give room back or for a checkpoint to end, and when neither is under way one of them
// runs a checkpoint itself.
struct WriteRoomStats {
  uint64_t waits = 0;               // reservations that did not fit at once
  uint64_t writer_checkpoints = 0;  // checkpoints run by a waiting writer
  HistogramSnapshot wait_seconds;   // how long each waiting reservation waited
};

// Path prediction (SHORTCUT) at one tree level (0 = leaves).
struct PrefetchLevelStats {
  uint32_t level = 0;
  uint64_t predictions = 0;  // predictions made
  uint64_t correct = 0;      // ... that named the page the traversal then visited
  uint64_t issued = 0;       // prefetch reads issued (the predicted page was not cached)
  uint64_t used = 0;         // issued and confirmed by the traversal
  uint64_t wasted = 0;       // issued and dropped
};

struct IndexStats {
  std::string variant;
  uint32_t height = 0;  // levels including the leaves
  uint64_t inner_pages = 0;
  uint64_t leaf_pages = 0;
  uint64_t inner_bytes = 0;  // bytes of inner nodes (what must stay cached for one-IO lookups)
  uint64_t model_bytes = 0;  // learned models and maps held in memory
  uint64_t entries = 0;      // keys, where the variant tracks it cheaply
  std::vector<PrefetchLevelStats> prefetch_levels;  // empty unless path prediction is on
  std::map<std::string, double> extra;  // variant-specific figures, documented per variant
};

// Values with an expiry (ExpiryOptions).
struct ExpiryStats {
  uint64_t expired_reads = 0;      // reads (Get, BatchGet, scans) that met an expired value
  uint64_t keys_removed = 0;       // expired keys the sweep removed
  uint64_t sweeps = 0;             // whole sweeps over the key space completed
  bool may_hold_expiring = false;  // gauge: sweeps run (values with an expiry may be present)
};

// Online backups (Db::Backup).
struct BackupStats {
  uint64_t completed = 0;
  uint64_t failed = 0;                // failed or given up (cancelled, closing)
  bool running = false;               // gauge
  double last_seconds = 0;            // gauge: the last completed backup
  uint64_t last_bytes = 0;            // gauge: its data file and log bytes
  uint64_t last_unix_ms = 0;          // gauge: when it completed (0: none yet)
  uint64_t last_pages_preserved = 0;  // gauge: pages it copied ahead of an overwrite
};

// The engine's fixed in-memory structures that grow with the data file rather than with the
// cache budget (the index's own figures are IndexStats.inner_bytes and model_bytes).
struct MemoryStats {
  uint64_t epoch_table_bytes = 0;  // 4 bytes per data page, and the map page list
  uint64_t allocator_bytes = 0;    // a tree node per free block and per recently freed page
};

struct DbStats {
  std::string io_backend;  // the active backend: "uring" or "psync"
  uint64_t gets = 0;
  uint64_t puts = 0;
  uint64_t deletes = 0;
  uint64_t writes = 0;           // Write() batches
  uint64_t scans = 0;            // iterators created
  uint64_t data_file_pages = 0;  // gauge
  uint64_t free_pages = 0;       // gauge
  uint64_t blob_values = 0;      // gauge: values held in the value store
  uint64_t blob_pages = 0;       // gauge
  uint64_t recovery_replayed_records = 0;
  double recovery_seconds = 0;
  BufferPoolStats cache;
  WalStats wal;
  CheckpointStats checkpoint;
  WriteRoomStats write_room;
  ExpiryStats expiry;
  BackupStats backup;
  IndexStats index;
  MemoryStats memory;
};

}  // namespace grove
