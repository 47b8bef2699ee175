#pragma once

// RangeCopier: a consistent copy of a key range of a live engine, as of one moment (a cut),
// while writes to the range go on. What a replica behind a snapshot installs.
//
// The engine's iterators are not point-in-time snapshots, so the copier keeps the cut itself, in
// the style of a copy-on-write snapshot: from the cut on, before any write changes a key the copy
// has not passed yet, the writer calls Preserve, which saves what the key held at the cut (its
// value, expiry and version, or that it was absent). The copy walks the range in key order with an
// ordinary iterator and merges in the preserved keys: a preserved key gives its saved state (a key
// deleted since the cut is still copied, one created since is not), any other key what the
// iterator read, which no write changed since the cut. Memory: one saved cell per key written
// ahead of the copy while it runs.
//
// Lifecycle:  idle --Begin (at the cut)--> copying --Run ... End--> idle
//
// Thread safety: Begin at the cut (the caller keeps writers out while it runs); Preserve from the
// writer, before it writes, with nothing of the copier's held; Run on one other thread; End after
// Run. Lock order: mu_ is a leaf but for the engine reads Preserve makes under it (the engine
// takes its own locks; it never calls back here).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grove/db.h"
#include "grove/slice.h"
#include "grove/status.h"

#include "util/mutex.h"

namespace grove::raft {

// One key of a copy, as it was at the cut.
struct CopiedKey {
  Slice key;
  Slice value;
  uint64_t expires_ms = 0;  // Unix ms; 0: none
  uint64_t version = 0;     // the version the key carries (0: written before versions existed)
};

// Receives the copy, in key order: each key present at the cut.
using RangeSink = std::function<Status(const CopiedKey& entry)>;

class RangeCopier {
 public:
  // Copies [start, end) of `db` (end empty: unbounded).
  RangeCopier(Db* db, std::string start, std::string end)
      : db_(db), start_(std::move(start)), end_(std::move(end)) {}

  // Starts a copy as of now. kFailedPrecondition when one is running already.
  Status Begin() GROVE_EXCLUDES(mu_);
  // Saves what each of `keys` holds before the caller writes it, for a running copy that has not
  // passed it. Keys outside the range are ignored.
  Status Preserve(const std::vector<Slice>& keys) GROVE_EXCLUDES(mu_);
  // Walks the range and hands the copy to `sink`; stops at the first error, the sink's included.
  Status Run(const RangeSink& sink) GROVE_EXCLUDES(mu_);
  void End() GROVE_EXCLUDES(mu_);

  bool active() GROVE_EXCLUDES(mu_);
  // The range ends at `end` from the next copy on (a split); a running copy keeps its cut's
  // bounds.
  void Narrow(std::string end) GROVE_EXCLUDES(mu_);

 private:
  struct Saved {
    std::string value;
    uint64_t expires_ms = 0;
    uint64_t version = 0;
  };
  bool InRange(Slice key) const GROVE_REQUIRES(mu_) {
    return key >= Slice(start_) && (copy_end_.empty() || key < Slice(copy_end_));
  }
  // Whether the copy has not handed `key` over yet.
  bool Ahead(Slice key) const GROVE_REQUIRES(mu_) { return !passed_any_ || key > Slice(cursor_); }

  Db* const db_;
  const std::string start_;
  Mutex mu_;
  std::string end_ GROVE_GUARDED_BY(mu_);
  std::string copy_end_ GROVE_GUARDED_BY(mu_);  // the running copy's
  bool active_ GROVE_GUARDED_BY(mu_) = false;
  bool passed_any_ GROVE_GUARDED_BY(mu_) = false;
  std::string cursor_ GROVE_GUARDED_BY(mu_);  // the last key handed over (or skipped)
  // Keys written since the cut that the copy had not passed: their state at the cut (nullopt:
  // absent).
  std::map<std::string, std::optional<Saved>, std::less<>> saved_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove::raft
