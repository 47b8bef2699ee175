#include "io/uring_backend.h"

#include <utility>

#include "io/uring_queue.h"

namespace grove {

StatusOr<std::shared_ptr<UringBackend>> UringBackend::Create(uint32_t queue_depth) {
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<UringRing> first, UringRing::Create(queue_depth));
  return std::shared_ptr<UringBackend>(new UringBackend(queue_depth, std::move(first)));
}

UringBackend::UringBackend(uint32_t queue_depth, std::unique_ptr<UringRing> first)
    : queue_depth_(queue_depth), ring_entries_(first->sq_entries()) {
  idle_.push_back(std::move(first));
}

UringBackend::~UringBackend() = default;

std::unique_ptr<IoQueue> UringBackend::AcquireQueue() {
  std::unique_ptr<UringRing> ring;
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      ring = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  Status setup_error;
  if (ring == nullptr) {
    // A ring set-up failure here (fd or memory limits) cannot be returned through this signature;
    // the queue carries it to every op instead.
    StatusOr<std::unique_ptr<UringRing>> made = UringRing::Create(queue_depth_);
    if (made.ok()) {
      ring = std::move(made).value();
    } else {
      setup_error = made.status();
    }
  }
  return std::make_unique<UringQueue>(this, std::move(ring), std::move(setup_error));
}

void UringBackend::ReturnRing(std::unique_ptr<UringRing> ring) {
  MutexLock lock(&mu_);
  idle_.push_back(std::move(ring));
}

}  // namespace grove
