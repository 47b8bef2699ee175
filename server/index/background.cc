#include "index/background.h"

#include "util/clock.h"

namespace grove {

void BackgroundThread::Start(std::chrono::milliseconds idle, std::function<bool()> round) {
  thread_ = std::thread([this, idle, round = std::move(round)] { Loop(idle, round); });
}

void BackgroundThread::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kick_ = true;
  }
  wake_cv_.notify_all();
}

void BackgroundThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  round_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool BackgroundThread::WaitForRound(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) return false;
  round_cv_.wait_for(lock, timeout);
  return !stop_;
}

void BackgroundThread::Pause(std::chrono::milliseconds pause) {
  std::unique_lock<std::mutex> lock(mu_);
  wake_cv_.wait_for(lock, pause, [&] { return stop_; });
}

void BackgroundThread::Loop(std::chrono::milliseconds idle, const std::function<bool()>& round) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!stop_ && !kick_) wake_cv_.wait_for(lock, idle);
      if (stop_) return;
      kick_ = false;
    }
    const bool more = round();
    round_cv_.notify_all();
    if (more) {
      std::lock_guard<std::mutex> lock(mu_);
      kick_ = true;
    }
  }
}

bool LogThrottle::Allow() {
  const uint64_t now = NowNanos() / 1000;
  uint64_t last = last_us_.load(std::memory_order_relaxed);
  return (last == 0 || now >= last + period_us_) && last_us_.compare_exchange_strong(last, now);
}

}  // namespace grove
