#include "index/background.h"

#include "util/clock.h"

namespace grove {

void BackgroundThread::Start(std::chrono::milliseconds idle, std::function<bool()> round) {
  thread_ = std::thread([this, idle, round = std::move(round)] { Loop(idle, round); });
}

void BackgroundThread::Kick() {
  {
    MutexLock lock(&mu_);
    kick_ = true;
  }
  wake_cv_.SignalAll();
}

void BackgroundThread::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_cv_.SignalAll();
  round_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

bool BackgroundThread::WaitForRound(std::chrono::milliseconds timeout) {
  MutexLock lock(&mu_);
  if (stop_) return false;
  round_cv_.WaitFor(timeout);
  return !stop_;
}

void BackgroundThread::Pause(std::chrono::milliseconds pause) {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + pause;
  while (!stop_ && wake_cv_.WaitUntil(deadline)) {
  }
}

void BackgroundThread::Loop(std::chrono::milliseconds idle, const std::function<bool()>& round) {
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (!stop_ && !kick_) wake_cv_.WaitFor(idle);
      if (stop_) return;
      kick_ = false;
    }
    const bool more = round();
    round_cv_.SignalAll();
    if (more) {
      MutexLock lock(&mu_);
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
