#pragma once

// A one-line progress bar on stderr, redrawn in place with '\r':
//
//   c zipfian(0.99) [##########..........]  50%  1234567 ops  45678 ops/s  12.3 s
//
// The runner enables it only when stderr is a terminal, so logs and pipes never see it.
//
// Thread safety: one thread draws (the runner's monitor).

#include <cstddef>
#include <cstdint>
#include <string>

namespace grove::bench {

// The text of one line; `fraction` is clamped to [0, 1].
std::string ProgressLine(const std::string& label, double fraction, uint64_t done, double rate,
                         double elapsed);

class ProgressBar {
 public:
  void Draw(const std::string& label, double fraction, uint64_t done, double rate, double elapsed);
  // Erases the line, if one was drawn.
  void Clear();

 private:
  size_t width_ = 0;
};

}  // namespace grove::bench
