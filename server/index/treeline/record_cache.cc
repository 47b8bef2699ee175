#include "index/treeline/record_cache.h"

#include <algorithm>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "util/hash.h"

namespace grove::treeline {

// One cached record. The key's bytes follow the struct in the same allocation.
struct RecordCache::Entry {
  uint64_t hash = 0;
  SharedCell cell;  // empty for a tombstone
  Lsn lsn = 0;
  uint64_t version = 0;  // of the last write: tells a record written again from its copy
  uint32_t slot = 0;     // in its shard's CLOCK ring
  uint32_t key_size = 0;
  uint8_t priority = 0;
  bool tombstone = false;
  bool blob = false;  // the cell references value-store pages
  bool dirty = false;
  bool pinned = false;

  Slice key() const { return Slice(reinterpret_cast<const char*>(this + 1), key_size); }

  static Entry* New(uint64_t hash, Slice key) {
    void* mem = ::operator new(sizeof(Entry) + key.size());
    Entry* e = new (mem) Entry;
    e->hash = hash;
    e->key_size = static_cast<uint32_t>(key.size());
    if (!key.empty()) std::memcpy(reinterpret_cast<char*>(e + 1), key.data(), key.size());
    return e;
  }
  static void Delete(Entry* e) {
    e->~Entry();
    ::operator delete(e);
  }
};

struct RecordCache::Shard {
  struct KeyOf {
    Slice operator()(const Entry* e) const { return e->key(); }
  };
  alignas(64) mutable Mutex mu;
  KeyTable<Entry, KeyOf> table GROVE_GUARDED_BY(mu);
  std::vector<Entry*> ring GROVE_GUARDED_BY(mu);  // CLOCK slots; nullptr: free
  std::vector<uint32_t> free_slots GROVE_GUARDED_BY(mu);
  size_t hand GROVE_GUARDED_BY(mu) = 0;
  uint64_t hits GROVE_GUARDED_BY(mu) = 0, misses GROVE_GUARDED_BY(mu) = 0;
  uint64_t clean_evictions GROVE_GUARDED_BY(mu) = 0, admissions GROVE_GUARDED_BY(mu) = 0;
  uint64_t admissions_dropped GROVE_GUARDED_BY(mu) = 0;
};

RecordCache::RecordCache(const Options& options)
    : o_(options),
      capacity_(options.capacity_bytes),
      ghost_(options.ghost_bytes / 64),
      shards_(new Shard[kShards]) {}

RecordCache::~RecordCache() {
  for (size_t i = 0; i < kShards; ++i) {
    Shard& s = shards_[i];
    MutexLock lock(&s.mu);
    for (Entry* e : s.ring) {
      if (e != nullptr) Entry::Delete(e);
    }
  }
}

RecordCache::Shard& RecordCache::ShardOf(uint64_t hash) const { return shards_[hash >> 58]; }

// The *Locked helpers below run under their shard's mu, which every caller takes; the header
// cannot say so (Shard is this file's), so each asserts it for the analysis.

RecordCache::Entry* RecordCache::FindLocked(const Shard& s, uint64_t hash, Slice key) const {
  s.mu.AssertHeld();
  return s.table.Find(hash, key);
}

RecordCache::Entry* RecordCache::NewEntryLocked(Shard& s, uint64_t hash, Slice key, SharedCell cell,
                                                uint8_t priority) {
  s.mu.AssertHeld();
  Entry* e = Entry::New(hash, key);
  e->cell = std::move(cell);
  e->priority = priority;
  if (!s.free_slots.empty()) {
    e->slot = s.free_slots.back();
    s.free_slots.pop_back();
  } else {
    e->slot = static_cast<uint32_t>(s.ring.size());
    s.ring.push_back(nullptr);
  }
  s.ring[e->slot] = e;
  s.table.Insert(hash, e);
  bytes_.fetch_add(BytesOf(key.size(), e->cell.size()), std::memory_order_relaxed);
  entries_.fetch_add(1, std::memory_order_relaxed);
  return e;
}

void RecordCache::DropLocked(Shard& s, Entry* e) {
  s.mu.AssertHeld();
  s.table.Erase(e->hash, e);
  s.ring[e->slot] = nullptr;
  s.free_slots.push_back(e->slot);
  bytes_.fetch_sub(BytesOf(e->key_size, e->cell.size()), std::memory_order_relaxed);
  entries_.fetch_sub(1, std::memory_order_relaxed);
  Entry::Delete(e);
}

void RecordCache::EvictCleanLocked(Shard& s, Entry* e) {
  s.mu.AssertHeld();
  ghost_.Add(e->hash);
  ++s.clean_evictions;
  DropLocked(s, e);
}

uint64_t RecordCache::GhostWindow() const {
  if (o_.ghost_bytes == 0) return 0;
  return std::min({o_.ghost_bytes / std::max<uint64_t>(1, BytesPerEntry()), ghost_.slots() / 2,
                   GhostSet::kMaxWindow});
}

void RecordCache::SetDirtyLocked(Entry* e, Lsn lsn) {
  if (e->dirty) {
    dirty_by_lsn_.erase({e->lsn, e});
  } else {
    dirty_.emplace(e->key(), e);
    dirty_count_.store(dirty_.size(), std::memory_order_relaxed);
  }
  e->dirty = true;
  e->lsn = lsn;
  e->version = ++next_version_;
  dirty_by_lsn_.insert({lsn, e});
  e->blob = !e->tombstone && (!o_.is_blob || o_.is_blob(e->cell.slice()));
  if (e->blob) {
    dirty_blobs_.insert(e);
  } else {
    dirty_blobs_.erase(e);
  }
}

void RecordCache::SetCleanLocked(Entry* e) {
  if (!e->dirty) return;
  dirty_by_lsn_.erase({e->lsn, e});
  dirty_.erase(e->key());
  dirty_count_.store(dirty_.size(), std::memory_order_relaxed);
  if (e->blob) dirty_blobs_.erase(e);
  e->blob = false;
  e->dirty = false;
}

RecordCache::Kind RecordCache::Get(Slice key, std::string* cell, bool* evicted_lately) {
  const uint64_t h = Hash64(key);
  Shard& s = ShardOf(h);
  SharedCell ref;
  {
    MutexLock lock(&s.mu);
    Entry* e = FindLocked(s, h, key);
    if (e == nullptr) {
      ++s.misses;
      if (evicted_lately != nullptr) *evicted_lately = ghost_.Contains(h, GhostWindow());
      return Kind::kMiss;
    }
    ++s.hits;
    if (e->priority < o_.p_max) ++e->priority;
    if (e->tombstone) return Kind::kTombstone;
    ref = e->cell;
  }
  cell->assign(ref.slice().data(), ref.size());
  return Kind::kValue;
}

std::optional<std::string> RecordCache::Write(Slice key, std::optional<Slice> cell, Lsn lsn,
                                              bool* was_value) {
  const uint64_t h = Hash64(key);
  SharedCell fresh = cell ? SharedCell::Make(*cell) : SharedCell();
  SharedCell old;  // freed after the locks are gone (declared before them)
  std::optional<std::string> replaced;
  MutexLock dirty_lock(&dirty_mu_);
  Shard& s = ShardOf(h);
  MutexLock lock(&s.mu);
  Entry* e = FindLocked(s, h, key);
  if (was_value != nullptr) *was_value = e != nullptr && !e->tombstone;
  if (e == nullptr) {
    if (ghost_.Contains(h, GhostWindow())) {
      write_ghost_hits_.fetch_add(1, std::memory_order_relaxed);
    }
    e = NewEntryLocked(s, h, key, std::move(fresh), o_.p_mid);
    e->tombstone = !cell.has_value();
    SetDirtyLocked(e, lsn);
    return std::nullopt;
  }
  if (e->dirty && e->pinned) {
    // The pinned cell is on its way to new pages: it is theirs, or the reorganisation's to
    // release when it is abandoned.
    if (!e->tombstone) orphans_.push_back(e->cell.ToString());
    e->pinned = false;
  } else if (e->dirty && !e->tombstone) {
    replaced = e->cell.ToString();
  }
  bytes_.fetch_add(fresh.size(), std::memory_order_relaxed);
  bytes_.fetch_sub(e->cell.size(), std::memory_order_relaxed);
  old = std::move(e->cell);
  e->cell = std::move(fresh);
  e->tombstone = !cell.has_value();
  e->priority = std::max(e->priority, o_.p_mid);
  SetDirtyLocked(e, lsn);
  return replaced;
}

RecordCache::Entry* RecordCache::StepLocked(Shard& s) {
  s.mu.AssertHeld();
  if (s.ring.empty()) return nullptr;
  if (s.hand >= s.ring.size()) s.hand = 0;
  Entry* e = s.ring[s.hand++];
  if (e == nullptr) return nullptr;
  if (e->priority > 0) {
    --e->priority;
    return nullptr;
  }
  return e;
}

RecordCache::Entry* RecordCache::NextCandidateLocked(Shard& s) {
  s.mu.AssertHeld();
  if (s.table.size() == 0) return nullptr;
  for (;;) {
    if (Entry* c = StepLocked(s); c != nullptr) return c;
  }
}

RecordCache::Shard& RecordCache::NextShard() {
  return shards_[shard_hand_.fetch_add(1, std::memory_order_relaxed) % kShards];
}

bool RecordCache::LookAheadForClean() {
  // The entries after a candidate in CLOCK order are spread over the shards the hand visits
  // next: one step in each.
  for (size_t k = 0; k < o_.lookahead; ++k) {
    Shard& s = NextShard();
    MutexLock lock(&s.mu);
    Entry* e = StepLocked(s);
    if (e != nullptr && !e->dirty) {
      EvictCleanLocked(s, e);
      return true;
    }
  }
  return false;
}

std::optional<std::string> RecordCache::Evict() {
  size_t idle = 0;  // shards visited in a row that had nothing to evict
  while (bytes_.load(std::memory_order_relaxed) > capacity_bytes()) {
    Shard& s = NextShard();
    std::string dirty_key;
    {
      MutexLock lock(&s.mu);
      Entry* c = NextCandidateLocked(s);
      if (c == nullptr) {
        if (++idle >= kShards) return std::nullopt;
        continue;
      }
      idle = 0;
      if (!c->dirty) {
        EvictCleanLocked(s, c);
        continue;
      }
      dirty_key.assign(c->key());
    }
    // A dirty candidate costs a write-back: look a little further for a clean one at 0.
    if (LookAheadForClean()) continue;
    dirty_evictions_.fetch_add(1, std::memory_order_relaxed);
    return dirty_key;
  }
  return std::nullopt;
}

std::optional<std::string> RecordCache::ColdDirtyKey(size_t max_steps) {
  for (size_t k = 0; k < max_steps && dirty_count_.load(std::memory_order_relaxed) > 0; ++k) {
    Shard& s = NextShard();
    MutexLock lock(&s.mu);
    const Entry* e = StepLocked(s);
    if (e != nullptr && e->dirty) return std::string(e->key());
  }
  return std::nullopt;
}

void RecordCache::AdmitClean(Slice key, Slice cell, uint8_t priority, uint64_t page,
                             uint64_t ticket) {
  const uint64_t h = Hash64(key);
  const uint64_t need = BytesOf(key.size(), cell.size());
  const uint64_t capacity = capacity_bytes();
  const uint64_t slack = capacity == 0 ? 0 : Slack();
  if (need > capacity + slack) return;
  SharedCell fresh = SharedCell::Make(cell);
  Shard& s = ShardOf(h);
  MutexLock lock(&s.mu);
  if (Ticket(page) != ticket || FindLocked(s, h, key) != nullptr) return;
  // Room from this shard's clean entries, with a bounded sweep; dirty ones are the caller's
  // eviction's to write back.
  for (size_t tries = 0;
       bytes_.load(std::memory_order_relaxed) + need > capacity && tries < 2 * o_.lookahead;
       ++tries) {
    Entry* c = NextCandidateLocked(s);
    if (c == nullptr) break;
    if (!c->dirty) EvictCleanLocked(s, c);
  }
  if (bytes_.load(std::memory_order_relaxed) + need > capacity + slack) {
    ++s.admissions_dropped;
    return;
  }
  NewEntryLocked(s, h, key, std::move(fresh), priority);
  ++s.admissions;
}

std::vector<RecordCache::DirtyRecord> RecordCache::DirtyInRangeLocked(Slice low,
                                                                      const std::string* high,
                                                                      uint64_t max_bytes) {
  std::vector<DirtyRecord> out;
  uint64_t bytes = 0;
  for (auto it = dirty_.lower_bound(low); it != dirty_.end(); ++it) {
    if (high != nullptr && it->first >= *high) break;
    const Entry* e = it->second;
    // A pinned record is on its way to a reorganisation's new pages, which may already be in
    // the tree: writing it back there too would release the cell those pages hold.
    if (e->pinned) continue;
    bytes += e->key_size + e->cell.size() + 16;
    if (bytes > max_bytes && !out.empty()) break;
    out.push_back({std::string(e->key()), e->cell, e->lsn, e->version});
  }
  writeback_offered_ += out.size();
  return out;
}

void RecordCache::MarkCleanLocked(const DirtyRecord& r) {
  auto it = dirty_.find(Slice(r.key));
  if (it == dirty_.end()) return;
  Entry* e = it->second;
  if (e->version != r.version) return;  // written again since: still dirty
  Shard& s = ShardOf(e->hash);
  MutexLock lock(&s.mu);
  SetCleanLocked(e);
  // A tombstone that reached its page: nothing left to remember.
  if (e->tombstone) DropLocked(s, e);
}

std::vector<RecordCache::DirtyRecord> RecordCache::PinRange(Slice low, const std::string* high,
                                                            uint64_t max_bytes) {
  MutexLock lock(&dirty_mu_);
  std::vector<DirtyRecord> out;
  uint64_t bytes = 0;
  for (auto it = dirty_.lower_bound(low); it != dirty_.end(); ++it) {
    if (high != nullptr && it->first >= *high) break;
    Entry* e = it->second;
    bytes += e->key_size + e->cell.size() + 16;
    if (bytes > max_bytes && !out.empty()) break;
    e->pinned = true;
    out.push_back({std::string(e->key()), e->cell, e->lsn, e->version});
  }
  return out;
}

std::vector<std::string> RecordCache::Unpin(const std::vector<DirtyRecord>& pinned, bool applied) {
  MutexLock lock(&dirty_mu_);
  if (applied) reorg_generation_.fetch_add(1, std::memory_order_acq_rel);
  for (const DirtyRecord& r : pinned) {
    auto it = dirty_.find(Slice(r.key));
    if (it == dirty_.end()) continue;
    it->second->pinned = false;
    if (applied) MarkCleanLocked(r);
  }
  return std::exchange(orphans_, {});
}

std::vector<RecordCache::DirtyRecord> RecordCache::Range(Slice low, const std::string* high,
                                                         size_t limit, bool from_end,
                                                         bool* truncated) {
  MutexLock lock(&dirty_mu_);
  std::vector<DirtyRecord> out;
  auto add = [&](const Entry* e) {
    out.push_back({std::string(e->key()), e->cell, e->lsn, e->version});
  };
  auto first = dirty_.lower_bound(low);
  auto last = high == nullptr ? dirty_.end() : dirty_.lower_bound(Slice(*high));
  if (!from_end) {
    auto it = first;
    for (; it != last && out.size() < limit; ++it) add(it->second);
    *truncated = it != last;
    return out;
  }
  auto it = last;
  while (it != first && out.size() < limit) add((--it)->second);
  *truncated = it != first;
  std::reverse(out.begin(), out.end());
  return out;
}

Lsn RecordCache::OldestDirtyLsn() const {
  MutexLock lock(&dirty_mu_);
  return dirty_by_lsn_.empty() ? kMaxLsn : dirty_by_lsn_.begin()->first;
}

std::optional<std::string> RecordCache::OldestDirtyKey() const {
  MutexLock lock(&dirty_mu_);
  if (dirty_by_lsn_.empty()) return std::nullopt;
  return std::string(dirty_by_lsn_.begin()->second->key());
}

std::optional<std::string> RecordCache::NextDirtyKey(Slice from) const {
  MutexLock lock(&dirty_mu_);
  for (auto it = dirty_.lower_bound(from); it != dirty_.end(); ++it) {
    if (!it->second->pinned) return std::string(it->first);
  }
  return std::nullopt;
}

void RecordCache::DirtyCells(std::vector<std::string>* cells) const {
  MutexLock lock(&dirty_mu_);
  for (const Entry* e : dirty_blobs_) cells->push_back(e->cell.ToString());
}

std::map<std::string, std::optional<std::string>> RecordCache::DirtySnapshot() const {
  MutexLock lock(&dirty_mu_);
  std::map<std::string, std::optional<std::string>> out;
  for (const auto& [key, e] : dirty_) {
    out.emplace(std::string(key),
                e->tombstone ? std::nullopt : std::optional<std::string>(e->cell.ToString()));
  }
  return out;
}

std::vector<std::string> RecordCache::CheckConsistency() const {
  std::vector<std::string> problems;
  MutexLock dirty_lock(&dirty_mu_);
  // Every shard at once, in index order: reads keep admitting and evicting clean entries while
  // writers are paused, and the sum must be of one moment.
  for (size_t i = 0; i < kShards; ++i) shards_[i].mu.Lock();
  uint64_t bytes = 0, dirty = 0, entries = 0;
  for (size_t i = 0; i < kShards; ++i) {
    const Shard& s = shards_[i];
    entries += s.table.size();
    uint64_t in_ring = 0;
    for (size_t slot = 0; slot < s.ring.size(); ++slot) {
      const Entry* e = s.ring[slot];
      if (e == nullptr) continue;
      ++in_ring;
      if (e->slot != slot) {
        problems.push_back(
            fmt::format("record cache: shard {} slot {} holds an entry that says "
                        "slot {}",
                        i, slot, e->slot));
      }
      if ((e->hash >> 58) != i || e->hash != Hash64(e->key()) ||
          s.table.Find(e->hash, e->key()) != e) {
        problems.push_back(
            fmt::format("record cache: shard {} slot {}: the entry is not where "
                        "its key's hash puts it",
                        i, slot));
      }
      bytes += BytesOf(e->key_size, e->cell.size());
      if (e->tombstone && !e->dirty) {
        problems.push_back(fmt::format("record cache: shard {}: a clean tombstone", i));
      }
      if (e->tombstone == static_cast<bool>(e->cell)) {
        problems.push_back(
            fmt::format("record cache: shard {}: an entry whose cell disagrees "
                        "with its tombstone mark",
                        i));
      }
      if (e->dirty) {
        ++dirty;
        auto it = dirty_.find(e->key());
        if (it == dirty_.end() || it->second != e) {
          problems.push_back(fmt::format(
              "record cache: shard {}: a dirty entry missing from the ordered index", i));
        } else if (dirty_by_lsn_.count({e->lsn, const_cast<Entry*>(e)}) == 0) {
          problems.push_back(
              fmt::format("record cache: shard {}: a dirty entry missing from the LSN index", i));
        }
        if (e->blob != (dirty_blobs_.count(const_cast<Entry*>(e)) > 0)) {
          problems.push_back(
              fmt::format("record cache: shard {}: a dirty entry's blob mark "
                          "disagrees with the blob index",
                          i));
        }
      }
    }
    if (in_ring != s.table.size()) {
      problems.push_back(
          fmt::format("record cache: shard {} has {} entries in its ring and {} "
                      "in its table",
                      i, in_ring, s.table.size()));
    }
  }
  if (bytes != bytes_.load()) {
    problems.push_back(
        fmt::format("record cache: counts {} bytes, its entries hold {}", bytes_.load(), bytes));
  }
  // The counters as of the same moment: reads admit and evict again once the shards unlock.
  const uint64_t counted_entries = entries_.load(), counted_dirty = dirty_count_.load();
  for (size_t i = kShards; i-- > 0;) shards_[i].mu.Unlock();
  if (entries != counted_entries || dirty != counted_dirty) {
    problems.push_back(fmt::format("record cache: {} entries ({} dirty), its counters say {} ({})",
                                   entries, dirty, counted_entries, counted_dirty));
  }
  if (dirty_blobs_.size() > dirty) {
    problems.push_back(fmt::format("record cache: {} dirty blob entries, {} dirty entries",
                                   dirty_blobs_.size(), dirty));
  }
  if (dirty != dirty_.size() || dirty != dirty_by_lsn_.size()) {
    problems.push_back(
        fmt::format("record cache: {} dirty entries, the ordered index has {} and "
                    "the LSN index {}",
                    dirty, dirty_.size(), dirty_by_lsn_.size()));
  }
  return problems;
}

RecordCache::Stats RecordCache::GetStats() const {
  Stats st;
  {
    MutexLock lock(&dirty_mu_);
    st.dirty = dirty_.size();
    st.writeback_offered = writeback_offered_;
  }
  for (size_t i = 0; i < kShards; ++i) {
    const Shard& s = shards_[i];
    MutexLock lock(&s.mu);
    st.entries += s.table.size();
    st.hits += s.hits;
    st.misses += s.misses;
    st.clean_evictions += s.clean_evictions;
    st.admissions += s.admissions;
    st.admissions_dropped += s.admissions_dropped;
  }
  st.bytes = bytes_.load();
  st.capacity_bytes = capacity_bytes();
  st.dirty_evictions = dirty_evictions_.load();
  return st;
}

uint64_t RecordCache::dirty_entries() const {
  MutexLock lock(&dirty_mu_);
  return dirty_.size();
}

}  // namespace grove::treeline
