#include "service/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace grove::service {
namespace {

// %* in the JSON pattern: the message with JSON string escaping.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      switch (c) {
        case '"':
          Append(dest, "\\\"");
          break;
        case '\\':
          Append(dest, "\\\\");
          break;
        case '\n':
          Append(dest, "\\n");
          break;
        case '\r':
          Append(dest, "\\r");
          break;
        case '\t':
          Append(dest, "\\t");
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            const char esc[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 15], kHex[c & 15]};
            dest.append(esc, esc + sizeof(esc));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }

 private:
  static void Append(spdlog::memory_buf_t& dest, std::string_view s) {
    dest.append(s.data(), s.data() + s.size());
  }
};

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

std::shared_ptr<spdlog::logger> MakeLogger(const config::LoggingConfig& config,
                                           std::string_view name, spdlog::sink_ptr sink) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (config.format == config::LogFormat::kJson) {
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":"%*"})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %n: %v");
  }
  sink->set_formatter(std::move(formatter));
  auto logger = std::make_shared<spdlog::logger>(std::string(name), std::move(sink));
  logger->set_level(ToSpdlog(config.level));
  // Warnings and errors reach the terminal at once even when stderr is a pipe.
  logger->flush_on(spdlog::level::warn);
  return logger;
}

std::shared_ptr<spdlog::logger> MakeLogger(const config::LoggingConfig& config,
                                           std::string_view name) {
  return MakeLogger(config, name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

void SpdlogLogger::Log(LogLevel level, std::string_view message) {
  logger_->log(ToSpdlog(level), "{}", message);
}

}  // namespace grove::service
