#pragma once

// The "uring" backend: IoQueues on io_uring (liburing). The backend owns a pool of idle rings.
// AcquireQueue() leases one (setting up a new ring only when the pool is empty), and the queue's
// destructor waits for its ops and returns the ring, so a thread pays for io_uring_setup once per
// peak concurrent queue, not once per batch. A ring is never used by two threads at once.
//
// Files are PosixFiles (synchronous calls stay plain system calls; only queue IO uses the ring).
//
// Thread safety: the backend is safe for concurrent use; each queue by one thread at a time.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "io/posix_backend.h"
#include "util/mutex.h"

namespace grove {

class UringRing;

class UringBackend final : public PosixBackend {
 public:
  // Sets up one ring of `queue_depth` entries to prove io_uring works here (it stays in the pool).
  // Fails with the errno of io_uring_queue_init, e.g. EPERM or ENOSYS under seccomp.
  static StatusOr<std::shared_ptr<UringBackend>> Create(uint32_t queue_depth);

  ~UringBackend() override;

  std::string_view Name() const override { return "uring"; }
  std::unique_ptr<IoQueue> AcquireQueue() override;

  // Submission-queue entries per ring, as the kernel set them up (a power of two >= queue_depth).
  uint32_t ring_entries() const { return ring_entries_; }

  // Called by a queue's destructor with its (idle, healthy) ring.
  void ReturnRing(std::unique_ptr<UringRing> ring) GROVE_EXCLUDES(mu_);

 private:
  UringBackend(uint32_t queue_depth, std::unique_ptr<UringRing> first);

  const uint32_t queue_depth_;
  const uint32_t ring_entries_;
  Mutex mu_;
  std::vector<std::unique_ptr<UringRing>> idle_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove
