#pragma once

// The engine's logging seam. The engine writes one line per event (never per request) through a
// Logger that the embedding program supplies; groved adapts it to spdlog.
//
// Thread safety: implementations must accept concurrent Log() calls.

#include <memory>
#include <string_view>

namespace grove {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void Log(LogLevel level, std::string_view message) = 0;
};

// A logger that writes "<time> <level> <message>" lines to stderr, dropping levels below `min`.
std::shared_ptr<Logger> NewStderrLogger(LogLevel min = LogLevel::kInfo);

// A logger that discards everything (tests that want quiet output).
std::shared_ptr<Logger> NewNullLogger();

}  // namespace grove
