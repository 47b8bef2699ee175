#pragma once

// Options for opening a Db. Every field is documented here; groved builds this struct from YAML
// (config/grove.yaml documents the same fields under the same names).

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "grove/io_backend.h"
#include "grove/logger.h"

namespace grove {

class IndexRegistry;

// When an acknowledged write becomes durable.
enum class SyncMode {
  kAlways,  // fdatasync before acknowledging (group commit). Survives kill -9 and power loss.
  kBatch,   // acknowledge after write(2); fdatasync at least every batch_interval_us. A power loss
            // may lose the writes of the last interval; kill -9 loses nothing.
  kNone,    // acknowledge after write(2); sync only at segment roll, checkpoint and close. kill -9
            // loses nothing; a power loss may lose everything since the last sync.
};

struct WalOptions {
  SyncMode sync = SyncMode::kAlways;
  uint32_t batch_interval_us = 1000;  // kBatch: longest time an acknowledged write stays unsynced
  uint64_t segment_bytes = 64ull << 20;  // a segment is preallocated to this size, then rolled
  // Upper bound on log bytes written but not yet synced, in every mode. Recovery uses it to tell a
  // torn tail (drop it) from mid-log corruption (refuse to open): valid records found further than
  // this past a bad record mean the bad record had been synced. Must be at least twice
  // Options::max_batch_bytes.
  uint64_t max_unsynced_bytes = 16ull << 20;
};

struct CheckpointOptions {
  // A checkpoint starts when dirty pages exceed this fraction of the cache. Writers wait when
  // dirty pages reach min(twice this fraction, 0.75) of it (pages are no-steal: only a checkpoint
  // writes them). The default is the largest allowed: every checkpoint costs a fixed round of
  // syncs and rewrites most pages a random insert load touched, so fewer, larger checkpoints
  // write fewer bytes per insert and delay fewer writes (docs/benchmarks.md, "Checkpoint size").
  double dirty_fraction = 0.45;
  uint64_t wal_bytes = 256ull << 20;  // ... or when the log grew this much since the last one
  double interval_seconds = 300;      // ... or this long after the last one (0: never by time)
  // A checkpoint the background starts paces its writes to end within this fraction of the time
  // since the previous one began (PostgreSQL's checkpoint_completion_target), so that its
  // writes share the disk with reads and log syncs instead of taking it whole for as long as
  // they last. It stops pacing once writers are short of room (DirtyRoom::Pressed), and the
  // checkpoints something waits for (a writer's, a backup's, Checkpoint(), Close) never pace.
  // 0: no pacing. At most 0.9. At 10^8 records and a 1 GiB cache under durable random inserts,
  // 0.5 raised inserts by 9-10% at 1, 4 and 16 threads and cut p99 at 4 threads from 5.2 to
  // 2.6 ms (docs/benchmarks.md, "At a billion keys").
  double spread = 0.5;
};

// Values written with an expiry (WriteBatch::PutExpiring) read as absent from their expiry on; a
// background sweep then removes them, reclaiming their space, with one logged delete per batch of
// expired keys.
struct ExpiryOptions {
  // Pause between the end of one sweep over the key space and the start of the next (0: no
  // sweeps; expired keys stay invisible but keep their space). A sweep runs only while the
  // database may hold values with an expiry.
  double sweep_interval_seconds = 60;
  // The most index entries a sweep examines per second: its share of the disk and the CPU.
  uint64_t sweep_keys_per_second = 200000;
};

struct IndexOptions {
  // Variant name as registered: "btree", "hln", "treeline", "aulid" or "aha" (docs/variants.md).
  std::string variant = "btree";
  // Variant parameters as text, validated by the variant (see docs/variants.md). Parameters the
  // variant calls layout parameters are persisted and must match on reopen.
  std::map<std::string, std::string> params;
  // The variants to choose from (index/registry.h). Null: the variants built into Grove. Tests and
  // embedders with variants of their own pass a registry holding them.
  std::shared_ptr<const IndexRegistry> registry;
};

struct Options {
  // Directory holding the superblock/data file, WAL segments, double-write file and lock file.
  std::string data_dir = "./data";
  bool create_if_missing = true;
  // Opens the newest durable checkpoint for reading only: no recovery (the log is not replayed,
  // and a checkpoint the double-write file would complete is refused with FAILED_PRECONDITION:
  // open it for writing once first), no writes, checkpoints or maintenance (FAILED_PRECONDITION),
  // and nothing written into data_dir but its lock file. Db::VerifyOnline opens a snapshot this
  // way.
  bool read_only = false;

  // Buffer pool budget. Frames are 4 KiB; the pool holds cache_bytes / 4096 of them.
  uint64_t cache_bytes = 256ull << 20;
  // The share of the cache for inner nodes (0..1): within it they are never evicted (lookups cost
  // one leaf read once they are warm); beyond it the oldest inner node is the next victim, so the
  // share is also a cap.
  double inner_cache_fraction = 0.5;
  // The most pages a scan reads ahead of itself (btree and hln: the leaves it will reach next,
  // known from the node above them, read in one submission into the prefetch side pool; a page
  // the scan never reaches is not cached). 0..256; 0 turns readahead off.
  uint32_t scan_readahead_pages = 32;

  IoBackendOptions io;
  // O_DIRECT for the data file and the double-write file. Turn off only on filesystems without
  // O_DIRECT support (tmpfs); then the page cache hides the disk in every measurement.
  bool direct_io = true;
  // When set, used instead of creating a backend from `io` (tests inject the fault backend).
  std::shared_ptr<IoBackend> io_backend;

  // The most each may be is in grove/limits.h (limits::kMaxKeyBytes, ...).
  uint32_t max_key_bytes = 128;           // keys are 1..max_key_bytes bytes (at most 1024)
  uint32_t max_value_bytes = 64u << 10;   // values are 0..max_value_bytes bytes (at most 1,000,000)
  uint32_t inline_value_bytes = 1024;     // larger values go to the value store (at most 1024)
  uint64_t max_batch_bytes = 4ull << 20;  // keys + values of one Write()
  uint32_t max_batch_entries = 10000;     // operations in one Write()

  WalOptions wal;
  CheckpointOptions checkpoint;
  ExpiryOptions expiry;
  IndexOptions index;

  // Where the engine logs events. Null: a stderr logger at info level.
  std::shared_ptr<Logger> logger;
};

struct ReadOptions {
  // Verify page checksums on every read from disk. Always on; kept as a field so that a future
  // offline tool can read damaged files deliberately.
  bool verify_checksums = true;
};

// Bounds and direction of an iterator. Keys are in [lower, upper): lower inclusive, upper
// exclusive; an empty `upper` with has_upper=false means "to the end".
struct ScanOptions {
  std::string lower;       // first key (inclusive); empty = from the smallest key
  std::string upper;       // end key (exclusive)
  bool has_upper = false;  // whether `upper` bounds the scan
  bool reverse = false;    // visit keys from the largest to the smallest
  bool keys_only = false;  // do not read out-of-line values (value() is empty)
  // How many entries the caller means to read, when it knows (a scan with a limit); 0: unknown.
  // Only a hint: the iterator still goes as far as it is moved. Variants that read several pages
  // with one IO (TreeLine's page groups) size their first read by it.
  uint64_t expected_entries = 0;
};

// Write admission. Pages are no-steal (only a checkpoint writes them), so a Write() reserves room
// for every page it may dirty before it is logged: 8 pages, plus per operation the pages a change
// of one leaf may dirty (`pages_per_op`, the variant's Index::PagesDirtiedPerOp(): 2 for btree,
// its leaf and the new one where it splits; for hln the subnodes of two leaves), plus the pages
// of its out-of-line values. Writes may keep at most WriteRoomPages() dirty; a batch whose worst
// case does not fit at once is applied operation by operation around checkpoints, and only an
// operation that could never fit (a value too large for the room) is refused, with
// RESOURCE_EXHAUSTED before anything is logged; groved warns at start when the largest single
// operation its limits allow could not fit.
inline constexpr uint64_t kDefaultPagesPerOp = 2;
inline uint64_t WorstCaseWritePages(uint64_t entries, uint64_t out_of_line_pages,
                                    uint64_t pages_per_op = kDefaultPagesPerOp) {
  return 8 + pages_per_op * entries + out_of_line_pages;
}
// The share of the cache writes may keep dirty; a quarter always stays evictable for reads.
inline double WriteRoomShare(const Options& o) {
  return std::min(2 * o.checkpoint.dirty_fraction, 0.75);
}
inline uint64_t WriteRoomPages(const Options& o) {
  return static_cast<uint64_t>(WriteRoomShare(o) * static_cast<double>(o.cache_bytes / 4096));
}

}  // namespace grove
