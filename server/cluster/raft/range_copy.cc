#include "cluster/raft/range_copy.h"

#include <chrono>

namespace grove::raft {

Status RangeCopier::Begin() {
  MutexLock lock(&mu_);
  if (active_) return Status::FailedPrecondition("range copy: one is running already");
  active_ = true;
  copy_end_ = end_;
  passed_any_ = false;
  cursor_.clear();
  saved_.clear();
  return Status::Ok();
}

void RangeCopier::End() {
  MutexLock lock(&mu_);
  active_ = false;
  saved_.clear();
}

void RangeCopier::Narrow(std::string end) {
  MutexLock lock(&mu_);
  end_ = std::move(end);
}

bool RangeCopier::active() {
  MutexLock lock(&mu_);
  return active_;
}

Status RangeCopier::Preserve(const std::vector<Slice>& keys) {
  MutexLock lock(&mu_);
  if (!active_) return Status::Ok();
  for (Slice key : keys) {
    if (!InRange(key) || !Ahead(key) || saved_.find(key) != saved_.end()) continue;
    // Read under mu_: the copy cannot pass the key between this read and the save.
    std::string value;
    ValueMeta meta;
    GROVE_ASSIGN_OR_RETURN(const bool found, db_->GetWithMeta(key, &value, &meta));
    std::optional<Saved> state;
    if (found) state = Saved{std::move(value), meta.expires_ms, meta.version};
    saved_.emplace(std::string(key), std::move(state));
  }
  return Status::Ok();
}

Status RangeCopier::Run(const RangeSink& sink) {
  ScanOptions scan;
  scan.lower = start_;
  {
    MutexLock lock(&mu_);
    scan.upper = copy_end_;
  }
  scan.has_upper = !scan.upper.empty();
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, db_->NewIterator(scan));
  std::string key, value;
  while (true) {
    const bool more = it->Valid();
    if (more) {
      key.assign(it->key());
      value.assign(it->value());
    }
    const uint64_t expires = more ? it->expires_ms() : 0;
    const uint64_t version = more ? it->version() : 0;
    // Decided under mu_, handed to the sink outside it (the sink may be slow: a network).
    std::string out_key;
    Saved out;
    bool emit = false, advance = false, done = false;
    {
      MutexLock lock(&mu_);
      // The first saved key the copy has not passed: before the iterator's, it goes first.
      auto next = passed_any_ ? saved_.upper_bound(cursor_) : saved_.begin();
      if (next != saved_.end() && (!more || Slice(next->first) < Slice(key))) {
        out_key = next->first;
        if (next->second) {
          emit = true;
          out = *next->second;
        }
      } else if (more) {
        out_key = key;
        advance = true;
        auto saved = saved_.find(key);
        if (saved == saved_.end()) {
          emit = true;
          out = Saved{value, expires, version};
        } else if (saved->second) {
          emit = true;
          out = *saved->second;
        }
      } else {
        done = true;
      }
      if (!done) {
        cursor_ = out_key;
        passed_any_ = true;
        // Passed: no writer saves it again, and the copy does not need it any more.
        saved_.erase(out_key);
      }
    }
    if (done) break;
    if (emit) GROVE_RETURN_IF_ERROR(sink({out_key, out.value, out.expires_ms, out.version}));
    if (advance) it->Next();
  }
  return it->status();
}

}  // namespace grove::raft
