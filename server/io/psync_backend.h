#pragma once

// The "psync" backend: pread/pwrite, for machines where io_uring is unavailable (e.g. Docker's
// default seccomp profile). A queue runs a single-op batch inline on the caller's thread. For a
// multi-op batch it runs the first op inline and hands the rest to the backend's worker pool, so
// the reads of one batch overlap the way an io_uring batch does. While the owner waits, it also
// runs ops of its own batch that no worker has started yet.
//
// Completion: workers only record results (status, bytes). An op is marked done, and leaves
// InFlight(), on the queue owner's thread inside Wait, WaitAll or Poll, exactly as with uring.
// So op->done is never written by two threads.
//
// Thread safety: the backend is safe for concurrent use; each queue is used by one thread at a
// time (see grove/io_backend.h).

#include <cstdint>
#include <memory>
#include <string_view>

#include "io/posix_backend.h"
#include "io/worker_pool.h"

namespace grove {

class PsyncBackend final : public PosixBackend {
 public:
  // `threads` == 0 runs every op inline on the submitting thread.
  explicit PsyncBackend(uint32_t threads) : pool_(threads) {}

  std::string_view Name() const override { return "psync"; }
  std::unique_ptr<IoQueue> AcquireQueue() override;

 private:
  WorkerPool pool_;
};

}  // namespace grove
