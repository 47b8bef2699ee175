#include "index/treeline/record_cache.h"

#include <algorithm>
#include <utility>

namespace grove::treeline {

uint32_t RecordCache::NewSlot() {
  if (!free_.empty()) {
    const uint32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void RecordCache::Drop(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.dirty) dirty_by_lsn_.erase({s.lsn, slot});
  bytes_ -= BytesOf(s);
  index_.erase(s.key);
  s = Slot();
  --valid_;
  free_.push_back(slot);
}

void RecordCache::SetDirty(uint32_t slot, Lsn lsn) {
  Slot& s = slots_[slot];
  if (s.dirty) dirty_by_lsn_.erase({s.lsn, slot});
  s.dirty = true;
  s.lsn = lsn;
  s.version = ++next_version_;
  dirty_by_lsn_.insert({lsn, slot});
}

void RecordCache::SetClean(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.dirty) dirty_by_lsn_.erase({s.lsn, slot});
  s.dirty = false;
}

RecordCache::Lookup RecordCache::Get(Slice key) {
  MutexLock lock(&mu_);
  auto it = index_.find(std::string_view(key));
  if (it == index_.end()) {
    ++misses_;
    return {};
  }
  ++hits_;
  Slot& s = slots_[it->second];
  if (s.priority < o_.p_max) ++s.priority;
  if (!s.cell) return {Kind::kTombstone, {}};
  return {Kind::kValue, *s.cell};
}

std::optional<std::string> RecordCache::Write(Slice key, std::optional<std::string> cell, Lsn lsn,
                                              bool* was_value) {
  MutexLock lock(&mu_);
  std::optional<std::string> replaced;
  auto it = index_.find(std::string_view(key));
  if (was_value != nullptr) *was_value = it != index_.end() && slots_[it->second].cell.has_value();
  if (it != index_.end()) {
    const uint32_t slot = it->second;
    Slot& s = slots_[slot];
    if (s.dirty && s.pinned) {
      // The pinned cell is on its way to new pages: it is theirs, or the reorganisation's to
      // release when it is abandoned.
      if (s.cell) orphans_.push_back(std::move(*s.cell));
      s.pinned = false;
    } else if (s.dirty) {
      replaced = std::move(s.cell);
    }
    bytes_ -= BytesOf(s);
    s.cell = std::move(cell);
    bytes_ += BytesOf(s);
    s.priority = std::max(s.priority, o_.p_mid);
    SetDirty(slot, lsn);
    return replaced;
  }
  SetDirty(NewEntry(key, std::move(cell), o_.p_mid), lsn);
  return std::nullopt;
}

int64_t RecordCache::Step() {
  const size_t i = hand_++ % slots_.size();
  Slot& s = slots_[i];
  if (!s.valid) return -1;
  if (s.priority > 0) {
    --s.priority;
    return -1;
  }
  return static_cast<int64_t>(i);
}

int64_t RecordCache::NextCandidate() {
  if (valid_ == 0) return -1;
  for (;;) {
    if (const int64_t c = Step(); c >= 0) return c;
  }
}

void RecordCache::EvictClean(uint32_t slot) {
  Drop(slot);
  ++clean_evictions_;
}

uint32_t RecordCache::NewEntry(Slice key, std::optional<std::string> cell, uint8_t priority) {
  const uint32_t slot = NewSlot();
  Slot& s = slots_[slot];
  s.key.assign(key);
  s.cell = std::move(cell);
  s.valid = true;
  s.priority = priority;
  index_.emplace(s.key, slot);
  bytes_ += BytesOf(s);
  ++valid_;
  return slot;
}

void RecordCache::AdmitClean(Slice key, Slice cell, uint8_t priority, uint64_t page,
                             uint64_t ticket) {
  MutexLock lock(&mu_);
  if (Ticket(page) != ticket || index_.count(std::string_view(key))) return;
  const uint64_t need = key.size() + cell.size() + kEntryOverhead;
  // Make room from clean entries only, with a bounded sweep.
  for (size_t tries = 0; bytes_ + need > o_.capacity_bytes && tries < 2 * o_.lookahead; ++tries) {
    const int64_t c = NextCandidate();
    if (c < 0) break;
    if (!slots_[c].dirty) EvictClean(static_cast<uint32_t>(c));
  }
  if (bytes_ + need > o_.capacity_bytes) return;
  NewEntry(key, std::string(cell), priority);
  ++admissions_;
}

std::optional<std::string> RecordCache::Evict() {
  MutexLock lock(&mu_);
  while (bytes_ > o_.capacity_bytes) {
    const int64_t c = NextCandidate();
    if (c < 0) return std::nullopt;
    if (!slots_[c].dirty) {
      EvictClean(static_cast<uint32_t>(c));
      continue;
    }
    // A dirty candidate costs a write-back: look a little further for a clean one at 0.
    bool evicted = false;
    for (size_t k = 0; k < o_.lookahead && !evicted; ++k) {
      const int64_t i = Step();
      if (i >= 0 && !slots_[i].dirty) {
        EvictClean(static_cast<uint32_t>(i));
        evicted = true;
      }
    }
    if (evicted) continue;
    ++dirty_evictions_;
    return slots_[c].key;
  }
  return std::nullopt;
}

std::vector<RecordCache::DirtyRecord> RecordCache::DirtyInRangeLocked(Slice low,
                                                                      const std::string* high) {
  std::vector<DirtyRecord> out;
  for (auto it = index_.lower_bound(std::string_view(low)); it != index_.end(); ++it) {
    if (high != nullptr && it->first >= *high) break;
    const Slot& s = slots_[it->second];
    // A pinned record is on its way to a reorganisation's new pages, which may already be in
    // the tree: writing it back there too would release the cell those pages hold.
    if (s.dirty && !s.pinned) out.push_back({s.key, s.cell, s.lsn, s.version});
  }
  return out;
}

void RecordCache::MarkCleanLocked(const DirtyRecord& r) {
  auto it = index_.find(r.key);
  if (it == index_.end()) return;
  Slot& s = slots_[it->second];
  if (!s.dirty || s.version != r.version) return;  // written again since: still dirty
  if (!s.cell) {
    Drop(it->second);  // a tombstone that reached its page: nothing left to remember
  } else {
    SetClean(it->second);
  }
}

std::vector<RecordCache::DirtyRecord> RecordCache::PinRange(Slice low, const std::string* high,
                                                            uint64_t max_bytes) {
  MutexLock lock(&mu_);
  std::vector<DirtyRecord> out;
  uint64_t bytes = 0;
  for (auto it = index_.lower_bound(std::string_view(low)); it != index_.end(); ++it) {
    if (high != nullptr && it->first >= *high) break;
    Slot& s = slots_[it->second];
    if (!s.dirty) continue;
    bytes += s.key.size() + (s.cell ? s.cell->size() : 0) + 16;
    if (bytes > max_bytes && !out.empty()) break;
    s.pinned = true;
    out.push_back({s.key, s.cell, s.lsn, s.version});
  }
  return out;
}

std::vector<std::string> RecordCache::Unpin(const std::vector<DirtyRecord>& pinned, bool applied) {
  MutexLock lock(&mu_);
  if (applied) reorg_generation_.fetch_add(1, std::memory_order_acq_rel);
  for (const DirtyRecord& r : pinned) {
    auto it = index_.find(r.key);
    if (it == index_.end()) continue;
    slots_[it->second].pinned = false;
    if (applied) MarkCleanLocked(r);
  }
  return std::exchange(orphans_, {});
}

std::vector<RecordCache::Entry> RecordCache::Range(Slice low, const std::string* high) {
  MutexLock lock(&mu_);
  std::vector<Entry> out;
  for (auto it = index_.lower_bound(std::string_view(low)); it != index_.end(); ++it) {
    if (high != nullptr && it->first >= *high) break;
    const Slot& s = slots_[it->second];
    out.push_back({s.key, s.cell});
  }
  return out;
}

Lsn RecordCache::OldestDirtyLsn() const {
  MutexLock lock(&mu_);
  return dirty_by_lsn_.empty() ? kMaxLsn : dirty_by_lsn_.begin()->first;
}

std::optional<std::string> RecordCache::OldestDirtyKey() const {
  MutexLock lock(&mu_);
  if (dirty_by_lsn_.empty()) return std::nullopt;
  return slots_[dirty_by_lsn_.begin()->second].key;
}

void RecordCache::DirtyCells(std::vector<std::string>* cells) const {
  MutexLock lock(&mu_);
  for (const auto& [lsn, slot] : dirty_by_lsn_) {
    if (slots_[slot].cell) cells->push_back(*slots_[slot].cell);
  }
}

std::map<std::string, std::optional<std::string>> RecordCache::DirtySnapshot() const {
  MutexLock lock(&mu_);
  std::map<std::string, std::optional<std::string>> out;
  for (const auto& [lsn, slot] : dirty_by_lsn_) out.emplace(slots_[slot].key, slots_[slot].cell);
  return out;
}

RecordCache::Stats RecordCache::GetStats() const {
  MutexLock lock(&mu_);
  Stats s;
  s.entries = valid_;
  s.dirty = dirty_by_lsn_.size();
  s.bytes = bytes_;
  s.capacity_bytes = o_.capacity_bytes;
  s.hits = hits_;
  s.misses = misses_;
  s.clean_evictions = clean_evictions_;
  s.dirty_evictions = dirty_evictions_;
  s.admissions = admissions_;
  return s;
}

uint64_t RecordCache::Excess() const {
  MutexLock lock(&mu_);
  return bytes_ > o_.capacity_bytes ? bytes_ - o_.capacity_bytes : 0;
}

uint64_t RecordCache::dirty_entries() const {
  MutexLock lock(&mu_);
  return dirty_by_lsn_.size();
}

}  // namespace grove::treeline
