#pragma once

// A one-line progress bar on a terminal ("\r" redraws), at most ten updates a second.
//
//   [##########..........]  50%  500000 records  48.8 MiB  81234 records/s
//
// Without a known total (standard input) the bar and the percentage are left out.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace grove::grovectl {

// The line for `records` loaded and `bytes` of `total_bytes` read (0: unknown) after `seconds`.
std::string ProgressLine(uint64_t records, uint64_t bytes, uint64_t total_bytes, double seconds);

// "48.8 MiB"
std::string HumanBytes(uint64_t bytes);

class Progress {
 public:
  Progress(std::ostream& out, bool enabled, uint64_t total_bytes);
  void Update(uint64_t records, uint64_t bytes);
  // Clears the line so that the summary starts clean.
  void Finish();

 private:
  std::ostream& out_;
  const bool enabled_;
  const uint64_t total_bytes_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  size_t last_width_ = 0;
};

}  // namespace grove::grovectl
