#pragma once

// groved's logging: spdlog to stderr, one line per event, as text or as JSON objects
// ({"time":...,"level":...,"msg":...}), in UTC. SpdlogLogger adapts it to grove::Logger so that the
// engine's events land in the same stream.

#include <memory>
#include <string_view>

#include <spdlog/logger.h>

#include "grove/logger.h"

#include "config/config.h"

namespace grove::service {

// A new stderr logger named `name` (not registered in spdlog's global registry).
std::shared_ptr<spdlog::logger> MakeLogger(const config::LoggingConfig& config,
                                           std::string_view name = "groved");

// The same, writing to `sink` (tests capture output this way).
std::shared_ptr<spdlog::logger> MakeLogger(const config::LoggingConfig& config,
                                           std::string_view name, spdlog::sink_ptr sink);

class SpdlogLogger final : public Logger {
 public:
  explicit SpdlogLogger(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
  void Log(LogLevel level, std::string_view message) override;

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace grove::service
