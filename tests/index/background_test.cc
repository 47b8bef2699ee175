// BackgroundThread: rounds run when kicked and after the idle period, back to back while they
// report more work, writers can wait for a round's end, and Stop ends the loop and wakes
// waiters. LogThrottle: one warning per period.

#include "index/background.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace grove {
namespace {

using std::chrono::milliseconds;

TEST(BackgroundThreadTest, KickedRoundsAndBackToBackRoundsWhileThereIsMoreWork) {
  std::atomic<int> rounds{0};
  std::atomic<int> more{0};  // rounds still to report more work
  BackgroundThread bg;
  // An idle period far beyond the test: every round here is kicked or follows one with more.
  bg.Start(milliseconds(60000), [&] {
    rounds.fetch_add(1);
    if (more.load() > 0) {
      more.fetch_sub(1);
      return true;
    }
    return false;
  });
  bg.Kick();
  for (int i = 0; i < 2000 && rounds.load() < 1; ++i) bg.WaitForRound(milliseconds(5));
  EXPECT_GE(rounds.load(), 1);
  // Five rounds with more work after a kick: six rounds in a row without further kicks.
  const int before = rounds.load();
  more = 5;
  bg.Kick();
  for (int i = 0; i < 2000 && rounds.load() < before + 6; ++i) bg.WaitForRound(milliseconds(5));
  EXPECT_EQ(rounds.load(), before + 6);
  EXPECT_EQ(more.load(), 0);
  bg.Stop();
  EXPECT_FALSE(bg.WaitForRound(milliseconds(1000))) << "a stopped thread has no rounds to wait for";
  const int after = rounds.load();
  bg.Kick();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(rounds.load(), after) << "no round after Stop";
}

TEST(BackgroundThreadTest, IdleRoundsWithoutKicks) {
  std::atomic<int> rounds{0};
  BackgroundThread bg;
  bg.Start(milliseconds(2), [&] {
    rounds.fetch_add(1);
    return false;
  });
  for (int i = 0; i < 2000 && rounds.load() < 3; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GE(rounds.load(), 3);
}  // the destructor stops and joins

TEST(BackgroundThreadTest, StopWakesAWaiterAndAPause) {
  BackgroundThread bg;
  bg.Start(milliseconds(60000), [&] {
    bg.Pause(milliseconds(60000));  // a failed round pausing: Stop must cut it short
    return false;
  });
  bg.Kick();
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    while (bg.WaitForRound(milliseconds(60000))) {
    }
    woke = true;
  });
  std::this_thread::sleep_for(milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  bg.Stop();
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(LogThrottleTest, OnePerPeriod) {
  LogThrottle t(std::chrono::hours(1));
  EXPECT_TRUE(t.Allow());
  EXPECT_FALSE(t.Allow());
  EXPECT_FALSE(t.Allow());
  LogThrottle fast(std::chrono::microseconds(1));
  EXPECT_TRUE(fast.Allow());
  std::this_thread::sleep_for(milliseconds(2));
  EXPECT_TRUE(fast.Allow());
}

}  // namespace
}  // namespace grove
