#pragma once

// The open Db, shared by the KV handlers, the metrics scrape and the server lifecycle.
//
//   (empty) --Set()--> open --Close()--> closed
//
// Handlers reach the engine through a Lease, held for the whole call. Close() unpublishes the
// engine first, so that new leases find none, then waits until every lease taken before that is
// released, and only then closes and destroys it. The server closes the engine after gRPC's
// Shutdown() has returned, when no handler runs any more, so the wait is normally empty; the
// lease makes the guarantee ours rather than gRPC's (and visible to ThreadSanitizer, which cannot
// see the synchronisation inside the uninstrumented gRPC libraries). A scrape can arrive at any
// time, so Stats() and Close() serialise on a mutex.
//
// Thread safety: all methods may be called concurrently.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "grove/db.h"

#include "util/mutex.h"

namespace grove::service {

class EngineHandle {
 public:
  // Publishes an open engine.
  void Set(std::unique_ptr<Db> db) GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    owned_ = std::move(db);
    db_.store(owned_.get(), std::memory_order_release);
  }

  // One handler's use of the engine: db() stays valid until the lease is destroyed.
  class Lease {
   public:
    explicit Lease(EngineHandle* handle) : handle_(handle) {
      // Counted before the pointer is read; Close() clears the pointer before it reads the
      // count. Both sequentially consistent: either this lease sees null or Close() sees it.
      handle_->leases_.fetch_add(1, std::memory_order_seq_cst);
      db_ = handle_->db_.load(std::memory_order_seq_cst);
    }
    ~Lease() { handle_->leases_.fetch_sub(1, std::memory_order_release); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    // The engine, or null before Set() and after Close() began.
    Db* db() const { return db_; }

   private:
    EngineHandle* const handle_;
    Db* db_ = nullptr;
  };

  // A stats snapshot, or nullopt while no engine is open.
  std::optional<DbStats> Stats() GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (owned_ == nullptr) return std::nullopt;
    return owned_->GetStats();
  }

  // Closes the engine (final checkpoint). OK when none was open.
  Status Close() GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (owned_ == nullptr) return Status::Ok();
    db_.store(nullptr, std::memory_order_seq_cst);
    while (leases_.load(std::memory_order_acquire) != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Status s = owned_->Close();
    owned_.reset();
    return s;
  }

 private:
  Mutex mu_;
  std::unique_ptr<Db> owned_ GROVE_GUARDED_BY(mu_);
  std::atomic<Db*> db_{nullptr};
  std::atomic<uint64_t> leases_{0};
};

}  // namespace grove::service
