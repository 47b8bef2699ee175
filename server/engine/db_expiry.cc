// DbImpl: the expiry sweep, which removes keys whose value has expired.
//
// Expired values are invisible from their expiry on (ResolveCell); the sweep only reclaims their
// space. It walks the key space in chunks of entries, at most expiry.sweep_keys_per_second of
// them, and removes the expired ones of each chunk with one logged batch of deletes. Each delete
// is decided again with the key's stripe held: a key written since the chunk was read (a new
// version) stays. A delete lost in a crash is found again by a later sweep.
//
// Sweeps run while the database may hold values with an expiry (may_hold_expiring_, kept in the
// manifest): set by every expiring put, cleared by a whole sweep that met none while no expiring
// put was applied.

#include <algorithm>

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "util/clock.h"

namespace grove {
namespace {

constexpr uint64_t kSweepChunk = 512;  // entries read per cursor, then the cursor is dropped

}  // namespace

void DbImpl::StartExpirySweeper() {
  if (options_.expiry.sweep_interval_seconds <= 0) return;
  expiry_thread_ = std::thread([this] { ExpiryLoop(); });
}

void DbImpl::StopExpirySweeper() {
  {
    MutexLock lock(&expiry_mu_);
    expiry_stop_ = true;
    expiry_cv_.SignalAll();
  }
  if (expiry_thread_.joinable()) expiry_thread_.join();
}

bool DbImpl::ExpiryStopping() {
  MutexLock lock(&expiry_mu_);
  return expiry_stop_;
}

void DbImpl::ExpiryLoop() {
  const auto interval = std::chrono::milliseconds(
      static_cast<int64_t>(options_.expiry.sweep_interval_seconds * 1000));
  uint64_t failures_logged = 0;
  for (bool first = true;; first = false) {
    {
      // A reopened database that may hold expiring values is swept at once; otherwise one
      // interval passes between sweeps (and after the first expiring put).
      MutexLock lock(&expiry_mu_);
      if ((!first || !may_hold_expiring_.load()) && !expiry_stop_) expiry_cv_.WaitFor(interval);
      if (expiry_stop_) return;
    }
    if (!may_hold_expiring_.load()) continue;
    if (failed_.load() || closed_.load()) continue;
    Status s = SweepExpired();
    if (!s.ok() && !ExpiryStopping()) {
      if (failures_logged++ % 100 == 0) {
        logger_->Log(LogLevel::kWarn, "expiry sweep stopped early: " + s.ToString());
      }
    }
  }
}

Status DbImpl::SweepExpired() {
  uint64_t puts_before = 0;
  {
    MutexLock lock(&expiry_flag_mu_);
    puts_before = expiring_puts_;
  }
  const uint64_t started = NowNanos();
  uint64_t examined = 0, expiring = 0;
  std::string from;  // the next sweep position (empty: the first key)
  for (;;) {
    if (ExpiryStopping()) return Status::Aborted("closing");
    std::vector<std::pair<std::string, uint64_t>> expired;  // key, version
    bool more = false;
    {
      CursorOptions c;
      c.lower = from;
      c.expected_entries = kSweepChunk;
      GROVE_ASSIGN_OR_RETURN(auto cursor, index_->NewCursor(c));
      const uint64_t now = NowUnixMillis();
      uint64_t n = 0;
      for (; cursor->Valid() && n < kSweepChunk; cursor->Next(), ++n) {
        CellView view;
        if (!ParseCell(cursor->cell(), &view) || view.meta.expires_ms == 0) continue;
        ++expiring;
        if (view.meta.Expired(now))
          expired.emplace_back(std::string(cursor->key()), view.meta.version);
      }
      GROVE_RETURN_IF_ERROR(cursor->status());
      examined += n;
      more = cursor->Valid();
      if (more) from = std::string(cursor->key());
    }
    if (!expired.empty()) GROVE_RETURN_IF_ERROR(RemoveExpired(expired));
    if (!more) break;
    // Pace the walk: `examined` entries may take examined / rate seconds at the soonest.
    const double due =
        static_cast<double>(examined) / static_cast<double>(options_.expiry.sweep_keys_per_second);
    const double spent = static_cast<double>(NowNanos() - started) * 1e-9;
    if (due > spent) {
      MutexLock lock(&expiry_mu_);
      if (!expiry_stop_) {
        expiry_cv_.WaitFor(std::chrono::microseconds(static_cast<int64_t>((due - spent) * 1e6)));
      }
    }
  }
  expiry_sweeps_.fetch_add(1, std::memory_order_relaxed);
  // Nothing with an expiry is left, and nothing with one arrived behind the sweep's back (a put
  // counts itself only once its cell is in the index, under the same mutex).
  MutexLock lock(&expiry_flag_mu_);
  if (expiring == 0 && expiring_puts_ == puts_before) may_hold_expiring_ = false;
  return Status::Ok();
}

Status DbImpl::RemoveExpired(const std::vector<std::pair<std::string, uint64_t>>& expired) {
  std::vector<Slice> keys;
  keys.reserve(expired.size());
  for (const auto& e : expired) keys.emplace_back(e.first);
  for (Slice key : keys) GROVE_RETURN_IF_ERROR(index_->Prepare(key));
  const std::vector<uint32_t> stripes = KeyLocks::StripesOf(keys);
  key_locks_.Lock(stripes);
  // Decided again under the locks: only a key still at the expired version goes.
  WriteBatch batch;
  Status s = [&]() -> Status {
    const uint64_t now = NowUnixMillis();
    std::string cell;
    for (const auto& [key, version] : expired) {
      GROVE_ASSIGN_OR_RETURN(const bool found, index_->Get(key, &cell));
      CellView view;
      if (!found || !ParseCell(cell, &view)) continue;
      if (view.meta.version == version && view.meta.Expired(now)) batch.Delete(key);
    }
    if (batch.Count() == 0) return Status::Ok();
    const BatchPages need = PagesNeeded(batch);
    const bool stepwise = need.total > dirty_room_->Cap() / 4;
    Lsn lsn = 0;
    return LogAndApply(batch, stepwise, stepwise ? need.first : need.total,
                       Clock::now() + std::chrono::seconds(2), &lsn);
  }();
  key_locks_.Unlock(stripes);
  GROVE_RETURN_IF_ERROR(s);
  expired_removed_.fetch_add(batch.Count(), std::memory_order_relaxed);
  MaybeScheduleCheckpoint();
  return Status::Ok();
}

}  // namespace grove
