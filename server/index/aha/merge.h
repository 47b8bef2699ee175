#pragma once

// Merging the versions of AHA-tree's buffers: a read or a compaction sees several sources (the
// memtables, then runs from the freshest buffer down to the leaves) and takes, for each key, its
// newest version. Newest means the largest LSN; on equal LSNs (a write replayed onto a state
// that already held it) the source listed first, which is the fresher one by the freshness
// invariant. The versions a merge passes over are "shadowed": a compaction that drops them
// releases their cells (IndexServices::ReleaseCell).
//
// A source's entry() must stay valid until its Next(): the merge hands it out without a copy.
//
// Thread safety: one thread per object.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "index/aha/memtable.h"
#include "index/aha/run.h"

namespace grove::aha {

// Entries in key order, or reverse key order, as the merge asks.
class Source {
 public:
  virtual ~Source() = default;
  virtual bool Valid() const = 0;
  virtual const Entry& entry() const = 0;
  virtual void Next() = 0;  // in the source's direction
  virtual Status status() const = 0;
  // A lazy source (NewLazySource) is pending until opened: entry() is then only a bound (no
  // entry of it comes before that key in the merge's direction), and the merge opens it when
  // the bound is where the merge is.
  virtual bool Pending() const { return false; }
  virtual void Open() {}
};

// A run, from `start` on (inclusive; reverse: from the last key <= start), or from its first
// (last) entry when `from_start`.
std::unique_ptr<Source> NewRunSource(BufferPool* pool, std::shared_ptr<const Run> run, Slice start,
                                     bool from_start, bool reverse, IoCause cause,
                                     uint32_t readahead);
// Runs with disjoint key ranges in key order (a level below level 0), read one after another as
// one source, from `start` as for NewRunSource.
std::unique_ptr<Source> NewLevelSource(BufferPool* pool,
                                       std::vector<std::shared_ptr<const Run>> runs, Slice start,
                                       bool from_start, bool reverse, IoCause cause,
                                       uint32_t readahead);
// A memtable, read in batches so that no lock is held between calls; writes made after the
// source was created may or may not be seen. The batches grow from a few entries (a short scan
// copies little) to a few hundred; with `has_end`, nothing at or past `end` (reverse: before it)
// is copied out.
std::unique_ptr<Source> NewMemTableSource(std::shared_ptr<const MemTable> table, Slice start,
                                          bool from_start, bool reverse);
std::unique_ptr<Source> NewMemTableSource(std::shared_ptr<const MemTable> table, Slice start,
                                          bool from_start, bool reverse, Slice end, bool has_end);
// A source made by `open` only when a merge reaches `bound` (see Source::Pending): a scan opens
// (reads a page of) only the runs its range actually reaches, not every run that starts beyond
// its first key.
std::unique_ptr<Source> NewLazySource(std::string bound,
                                      std::function<std::unique_ptr<Source>()> open);
// A fixed list of entries, already in the merge's direction.
std::unique_ptr<Source> NewVectorSource(std::vector<Entry> entries);

class MergingIterator {
 public:
  // sources[0] is the freshest. Every source must run in the same direction (`reverse`).
  // With `keep_shadowed`, shadowed() lists the versions each step passed over.
  MergingIterator(std::vector<std::unique_ptr<Source>> sources, bool reverse, bool keep_shadowed);

  bool Valid() const { return valid_; }
  // The newest version of the current key (possibly a tombstone); valid until Next().
  const Entry& entry() const { return *current_; }
  const std::vector<Entry>& shadowed() const { return shadowed_; }
  // Which sources they came from (indexes into the constructor's list): Verify checks the
  // freshness invariant with them.
  size_t source() const { return source_; }
  const std::vector<size_t>& shadowed_sources() const { return shadowed_sources_; }
  void Next();
  // The first error of any source.
  Status status() const;

 private:
  void Step();
  // Fills at_key_ with the live sources at the smallest key (largest, reverse), and runner_up_
  // with the next key among the others; false when none (or one failed).
  bool FindSmallest();
  // Whether key a comes before key b in the merge's direction.
  bool Before(Slice a, Slice b) const { return reverse_ ? a.compare(b) > 0 : a.compare(b) < 0; }

  std::vector<std::unique_ptr<Source>> sources_;
  bool reverse_;
  bool keep_shadowed_;
  bool valid_ = false;
  const Entry* current_ = nullptr;  // the winning source's entry
  std::vector<size_t> live_;        // sources not yet exhausted
  Status error_;
  std::vector<Entry> shadowed_;
  size_t source_ = 0;
  std::vector<size_t> shadowed_sources_;
  std::vector<size_t> at_key_;  // scratch: sources positioned at the smallest key
  // The smallest key (largest, reverse) of a source not in at_key_ (null: none), pointing into
  // that source's entry, which stays put until that source moves.
  const std::string* runner_up_ = nullptr;
};

}  // namespace grove::aha
