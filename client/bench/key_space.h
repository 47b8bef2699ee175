#pragma once

// KeySpace: the keys of one benchmark process and how many of them exist right now.
//
// keys() is the key set in insertion order (key_set.h): [0, loaded) were loaded, inserts claim
// the following ones. "Existing" keys are the loaded ones plus acknowledged inserts; request
// distributions choose among them. Inserts complete out of order across threads, so the newest
// few "existing" keys may still be in flight when a reader picks one; the reader then counts a
// not-found read (visible in the JSON as op_counts.read.not_found).
//
// The keys are either a vector (every shape of key_set.h) or computed on demand (GappedKeys, for
// key sets too large to hold).
//
// Thread safety: ClaimInsert, AckInsert and the accessors are safe from any thread.
// BuildSorted() must run before worker threads start.

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "bench/gapped_keys.h"

namespace grove::bench {

class KeySpace {
 public:
  KeySpace(std::vector<uint64_t> keys, uint64_t loaded, uint64_t inserted = 0);
  KeySpace(const GappedKeys& keys, uint64_t loaded, uint64_t inserted = 0);

  uint64_t loaded() const { return loaded_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t inserted() const { return inserted_.load(std::memory_order_relaxed); }
  uint64_t existing() const { return loaded_ + inserted(); }
  uint64_t key(uint64_t index) const { return gapped_ ? gapped_->key(index) : keys_[index]; }
  // Whether keys are computed on demand: sorted_key() needs no BuildSorted().
  bool computed() const { return gapped_.has_value(); }

  // Claims the index of the next key to insert. False when every key of the set is used.
  bool ClaimInsert(uint64_t* index);
  // Counts one completed insert (makes one more key visible to readers).
  void AckInsert() { inserted_.fetch_add(1, std::memory_order_relaxed); }

  // The rank-th smallest loaded key, for ordered distributions (hotspot ranges, unscrambled
  // zipfian). REQUIRES: rank < loaded(), and BuildSorted() done unless computed().
  uint64_t sorted_key(uint64_t rank) const {
    return gapped_ ? gapped_->sorted_loaded(rank) : sorted_[rank];
  }
  // The loaded keys in ascending order as a vector (trace replays map onto it). Built once; for
  // computed keys this holds them all (8 bytes each).
  void BuildSorted();
  const std::vector<uint64_t>& sorted_loaded() const { return sorted_; }

 private:
  const std::vector<uint64_t> keys_;
  const std::optional<GappedKeys> gapped_;
  const uint64_t capacity_;
  const uint64_t loaded_;
  std::atomic<uint64_t> next_insert_;
  std::atomic<uint64_t> inserted_;
  std::vector<uint64_t> sorted_;
};

}  // namespace grove::bench
