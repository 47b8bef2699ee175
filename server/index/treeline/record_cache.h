#pragma once

// RecordCache: TreeLine's record cache (paper §4.1-4.2). It caches individual records and always
// holds the newest version of every record written since it last reached a page: writes go here
// (write-back), dirty, and reach their page only when evicted or flushed, together with every
// other dirty record of that page (same-page batching, done by the caller).
//
//   * Priorities 0..p_max (7; p_mid = 4): writes and read misses enter at p_mid, an access adds
//     one, CLOCK's hand takes one per pass and evicts at 0. A dirty candidate costs a write-back,
//     so the hand first looks up to `lookahead` (32) entries further for a clean one at 0.
//   * Every read miss is admitted (AdmitClean): clean entries make room at once; when only dirty
//     ones are left, the cache goes over capacity and the caller's eviction writes dirty victims
//     back (Evict names them). Admissions stop only when the excess passes a slack of
//     capacity/16 + 64 KiB, which a stuck write-back (a full disk) would otherwise let grow.
//   * Optional optimistic admission: the other records of a page a read fetched, at priority 1.
//   * Capacity is in bytes: key, cell and 96 bytes of bookkeeping per entry (the paper's figure).
//     It may move at run time (SetCapacity: TreeLine's memory split, memory_split.h); a lower
//     capacity is reached by the usual eviction.
//   * Evicted keys are remembered by hash (GhostSet, Options::ghost_bytes) so that a miss can say
//     whether a cache larger by ghost_bytes would have hit (Get's *evicted_lately, and
//     write_ghost_hits for writes of such keys).
//   * Dirty entries carry the LSN of their write; the oldest bounds the WAL's redo point.
//
// Entries: a key maps to a cell, or to a tombstone (a delete that has not reached its page yet).
// A clean entry equals what its page holds; a clean tombstone is never kept. So only dirty
// entries matter to scans (Range) and write-backs: the ordered index holds dirty entries alone.
//
// Layout (why: point lookups must not pay for order, and must not wait for each other):
//
//   shards_[64], by Hash64(key)          dirty_: ordered map key -> Entry* (dirty entries only)
//   +---------------------------+        dirty_by_lsn_: (LSN, Entry*) of the same entries
//   | mu | KeyTable (hash->Entry)|        both under dirty_mu_
//   |    | ring: CLOCK slots     |
//   |    | hand, counters        |        bytes_: the sum over every entry (atomic)
//   +---------------------------+
//
//   * A Get locks one shard, finds the entry in the shard's hash table, bumps its priority and
//     takes a reference to its cell (SharedCell); the bytes are copied after the lock is gone.
//   * Eviction visits shards round-robin (an atomic shard hand) and runs that shard's CLOCK; the
//     byte budget is global.
//   * Pins (reorganisation): a reorganisation copies the dirty records of its range onto new
//     pages before it swaps them in. A write that replaces a pinned record's cell meanwhile does
//     not hand that cell back (the new pages reference it); the cache keeps it until the
//     reorganisation ends, which drops it (applied: the page releases it when the newer write
//     reaches it) or returns it for release (abandoned).
//   * Read tickets: a read admits what it found on a page after it let the page go, so a write
//     that reached the page and was evicted meanwhile would let a stale record in. Write-backs and
//     reorganisations bump a generation (per base page, hashed, and one for reorganisations)
//     before they clean records; an admission whose ticket is no longer current is dropped.
//
// Thread safety: every method is safe for concurrent use. Lock order: (the caller's page
// latches) -> dirty_mu_ -> one shard's mu (CheckConsistency alone takes every shard, in index
// order). Entry fields: `cell`, `tombstone`, `blob`, `dirty`, `lsn` and `version` change only with
// both dirty_mu_ and the entry's shard held, so either lock reads them; `pinned` belongs to
// dirty_mu_, `priority` and `slot` to the shard. A dirty entry is freed only under dirty_mu_, so a
// pointer to it found under dirty_mu_ stays valid while dirty_mu_ is held.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grove/index.h"
#include "grove/slice.h"

#include "index/treeline/key_table.h"
#include "index/treeline/shared_cell.h"
#include "util/ghost_set.h"
#include "util/mutex.h"

namespace grove::treeline {

class RecordCache {
 public:
  struct Options {
    uint64_t capacity_bytes = 64 << 20;
    // The bytes of evicted entries to remember (GhostSet; 8 bytes of memory per 64 of these).
    uint64_t ghost_bytes = 0;
    uint8_t p_max = 7;
    uint8_t p_mid = 4;
    size_t lookahead = 32;
    // Which cells reference value-store pages (IndexServices::HoldsBlob); null: every cell.
    // DirtyCells lists those alone, kept apart so that listing them is no walk of every entry.
    std::function<bool(Slice)> is_blob;
  };
  static constexpr size_t kEntryOverhead = 96;
  static constexpr size_t kShards = 64;

  explicit RecordCache(const Options& options);
  ~RecordCache();
  RecordCache(const RecordCache&) = delete;
  RecordCache& operator=(const RecordCache&) = delete;

  enum class Kind { kMiss, kValue, kTombstone };
  // kValue: *cell holds the newest version. Copies the cell outside any lock. On a miss,
  // *evicted_lately (optional) says whether the key left the cache within the last ghost_bytes
  // of evictions.
  Kind Get(Slice key, std::string* cell, bool* evicted_lately = nullptr);

  // A write (cell) or a delete (nullopt), dirty, at `lsn`. Returns the cell it replaced when that
  // cell lived only here (a dirty entry's): nobody else references it, the caller frees it. A
  // clean entry's cell is on its page, which releases it when the write reaches the page.
  // *was_value (optional) says whether the key was cached with a value (an update, not an insert).
  std::optional<std::string> Write(Slice key, std::optional<Slice> cell, Lsn lsn,
                                   bool* was_value = nullptr) GROVE_EXCLUDES(dirty_mu_);

  // The generation of base page `page`, read while the page is latched.
  uint64_t Ticket(uint64_t page) const {
    return generations_[page % kGenerations].load(std::memory_order_acquire) +
           reorg_generation_.load(std::memory_order_acquire);
  }
  // Admits a record read from base page `page` (or its overflow page) under `ticket`, clean, at
  // `priority`. Clean entries of its shard make room; past that the cache may go over capacity
  // by the slack (the caller's eviction brings it back). Does nothing when the key is cached or
  // the ticket is stale.
  void AdmitClean(Slice key, Slice cell, uint8_t priority, uint64_t page, uint64_t ticket);

  // Evicts until the cache fits its capacity. Clean victims go at once; when the hand must stop
  // at a dirty one, returns its key: the caller writes its page back (which cleans it) and calls
  // again. nullopt: the cache fits.
  std::optional<std::string> Evict();

  // Cleaning (not in the paper, which only writes back what eviction picks): the look-ahead
  // always finds a clean victim while clean entries are near, so dirty entries that went cold
  // (priority 0) stay, and after a write-heavy phase most of the cache can be records nobody
  // reads (75% of it after uniform updates). The caller writes back the pages of cold dirty
  // entries while the dirty share of the entries is above its limit. ColdDirtyKey moves the
  // CLOCK hand (as eviction does) up to `max_steps` and returns the first dirty entry at 0.
  std::optional<std::string> ColdDirtyKey(size_t max_steps);
  // Dirty entries as a share of all entries (0 when empty).
  double DirtyShare() const {
    const uint64_t n = entries_.load(std::memory_order_relaxed);
    return n == 0 ? 0.0
                  : static_cast<double>(dirty_count_.load(std::memory_order_relaxed)) /
                        static_cast<double>(n);
  }

  struct DirtyRecord {
    std::string key;
    SharedCell cell;  // empty: a tombstone
    Lsn lsn = 0;
    uint64_t version = 0;  // the write's (a batch's writes share one LSN)
    bool tombstone() const { return !cell; }
  };
  // Runs `apply` on the dirty records with keys in [low, high) (no `high`: to the end) that are
  // not pinned (a reorganisation is taking those to its new pages), ascending, under dirty_mu_,
  // so that no write can change them meanwhile (a write that replaced a dirty cell would free it
  // while its page takes it). `apply` returns how many of them (a prefix) reached their page;
  // those become clean, and tombstones leave the cache. Only the first records whose keys and
  // cells come to `max_bytes` (16 bytes more each, for a slot) are offered, and always one: a
  // page and its overflow page hold no more, and a range's backlog (appends past the last page)
  // must not be copied under the lock on every write-back.
  // REQUIRES: the caller holds the pages `apply` writes (page latches come before the cache);
  // `apply` takes no latch and does no IO (the cache's writers wait for it). `page` is the base
  // page written (its read tickets go stale).
  template <typename Fn>
  size_t WriteBackRange(Slice low, const std::string* high, uint64_t page, uint64_t max_bytes,
                        Fn&& apply) GROVE_EXCLUDES(dirty_mu_) {
    MutexLock lock(&dirty_mu_);
    std::vector<DirtyRecord> dirty = DirtyInRangeLocked(low, high, max_bytes);
    const size_t done = apply(dirty);
    if (done > 0) generations_[page % kGenerations].fetch_add(1, std::memory_order_acq_rel);
    for (size_t i = 0; i < done && i < dirty.size(); ++i) MarkCleanLocked(dirty[i]);
    return done;
  }

  // Pins dirty records with keys in [low, high) and returns them, ascending: the first ones in
  // key order while their keys and cells come to at most `max_bytes` (16 bytes more each, for a
  // slot), and always the first one. The rest stay dirty and reach their pages later.
  std::vector<DirtyRecord> PinRange(Slice low, const std::string* high, uint64_t max_bytes)
      GROVE_EXCLUDES(dirty_mu_);
  // Ends the pins of PinRange's `pinned`. applied: the records reached new pages; those not
  // written since become clean (tombstones leave). Returns the cells of pinned records replaced
  // meanwhile: when !applied the caller releases them; when applied they are on the new pages.
  std::vector<std::string> Unpin(const std::vector<DirtyRecord>& pinned, bool applied)
      GROVE_EXCLUDES(dirty_mu_);

  // The dirty entries with a key in [low, high), ascending (scans merge them over the pages'
  // records: clean entries equal what the pages hold): the first `limit` of them, or with
  // `from_end` the last `limit`. *truncated says whether some were left out.
  std::vector<DirtyRecord> Range(Slice low, const std::string* high, size_t limit, bool from_end,
                                 bool* truncated) GROVE_EXCLUDES(dirty_mu_);

  // The oldest dirty entry's LSN (kMaxLsn when none) and its key.
  Lsn OldestDirtyLsn() const GROVE_EXCLUDES(dirty_mu_);
  std::optional<std::string> OldestDirtyKey() const GROVE_EXCLUDES(dirty_mu_);
  // The first dirty key at or after `from` that is not pinned (a shutdown's sweep in key order).
  std::optional<std::string> NextDirtyKey(Slice from) const GROVE_EXCLUDES(dirty_mu_);
  // Appends the blob cells (Options::is_blob) of dirty entries: a checkpoint's memory-only cells.
  // Costs the number of dirty blob entries, not of dirty entries (it runs with writers paused).
  void DirtyCells(std::vector<std::string>* cells) const GROVE_EXCLUDES(dirty_mu_);
  // Every dirty entry (Verify).
  std::map<std::string, std::optional<std::string>> DirtySnapshot() const GROVE_EXCLUDES(dirty_mu_);

  // Checks the bookkeeping against the entries: bytes_ equals the sum over live entries, the
  // ordered index holds exactly the dirty entries, every entry sits in its shard's table and
  // CLOCK ring. Returns one line per problem (none: consistent). Writers must be paused (Verify
  // pauses them); reads may go on.
  // (Left out of the thread-safety analysis: it locks every shard in a loop, which clang cannot
  // follow.)
  std::vector<std::string> CheckConsistency() const
      GROVE_EXCLUDES(dirty_mu_) GROVE_NO_THREAD_SAFETY_ANALYSIS;

  struct Stats {
    uint64_t entries = 0, dirty = 0, bytes = 0, capacity_bytes = 0;
    uint64_t hits = 0, misses = 0, clean_evictions = 0, dirty_evictions = 0, admissions = 0;
    uint64_t admissions_dropped = 0;  // misses not admitted: over capacity by the slack
    uint64_t writeback_offered = 0;   // dirty records handed to write-backs
  };
  Stats GetStats() const GROVE_EXCLUDES(dirty_mu_);
  uint64_t capacity_bytes() const { return capacity_.load(std::memory_order_relaxed); }
  // Moves the capacity; a lower one is reached by eviction (Evict, the admissions' own sweeps).
  void SetCapacity(uint64_t bytes) { capacity_.store(bytes, std::memory_order_relaxed); }
  // Writes of keys that were not cached but evicted within the last ghost_bytes of evictions.
  uint64_t write_ghost_hits() const { return write_ghost_hits_.load(std::memory_order_relaxed); }
  // Bytes per entry on average (key, cell and overhead); kEntryOverhead when empty.
  uint64_t BytesPerEntry() const {
    const uint64_t n = entries_.load(std::memory_order_relaxed);
    return n == 0 ? kEntryOverhead : bytes_.load(std::memory_order_relaxed) / n;
  }
  uint8_t mid_priority() const { return o_.p_mid; }
  // Bytes above capacity (eviction pending).
  uint64_t Excess() const {
    const uint64_t b = bytes_.load(std::memory_order_relaxed);
    const uint64_t c = capacity_bytes();
    return b > c ? b - c : 0;
  }
  uint64_t dirty_entries() const GROVE_EXCLUDES(dirty_mu_);

 private:
  struct Entry;
  struct Shard;
  static constexpr size_t kGenerations = 4096;

  static uint64_t BytesOf(size_t key, size_t cell) { return key + cell + kEntryOverhead; }
  Shard& ShardOf(uint64_t hash) const;
  // Finds `key`'s entry in `s` (nullptr: not cached). REQUIRES: s.mu held.
  Entry* FindLocked(const Shard& s, uint64_t hash, Slice key) const;
  Entry* NewEntryLocked(Shard& s, uint64_t hash, Slice key, SharedCell cell, uint8_t priority);
  void DropLocked(Shard& s, Entry* e);
  // Drops a clean victim of eviction and remembers its key in the ghost set.
  void EvictCleanLocked(Shard& s, Entry* e);
  // Entries the ghost set's window covers now: ghost_bytes at the current bytes per entry.
  uint64_t GhostWindow() const;
  // Moves the shard's hand one slot: that entry when it is at priority 0, else nullptr (an entry
  // above 0 loses one priority).
  Entry* StepLocked(Shard& s);
  // Steps until an entry at 0; nullptr when the shard is empty.
  Entry* NextCandidateLocked(Shard& s);
  // The shard the eviction hand visits next.
  Shard& NextShard();
  // Up to `lookahead` CLOCK steps over the next shards; drops the first clean entry at 0 found.
  bool LookAheadForClean();
  std::vector<DirtyRecord> DirtyInRangeLocked(Slice low, const std::string* high,
                                              uint64_t max_bytes) GROVE_REQUIRES(dirty_mu_);
  void MarkCleanLocked(const DirtyRecord& r) GROVE_REQUIRES(dirty_mu_);
  void SetDirtyLocked(Entry* e, Lsn lsn) GROVE_REQUIRES(dirty_mu_);
  void SetCleanLocked(Entry* e) GROVE_REQUIRES(dirty_mu_);
  uint64_t Slack() const { return capacity_bytes() / 16 + (64u << 10); }

  const Options o_;
  std::atomic<uint64_t> capacity_;
  GhostSet ghost_;
  std::atomic<uint64_t> write_ghost_hits_{0};
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> shard_hand_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> entries_{0};      // every entry (the shards' tables)
  std::atomic<uint64_t> dirty_count_{0};  // dirty_.size(), readable without dirty_mu_

  mutable Mutex dirty_mu_;
  std::map<std::string_view, Entry*, std::less<>> dirty_ GROVE_GUARDED_BY(dirty_mu_);
  std::set<std::pair<Lsn, Entry*>> dirty_by_lsn_ GROVE_GUARDED_BY(dirty_mu_);
  std::set<Entry*> dirty_blobs_ GROVE_GUARDED_BY(dirty_mu_);  // dirty entries whose cell is a blob
  uint64_t next_version_ GROVE_GUARDED_BY(dirty_mu_) = 0;
  uint64_t writeback_offered_ GROVE_GUARDED_BY(dirty_mu_) = 0;
  std::vector<std::string> orphans_
      GROVE_GUARDED_BY(dirty_mu_);  // replaced cells of pinned records
  std::atomic<uint64_t> dirty_evictions_{0};

  std::unique_ptr<std::atomic<uint64_t>[]> generations_ {
    new std::atomic<uint64_t>[ kGenerations ]()
  };
  std::atomic<uint64_t> reorg_generation_{0};
};

}  // namespace grove::treeline
