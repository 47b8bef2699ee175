#pragma once

// CheckpointPacer: spreads a checkpoint's writes over a time budget (CheckpointOptions::spread, in
// the style of PostgreSQL's checkpoint_completion_target). A checkpoint hands out its images to
// the double-write pass and then to the in-place pass a chunk at a time; before each chunk it asks
// the pacer, which waits until that chunk's share of the budget has passed since the checkpoint
// began (the images handed out before it, over all images of both passes). Once `hurry` says so
// (writers short of room, a caller waiting for the checkpoint, Close) it stops waiting for good.
//
// Thread safety: one checkpointing thread; `hurry` may read anything that is safe to read from it.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "util/clock.h"

namespace grove {

class CheckpointPacer {
 public:
  // `budget_nanos` 0: no pacing at all.
  CheckpointPacer(uint64_t start_nanos, uint64_t budget_nanos, uint64_t total_pages,
                  std::function<bool()> hurry)
      : start_(start_nanos),
        budget_(budget_nanos),
        total_(std::max<uint64_t>(1, total_pages)),
        hurry_(std::move(hurry)) {}

  // `pages` more images are about to be written.
  void Before(uint64_t pages) {
    const uint64_t due =
        start_ + static_cast<uint64_t>(static_cast<double>(budget_) * static_cast<double>(done_) /
                                       static_cast<double>(total_));
    done_ += pages;
    while (budget_ > 0 && !hurried_) {
      const uint64_t now = NowNanos();
      if (now >= due) return;
      if (hurry_()) {
        hurried_ = true;
        return;
      }
      // In slices, so that a writer short of room is noticed within a few milliseconds.
      const uint64_t nap = std::min<uint64_t>(due - now, kSliceNanos);
      std::this_thread::sleep_for(std::chrono::nanoseconds(nap));
      slept_ += nap;
    }
  }

  uint64_t slept_nanos() const { return slept_; }
  bool hurried() const { return hurried_; }

  static constexpr uint64_t kSliceNanos = 5'000'000;

 private:
  const uint64_t start_, budget_, total_;
  const std::function<bool()> hurry_;
  uint64_t done_ = 0, slept_ = 0;
  bool hurried_ = false;
};

}  // namespace grove
