#include "index/aha/memtable.h"

#include <algorithm>

namespace grove::aha {

void MemTable::AssignEntry(const std::string& key, const Version& v, Entry* out) {
  out->key.assign(key);
  out->lsn = v.lsn;
  out->tombstone = v.tombstone;
  out->cell.assign(v.cell);
}

std::optional<std::string> MemTable::Put(Slice key, Lsn lsn, bool tombstone, Slice cell,
                                         uint64_t* bytes) {
  MutexLock lock(&mu_);
  first_lsn_ = std::min(first_lsn_, lsn);
  const std::string_view k(key.data(), key.size());
  auto it = map_.find(k);
  std::string stored = tombstone ? std::string() : std::string(cell);
  if (it == map_.end()) {
    bytes_ += key.size() + stored.size() + kEntryOverhead;
    map_.emplace(std::string(k), Version{lsn, tombstone, std::move(stored)});
    if (bytes != nullptr) *bytes = bytes_;
    return std::nullopt;
  }
  std::optional<std::string> replaced;
  if (!it->second.tombstone) replaced = std::move(it->second.cell);
  bytes_ -= replaced ? replaced->size() : 0;
  bytes_ += stored.size();
  it->second = Version{lsn, tombstone, std::move(stored)};
  if (bytes != nullptr) *bytes = bytes_;
  return replaced;
}

bool MemTable::Get(Slice key, Entry* out) const {
  MutexLock lock(&mu_);
  auto it = map_.find(std::string_view(key.data(), key.size()));
  if (it == map_.end()) return false;
  AssignEntry(it->first, it->second, out);
  return true;
}

bool MemTable::HasKeyIn(Slice lo, Slice hi) const {
  MutexLock lock(&mu_);
  auto it = map_.lower_bound(std::string_view(lo.data(), lo.size()));
  return it != map_.end() && Slice(it->first).compare(hi) < 0;
}

void MemTable::Collect(Slice from, bool from_start, bool inclusive, bool reverse, size_t max,
                       Slice end, bool has_end, std::vector<Entry>* out) const {
  // Entries are assigned over the old ones (their strings keep their capacity), then trimmed.
  size_t n = 0;
  auto add = [&](const std::string& k, const Version& v) {
    if (n == out->size()) out->emplace_back();
    AssignEntry(k, v, &(*out)[n++]);
  };
  {
    MutexLock lock(&mu_);
    const std::string_view f(from.data(), from.size());
    if (!reverse) {
      auto it = from_start ? map_.begin() : (inclusive ? map_.lower_bound(f) : map_.upper_bound(f));
      for (; it != map_.end() && n < max; ++it) {
        if (has_end && Slice(it->first).compare(end) >= 0) break;
        add(it->first, it->second);
      }
    } else {
      // Backward: start at the last key <= from (or < from when not inclusive).
      auto it = from_start ? map_.end() : (inclusive ? map_.upper_bound(f) : map_.lower_bound(f));
      while (it != map_.begin() && n < max) {
        --it;
        if (has_end && Slice(it->first).compare(end) < 0) break;
        add(it->first, it->second);
      }
    }
  }
  out->resize(n);
}

void MemTable::ValueCells(const std::function<bool(Slice)>& keep,
                          std::vector<std::string>* out) const {
  MutexLock lock(&mu_);
  for (const auto& [k, v] : map_) {
    if (!v.tombstone && keep(v.cell)) out->push_back(v.cell);
  }
}

uint64_t MemTable::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

uint64_t MemTable::entries() const {
  MutexLock lock(&mu_);
  return map_.size();
}

Lsn MemTable::first_lsn() const {
  MutexLock lock(&mu_);
  return first_lsn_;
}

}  // namespace grove::aha
