#pragma once

// MemTable: the memory component of AHA-tree's root buffer (the rootLSM's MemTable). It holds the
// newest version of each key written since it was created; when full it is frozen and flushed
// into a sorted run at the top of the root buffer, and a new one takes the writes.
//
// Durability: nothing here is on disk. The engine's WAL keeps every record from first_lsn() on
// (Index::OldestUnpersistedLsn), and the blob cells of the versions held here are listed for
// recovery (Index::ListMemoryOnlyCells).
//
// A write that replaces a version held here hands its cell back (it never reached a run, so
// nothing else references it). Versions replaced elsewhere (in runs) are released when a merge
// drops them.
//
// Thread safety: all methods are safe for concurrent use (one internal mutex); readers copy what
// they take, so no reference into the table outlives a call.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grove/index.h"

#include "index/aha/run.h"
#include "util/mutex.h"

namespace grove::aha {

class MemTable {
 public:
  // Per-entry bookkeeping counted against the table's budget besides key and cell bytes.
  static constexpr uint64_t kEntryOverhead = 64;

  // Writes a version; returns the cell of the value it replaced here, if any. *bytes: the
  // table's bytes() just after (one lock round trip per write, not two).
  std::optional<std::string> Put(Slice key, Lsn lsn, bool tombstone, Slice cell,
                                 uint64_t* bytes = nullptr);
  // The version of `key` held here.
  bool Get(Slice key, Entry* out) const;

  // Up to `max` entries in key order from `from` on (backward from it when `reverse`), `from`
  // itself included when `inclusive`; with `from_start`, from the first (reverse: last) entry.
  // With `has_end`, only keys before `end` (reverse: at or after it). `out` is overwritten; its
  // entries' strings are reused, so a reader that collects batch after batch allocates little.
  void Collect(Slice from, bool from_start, bool inclusive, bool reverse, size_t max, Slice end,
               bool has_end, std::vector<Entry>* out) const;
  // Whether a version of some key in [lo, hi) is held here.
  bool HasKeyIn(Slice lo, Slice hi) const;
  // Cells of the values held here that `keep` accepts (tombstones have none).
  void ValueCells(const std::function<bool(Slice)>& keep, std::vector<std::string>* out) const;

  uint64_t bytes() const;
  uint64_t entries() const;
  Lsn first_lsn() const;  // the smallest LSN written here; kMaxLsn while empty

 private:
  struct Version {
    Lsn lsn;
    bool tombstone;
    std::string cell;
  };
  static void AssignEntry(const std::string& key, const Version& v, Entry* out);

  mutable Mutex mu_;
  std::map<std::string, Version, std::less<>> map_ GROVE_GUARDED_BY(mu_);
  uint64_t bytes_ GROVE_GUARDED_BY(mu_) = 0;
  Lsn first_lsn_ GROVE_GUARDED_BY(mu_) = kMaxLsn;
};

}  // namespace grove::aha
