#include "service/logging.h"

#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

namespace grove::service {
namespace {

struct Captured {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> logger;
};

std::unique_ptr<Captured> Capture(config::LogFormat format, LogLevel level = LogLevel::kInfo) {
  auto c = std::make_unique<Captured>();
  config::LoggingConfig lc;
  lc.format = format;
  lc.level = level;
  c->logger = MakeLogger(lc, "groved", std::make_shared<spdlog::sinks::ostream_sink_st>(c->out));
  return c;
}

TEST(LoggingTest, TextLine) {
  auto c = Capture(config::LogFormat::kText);
  c->logger->info("hello {}", 42);
  const std::string line = c->out.str();
  EXPECT_NE(line.find(" info groved: hello 42\n"), std::string::npos) << line;
  EXPECT_EQ(line[4], '-') << "ISO date first: " << line;
  EXPECT_NE(line.find("Z info"), std::string::npos) << "UTC: " << line;
}

TEST(LoggingTest, JsonLineEscapesTheMessage) {
  auto c = Capture(config::LogFormat::kJson);
  c->logger->warn("say \"hi\"\\ path\nnext\x01");
  const std::string line = c->out.str();
  EXPECT_EQ(line.front(), '{');
  EXPECT_NE(line.find(R"("level":"warning")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("logger":"groved")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("msg":"say \"hi\"\\ path\nnext\u0001"})"), std::string::npos) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << "one line per event";
}

TEST(LoggingTest, LevelFilters) {
  auto c = Capture(config::LogFormat::kText, LogLevel::kWarn);
  c->logger->info("quiet");
  c->logger->error("loud");
  EXPECT_EQ(c->out.str().find("quiet"), std::string::npos);
  EXPECT_NE(c->out.str().find("loud"), std::string::npos);
}

TEST(LoggingTest, EngineLoggerAdapter) {
  auto c = Capture(config::LogFormat::kText, LogLevel::kDebug);
  SpdlogLogger engine_log(c->logger);
  engine_log.Log(LogLevel::kDebug, "d");
  engine_log.Log(LogLevel::kInfo, "checkpoint 3 done");
  engine_log.Log(LogLevel::kWarn, "w");
  engine_log.Log(LogLevel::kError, "e");
  const std::string out = c->out.str();
  EXPECT_NE(out.find(" debug groved: d\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" info groved: checkpoint 3 done\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" warning groved: w\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" error groved: e\n"), std::string::npos) << out;
}

TEST(LoggingTest, BracesInEngineMessagesAreNotFormatted) {
  auto c = Capture(config::LogFormat::kText);
  SpdlogLogger(c->logger).Log(LogLevel::kInfo, "params {fanout}");
  EXPECT_NE(c->out.str().find("params {fanout}"), std::string::npos) << c->out.str();
}

}  // namespace
}  // namespace grove::service
