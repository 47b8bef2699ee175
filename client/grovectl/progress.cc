#include "grovectl/progress.h"

#include <algorithm>
#include <cstdio>

namespace grove::grovectl {

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string ProgressLine(uint64_t records, uint64_t bytes, uint64_t total_bytes, double seconds) {
  std::string line;
  if (total_bytes > 0) {
    const double fraction = std::min(1.0, static_cast<double>(bytes) / total_bytes);
    constexpr int kWidth = 20;
    const int filled = static_cast<int>(fraction * kWidth);
    line = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
    char pct[8];
    std::snprintf(pct, sizeof(pct), "%3d%%", static_cast<int>(fraction * 100));
    line += pct;
    line += "  ";
  }
  const double rate = seconds > 0 ? records / seconds : 0;
  char rest[96];
  std::snprintf(rest, sizeof(rest), "%llu records  %s  %.0f records/s",
                static_cast<unsigned long long>(records), HumanBytes(bytes).c_str(), rate);
  return line + rest;
}

Progress::Progress(std::ostream& out, bool enabled, uint64_t total_bytes)
    : out_(out), enabled_(enabled), total_bytes_(total_bytes) {}

void Progress::Update(uint64_t records, uint64_t bytes) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const std::string line = ProgressLine(records, bytes, total_bytes_,
                                        std::chrono::duration<double>(now - start_).count());
  // Pad over a longer previous line.
  out_ << "\r" << line
       << std::string(last_width_ > line.size() ? last_width_ - line.size() : 0, ' ') << std::flush;
  last_width_ = line.size();
}

void Progress::Finish() {
  if (!enabled_ || last_width_ == 0) return;
  out_ << "\r" << std::string(last_width_, ' ') << "\r" << std::flush;
}

}  // namespace grove::grovectl
