#include "grove/io_backend.h"

#include <string>

#include "io/psync_backend.h"
#include "io/uring_backend.h"

namespace grove {
namespace {

// IORING_MAX_ENTRIES: the kernel refuses larger rings with EINVAL, which kAuto would otherwise
// misread as "io_uring unavailable".
constexpr uint32_t kMaxQueueDepth = 32768;
constexpr uint32_t kMaxPsyncThreads = 1024;

void LogTo(Logger* logger, LogLevel level, const std::string& message) {
  if (logger != nullptr) logger->Log(level, message);
}

std::shared_ptr<IoBackend> MakePsync(const IoBackendOptions& options) {
  return std::make_shared<PsyncBackend>(options.psync_threads);
}

}  // namespace

void IoBackend::RunBatch(IoOp* const* ops, size_t n) {
  if (n == 0) return;
  std::unique_ptr<IoQueue> queue = AcquireQueue();
  for (size_t i = 0; i < n; ++i) queue->Push(ops[i]);
  queue->Submit();
  queue->WaitAll();
}

StatusOr<std::shared_ptr<IoBackend>> NewIoBackend(const IoBackendOptions& options, Logger* logger) {
  if (options.queue_depth == 0 || options.queue_depth > kMaxQueueDepth) {
    return Status::InvalidArgument("io backend: queue_depth must be in [1, " +
                                   std::to_string(kMaxQueueDepth) + "], got " +
                                   std::to_string(options.queue_depth));
  }
  if (options.psync_threads > kMaxPsyncThreads) {
    return Status::InvalidArgument("io backend: psync_threads must be at most " +
                                   std::to_string(kMaxPsyncThreads) + ", got " +
                                   std::to_string(options.psync_threads));
  }

  switch (options.kind) {
    case IoBackendKind::kPsync:
      LogTo(logger, LogLevel::kInfo,
            "io backend: psync (configured, " + std::to_string(options.psync_threads) +
                " worker threads)");
      return MakePsync(options);

    case IoBackendKind::kUring:
    case IoBackendKind::kAuto: {
      StatusOr<std::shared_ptr<UringBackend>> uring = UringBackend::Create(options.queue_depth);
      if (uring.ok()) {
        LogTo(logger, LogLevel::kInfo,
              "io backend: uring (queue depth " + std::to_string((*uring)->ring_entries()) + ")");
        return std::shared_ptr<IoBackend>(std::move(uring).value());
      }
      if (options.kind == IoBackendKind::kUring) {
        return uring.status().WithContext("io backend uring (configured explicitly)");
      }
      LogTo(logger, LogLevel::kWarn,
            "io backend: psync (io_uring unavailable: " + std::string(uring.status().message()) +
                ")");
      return MakePsync(options);
    }
  }
  return Status::InvalidArgument("io backend: unknown kind");
}

}  // namespace grove
