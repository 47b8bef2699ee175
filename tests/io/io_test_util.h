#pragma once

// Helpers shared by the IO tests: backends by name, a log-capturing Logger, byte patterns.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grove/io_backend.h"
#include "grove/logger.h"

#include "util/mutex.h"

namespace grove::testing {

// Ring entries for uring backends in tests: small, so batches overflow the ring.
inline constexpr uint32_t kTestQueueDepth = 8;

// "uring" or "psync". For "uring", a non-OK status means io_uring cannot be set up on this
// machine; tests then skip with that status in the message.
StatusOr<std::shared_ptr<IoBackend>> MakeBackend(const std::string& name,
                                                 uint32_t queue_depth = kTestQueueDepth);

// The backends that parameterised tests run on.
inline std::vector<std::string> BackendNames() { return {"uring", "psync"}; }

class CapturingLogger final : public Logger {
 public:
  void Log(LogLevel level, std::string_view message) override;
  std::vector<std::pair<LogLevel, std::string>> lines() const;

 private:
  mutable Mutex mu_;
  std::vector<std::pair<LogLevel, std::string>> lines_ GROVE_GUARDED_BY(mu_);
};

// `n` bytes whose content depends on `seed` and the position, so misplaced data is caught.
std::string Pattern(uint64_t seed, size_t n);
void FillPattern(uint64_t seed, char* buf, size_t n);

// Reads the whole file at `path` with plain stdio (bypassing every backend), or "" if missing.
std::string ReadWholeFile(const std::string& path);
// Writes `data` as the whole file at `path` (plain stdio).
void WriteWholeFile(const std::string& path, const std::string& data);

}  // namespace grove::testing
