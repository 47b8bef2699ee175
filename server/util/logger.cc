#include "grove/logger.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "util/mutex.h"

namespace grove {
namespace {

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

class StderrLogger final : public Logger {
 public:
  explicit StderrLogger(LogLevel min) : min_(min) {}
  void Log(LogLevel level, std::string_view message) override {
    if (level < min_) return;
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    MutexLock lock(&mu_);
    std::fprintf(stderr, "%s %s %.*s\n", stamp, LevelName(level), static_cast<int>(message.size()),
                 message.data());
  }

 private:
  const LogLevel min_;
  Mutex mu_;  // one line at a time
};

class NullLogger final : public Logger {
 public:
  void Log(LogLevel, std::string_view) override {}
};

}  // namespace

std::shared_ptr<Logger> NewStderrLogger(LogLevel min) {
  return std::make_shared<StderrLogger>(min);
}
std::shared_ptr<Logger> NewNullLogger() { return std::make_shared<NullLogger>(); }

}  // namespace grove
