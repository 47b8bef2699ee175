#include "engine/dirty_room.h"

#include <algorithm>

#include <fmt/format.h>

namespace grove {

uint64_t DirtyRoom::Cap() const {
  return static_cast<uint64_t>(share_ * static_cast<double>(pool_.capacity_pages()));
}

uint64_t DirtyRoom::HardCap() const { return std::max(Cap(), pool_.capacity_pages() * 9 / 10); }

uint64_t DirtyRoom::Held() const { return pool_.unevictable_pages() + reserved_.load(); }

bool DirtyRoom::Pressed() const { return waiting_.load() > 0 || Held() * 10 >= Cap() * 9; }

bool DirtyRoom::TryReserve(uint64_t pages, bool extend) {
  MutexLock lock(&mu_);
  if (Held() + pages > (extend ? HardCap() : Cap())) return false;
  reserved_.fetch_add(pages);
  ++grants_;
  return true;
}

Status DirtyRoom::Reserve(uint64_t pages, Clock::time_point give_up) {
  const uint64_t cap = Cap();
  if (pages > cap) {
    return Status::ResourceExhausted(fmt::format(
        "an operation of this size may change up to {} pages, more than the cache can hold "
        "between checkpoints ({} pages of cache_bytes); send smaller values or raise cache_bytes",
        pages, cap));
  }
  // Writes in flight give their room back when they finish; a checkpoint is the way to turn dirty
  // pages into clean ones. A reservation within the cap therefore fits once it is alone after a
  // checkpoint. Others may take the room a checkpoint freed before this writer sees it: that is
  // progress (they were granted room), and the writer tries again, until `give_up`. Only a
  // checkpoint that fails stops it earlier.
  Status s;
  int idle_checkpoints = 0;
  Clock::time_point waiting_since{};
  auto waited = [&] {
    if (waiting_since != Clock::time_point{}) {
      wait_seconds_.Record(std::chrono::duration<double>(Clock::now() - waiting_since).count());
      waiting_.fetch_sub(1);
      waiting_since = Clock::time_point{};
    }
  };
  MutexLock lock(&mu_);
  while (true) {
    if (Held() + pages <= cap) {
      reserved_.fetch_add(pages);
      ++grants_;
      waited();
      return Status::Ok();
    }
    const Clock::time_point now = Clock::now();
    if (waiting_since == Clock::time_point{}) {
      waiting_since = now;
      waits_.fetch_add(1);
      waiting_.fetch_add(1);
    }
    if (now >= give_up) break;
    if (reserved_.load() > 0 || checkpoints_ > 0) {
      // Room is on its way back: both a release and a checkpoint's end signal cv_. The timeout
      // re-reads the pool, whose capacity may grow or whose pages may be dropped meanwhile.
      cv_.WaitFor(std::chrono::milliseconds(20));
      continue;
    }
    if (idle_checkpoints > 0) {
      // The last checkpoint freed nothing for anyone (pages still being written back, or held):
      // let it settle rather than spin checkpoints.
      cv_.WaitFor(std::chrono::milliseconds(std::min(10 * idle_checkpoints, 100)));
      if (Held() + pages <= cap || reserved_.load() > 0 || checkpoints_ > 0) continue;
    }
    const uint64_t grants = grants_;
    ++checkpoints_;
    writer_checkpoints_.fetch_add(1);
    mu_.Unlock();
    s = checkpoint_();
    mu_.Lock();
    --checkpoints_;
    cv_.SignalAll();
    if (!s.ok()) break;
    idle_checkpoints = grants_ == grants ? idle_checkpoints + 1 : 0;
  }
  waited();
  if (!s.ok() && s.IsResourceExhausted()) return s;
  return Status::ResourceExhausted(fmt::format(
      "writes are stalled: no room for {} more dirty pages until a checkpoint completes{}", pages,
      s.ok() ? " (waited as long as the write's deadline allowed)" : " (" + s.ToString() + ")"));
}

void DirtyRoom::Release(uint64_t pages) {
  reserved_.fetch_sub(pages);
  MutexLock lock(&mu_);
  cv_.SignalAll();
}

void DirtyRoom::CheckpointBegins() {
  MutexLock lock(&mu_);
  ++checkpoints_;
}

void DirtyRoom::CheckpointEnds() {
  MutexLock lock(&mu_);
  --checkpoints_;
  cv_.SignalAll();
}

WriteRoomStats DirtyRoom::GetStats() const {
  WriteRoomStats s;
  s.waits = waits_.load();
  s.writer_checkpoints = writer_checkpoints_.load();
  s.wait_seconds = wait_seconds_.Snapshot();
  return s;
}

}  // namespace grove
