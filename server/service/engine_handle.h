#pragma once

// The open Db, shared by the KV handlers, the metrics scrape and the server lifecycle.
//
//   (empty) --Set()--> open --Close()--> closed
//
// Handlers call db() without locking: the server publishes the Db before it reports SERVING and
// closes it only after gRPC's Shutdown() has returned, when no handler runs any more. A scrape can
// arrive at any time, so Stats() and Close() serialise on a mutex.
//
// Thread safety: all methods may be called concurrently.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "grove/db.h"

namespace grove::service {

class EngineHandle {
 public:
  // Publishes an open engine.
  void Set(std::unique_ptr<Db> db) {
    std::lock_guard<std::mutex> lock(mu_);
    owned_ = std::move(db);
    db_.store(owned_.get(), std::memory_order_release);
  }

  // The engine, or null before Set() and after Close().
  Db* db() const { return db_.load(std::memory_order_acquire); }

  // A stats snapshot, or nullopt while no engine is open.
  std::optional<DbStats> Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    if (owned_ == nullptr) return std::nullopt;
    return owned_->GetStats();
  }

  // Closes the engine (final checkpoint). OK when none was open.
  Status Close() {
    std::lock_guard<std::mutex> lock(mu_);
    if (owned_ == nullptr) return Status::Ok();
    db_.store(nullptr, std::memory_order_release);
    Status s = owned_->Close();
    owned_.reset();
    return s;
  }

 private:
  // std::mutex: util/mutex.h's annotation macros collide with absl's (pulled in by gRPC).
  std::mutex mu_;
  std::unique_ptr<Db> owned_;  // guarded by mu_
  std::atomic<Db*> db_{nullptr};
};

}  // namespace grove::service
