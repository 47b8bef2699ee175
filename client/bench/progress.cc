#include "bench/progress.h"

#include <algorithm>
#include <cstdio>

namespace grove::bench {

std::string ProgressLine(const std::string& label, double fraction, uint64_t done, double rate,
                         double elapsed) {
  constexpr int kBar = 20;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * kBar);
  std::string bar = "[" + std::string(filled, '#') + std::string(kBar - filled, '.') + "]";
  char buf[160];
  std::snprintf(buf, sizeof(buf), " %3d%%  %llu ops  %.0f ops/s  %.1f s",
                static_cast<int>(fraction * 100), static_cast<unsigned long long>(done), rate,
                elapsed);
  return label + " " + bar + buf;
}

void ProgressBar::Draw(const std::string& label, double fraction, uint64_t done, double rate,
                       double elapsed) {
  const std::string line = ProgressLine(label, fraction, done, rate, elapsed);
  // Pad over the previous line so a shorter one leaves no debris.
  const size_t pad = width_ > line.size() ? width_ - line.size() : 0;
  std::fprintf(stderr, "\r%s%s", line.c_str(), std::string(pad, ' ').c_str());
  std::fflush(stderr);
  width_ = std::max(width_, line.size());
}

void ProgressBar::Clear() {
  if (width_ == 0) return;
  std::fprintf(stderr, "\r%s\r", std::string(width_, ' ').c_str());
  std::fflush(stderr);
  width_ = 0;
}

}  // namespace grove::bench
