#include "io/io_test_util.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace grove::testing {

StatusOr<std::shared_ptr<IoBackend>> MakeBackend(const std::string& name, uint32_t queue_depth) {
  IoBackendOptions options;
  options.kind = name == "uring" ? IoBackendKind::kUring : IoBackendKind::kPsync;
  options.queue_depth = queue_depth;
  return NewIoBackend(options, nullptr);
}

void CapturingLogger::Log(LogLevel level, std::string_view message) {
  MutexLock lock(&mu_);
  lines_.emplace_back(level, std::string(message));
}

std::vector<std::pair<LogLevel, std::string>> CapturingLogger::lines() const {
  MutexLock lock(&mu_);
  return lines_;
}

void FillPattern(uint64_t seed, char* buf, size_t n) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    buf[i] = static_cast<char>(x);
  }
}

std::string Pattern(uint64_t seed, size_t n) {
  std::string s(n, '\0');
  FillPattern(seed, s.data(), n);
  return s;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteWholeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

}  // namespace grove::testing
