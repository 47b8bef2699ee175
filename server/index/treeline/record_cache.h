#pragma once

// RecordCache: TreeLine's record cache (paper §4.1-4.2). It caches individual records and always
// holds the newest version of every record written since it last reached a page: writes go here
// (write-back), dirty, and reach their page only when evicted or flushed, together with every
// other dirty record of that page (same-page batching, done by the caller).
//
//   * Priorities 0..p_max (7; p_mid = 4): writes and read misses enter at p_mid, an access adds
//     one, CLOCK's hand takes one per pass and evicts at 0. A dirty candidate costs a write-back,
//     so the hand first looks up to `lookahead` (32) entries further for a clean one at 0.
//   * Optional optimistic admission: the other records of a page a read fetched, at priority 1.
//   * An ordered index over the cached keys serves scans and finds the dirty records of a page.
//   * Capacity is in bytes: key, cell and 96 bytes of bookkeeping per entry (the paper's figure).
//   * Dirty entries carry the LSN of their write; the oldest bounds the WAL's redo point.
//
// Entries: a key maps to a cell, or to a tombstone (a delete that has not reached its page yet).
// A clean entry equals what its page holds; a clean tombstone is never kept.
//
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
// Thread safety: every method is safe for concurrent use (one mutex; the caller's page latches
// are taken before it, never while holding it).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grove/index.h"
#include "grove/slice.h"

#include "util/mutex.h"

namespace grove::treeline {

class RecordCache {
 public:
  struct Options {
    uint64_t capacity_bytes = 64 << 20;
    uint8_t p_max = 7;
    uint8_t p_mid = 4;
    size_t lookahead = 32;
  };
  static constexpr size_t kEntryOverhead = 96;

  explicit RecordCache(const Options& options) : o_(options) {}

  enum class Kind { kMiss, kValue, kTombstone };
  struct Lookup {
    Kind kind = Kind::kMiss;
    std::string cell;
  };
  Lookup Get(Slice key) EXCLUDES(mu_);

  // A write (cell) or a delete (nullopt), dirty, at `lsn`. Returns the cell it replaced when that
  // cell lived only here (a dirty entry's): nobody else references it, the caller frees it. A
  // clean entry's cell is on its page, which releases it when the write reaches the page.
  // *was_value (optional) says whether the key was cached with a value (an update, not an insert).
  std::optional<std::string> Write(Slice key, std::optional<std::string> cell, Lsn lsn,
                                   bool* was_value = nullptr) EXCLUDES(mu_);

  // The generation of base page `page`, read while the page is latched.
  uint64_t Ticket(uint64_t page) const {
    return generations_[page % kGenerations].load(std::memory_order_acquire) +
           reorg_generation_.load(std::memory_order_acquire);
  }
  // Admits a record read from base page `page` (or its overflow page) under `ticket`, clean, at
  // `priority`, when it fits or clean entries can make room (a read never writes back). Does
  // nothing when the key is cached or the ticket is stale.
  void AdmitClean(Slice key, Slice cell, uint8_t priority, uint64_t page, uint64_t ticket)
      EXCLUDES(mu_);

  // Evicts until the cache fits its capacity. Clean victims go at once; when the hand must stop
  // at a dirty one, returns its key: the caller writes its page back (which cleans it) and calls
  // again. nullopt: the cache fits.
  std::optional<std::string> Evict() EXCLUDES(mu_);

  struct DirtyRecord {
    std::string key;
    std::optional<std::string> cell;  // nullopt: a tombstone
    Lsn lsn = 0;
    uint64_t version = 0;  // the write's (a batch's writes share one LSN)
  };
  // Runs `apply` on the dirty records with keys in [low, high) (no `high`: to the end) that are
  // not pinned (a reorganisation is taking those to its new pages), ascending,
  // under the cache's mutex, so that no write can change them meanwhile (a write that replaced a
  // dirty cell would free it while its page takes it). `apply` returns how many of them (a
  // prefix) reached their page; those become clean, and tombstones leave the cache.
  // REQUIRES: the caller holds the pages `apply` writes (page latches come before the cache).
  // `page` is the base page written (its read tickets go stale).
  template <typename Fn>
  size_t WriteBackRange(Slice low, const std::string* high, uint64_t page, Fn&& apply)
      EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    std::vector<DirtyRecord> dirty = DirtyInRangeLocked(low, high);
    const size_t done = apply(dirty);
    if (done > 0) generations_[page % kGenerations].fetch_add(1, std::memory_order_acq_rel);
    for (size_t i = 0; i < done && i < dirty.size(); ++i) MarkCleanLocked(dirty[i]);
    return done;
  }

  // Pins dirty records with keys in [low, high) and returns them, ascending: the first ones in
  // key order while their keys and cells come to at most `max_bytes` (16 bytes more each, for a
  // slot), and always the first one. The rest stay dirty and reach their pages later.
  std::vector<DirtyRecord> PinRange(Slice low, const std::string* high, uint64_t max_bytes)
      EXCLUDES(mu_);
  // Ends the pins of PinRange's `pinned`. applied: the records reached new pages; those not
  // written since become clean (tombstones leave). Returns the cells of pinned records replaced
  // meanwhile: when !applied the caller releases them; when applied they are on the new pages.
  std::vector<std::string> Unpin(const std::vector<DirtyRecord>& pinned, bool applied)
      EXCLUDES(mu_);

  struct Entry {
    std::string key;
    std::optional<std::string> cell;  // nullopt: a tombstone
  };
  // Every entry with a key in [low, high), ascending (scans merge them over the pages').
  std::vector<Entry> Range(Slice low, const std::string* high) EXCLUDES(mu_);

  // The oldest dirty entry's LSN (kMaxLsn when none) and its key.
  Lsn OldestDirtyLsn() const EXCLUDES(mu_);
  std::optional<std::string> OldestDirtyKey() const EXCLUDES(mu_);
  // Appends the cells of dirty entries (tombstones have none).
  void DirtyCells(std::vector<std::string>* cells) const EXCLUDES(mu_);
  // Every dirty entry (Verify).
  std::map<std::string, std::optional<std::string>> DirtySnapshot() const EXCLUDES(mu_);

  struct Stats {
    uint64_t entries = 0, dirty = 0, bytes = 0, capacity_bytes = 0;
    uint64_t hits = 0, misses = 0, clean_evictions = 0, dirty_evictions = 0, admissions = 0;
  };
  Stats GetStats() const EXCLUDES(mu_);
  uint64_t capacity_bytes() const { return o_.capacity_bytes; }
  uint8_t mid_priority() const { return o_.p_mid; }
  // Bytes above capacity (eviction pending).
  uint64_t Excess() const EXCLUDES(mu_);
  uint64_t dirty_entries() const EXCLUDES(mu_);

 private:
  struct Slot {
    std::string key;
    std::optional<std::string> cell;
    Lsn lsn = 0;
    uint64_t version = 0;  // of the last write: tells a record written again from its copy
    bool dirty = false;
    bool valid = false;
    bool pinned = false;
    uint8_t priority = 0;
  };
  static constexpr size_t kGenerations = 4096;
  static uint64_t BytesOf(const Slot& s) {
    return s.key.size() + (s.cell ? s.cell->size() : 0) + kEntryOverhead;
  }
  std::vector<DirtyRecord> DirtyInRangeLocked(Slice low, const std::string* high) REQUIRES(mu_);
  void MarkCleanLocked(const DirtyRecord& r) REQUIRES(mu_);
  uint32_t NewSlot() REQUIRES(mu_);
  void Drop(uint32_t slot) REQUIRES(mu_);
  void SetDirty(uint32_t slot, Lsn lsn) REQUIRES(mu_);
  void SetClean(uint32_t slot) REQUIRES(mu_);
  // Moves the hand one slot: that slot when it is valid at priority 0, else -1 (a valid slot
  // above 0 loses one priority).
  int64_t Step() REQUIRES(mu_);
  // Steps until a slot at 0; -1 when the cache is empty.
  int64_t NextCandidate() REQUIRES(mu_);
  void EvictClean(uint32_t slot) REQUIRES(mu_);
  // A new entry, clean (the caller marks it dirty).
  uint32_t NewEntry(Slice key, std::optional<std::string> cell, uint8_t priority) REQUIRES(mu_);

  const Options o_;
  mutable Mutex mu_;
  std::vector<Slot> slots_ GUARDED_BY(mu_);
  std::vector<uint32_t> free_ GUARDED_BY(mu_);
  std::map<std::string, uint32_t, std::less<>> index_ GUARDED_BY(mu_);
  std::set<std::pair<Lsn, uint32_t>> dirty_by_lsn_ GUARDED_BY(mu_);
  size_t hand_ GUARDED_BY(mu_) = 0;
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  uint64_t valid_ GUARDED_BY(mu_) = 0;
  uint64_t hits_ GUARDED_BY(mu_) = 0, misses_ GUARDED_BY(mu_) = 0;
  uint64_t clean_evictions_ GUARDED_BY(mu_) = 0, dirty_evictions_ GUARDED_BY(mu_) = 0;
  uint64_t admissions_ GUARDED_BY(mu_) = 0;
  uint64_t next_version_ GUARDED_BY(mu_) = 0;
  std::vector<std::string> orphans_ GUARDED_BY(mu_);  // replaced cells of pinned records
  std::unique_ptr<std::atomic<uint64_t>[]> generations_ {
    new std::atomic<uint64_t>[ kGenerations ]()
  };
  std::atomic<uint64_t> reorg_generation_{0};
};

}  // namespace grove::treeline
