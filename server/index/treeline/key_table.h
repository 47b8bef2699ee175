#pragma once

// KeyTable: an open-addressed hash table from a key to an object that holds it (the record
// cache's entries), with linear probing and backward-shift deletion (no tombstones, so probe
// sequences stay as short as the load allows). A slot keeps the key's 64-bit hash beside the
// pointer, so a probe compares keys only on a full hash match.
//
//   slots_: [ {hash, T*} | {hash, T*} | {0, nullptr} (empty) | ... ]   capacity a power of two
//
// The caller supplies the hash (the record cache also picks its shard from the high bits; the
// table indexes with the low ones) and `key_of(const T*) -> Slice`. The table grows at a load of
// 3/4 and never shrinks. Not thread-safe: the owner locks.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grove/slice.h"

namespace grove::treeline {

template <typename T, typename KeyOf>
class KeyTable {
 public:
  explicit KeyTable(KeyOf key_of = KeyOf()) : key_of_(key_of) { slots_.resize(kMinCapacity); }

  T* Find(uint64_t hash, Slice key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.value == nullptr) return nullptr;
      if (s.hash == hash && key_of_(s.value) == key) return s.value;
    }
  }

  // REQUIRES: no entry with the same key.
  void Insert(uint64_t hash, T* value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    Place(hash, value);
    ++size_;
  }

  // Removes `value` (found by identity); false when it is not in the table.
  bool Erase(uint64_t hash, const T* value) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    for (;; i = (i + 1) & mask) {
      if (slots_[i].value == nullptr) return false;
      if (slots_[i].value == value) break;
    }
    // Backward shift: pull later members of the probe run into the hole when the hole lies
    // between their home slot and where they sit.
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      if (slots_[j].value == nullptr) break;
      const size_t home = slots_[j].hash & mask;
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot();
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.value != nullptr) fn(s.hash, s.value);
    }
  }

 private:
  static constexpr size_t kMinCapacity = 16;
  struct Slot {
    uint64_t hash = 0;
    T* value = nullptr;
  };

  void Place(uint64_t hash, T* value) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].value != nullptr) i = (i + 1) & mask;
    slots_[i] = Slot{hash, value};
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.value != nullptr) Place(s.hash, s.value);
    }
  }

  KeyOf key_of_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace grove::treeline
