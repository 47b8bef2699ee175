// CheckpointPacer (engine/checkpoint_pacer.h): it waits for each chunk's share of the budget,
// not at all without a budget, and never again once told to hurry.

#include "engine/checkpoint_pacer.h"

#include <gtest/gtest.h>

#include "util/clock.h"

namespace grove {
namespace {

TEST(CheckpointPacerTest, WithoutABudgetItNeverWaits) {
  CheckpointPacer pacer(NowNanos(), /*budget_nanos=*/0, 100, [] { return false; });
  for (int i = 0; i < 100; ++i) pacer.Before(1);
  EXPECT_EQ(pacer.slept_nanos(), 0u);
  EXPECT_FALSE(pacer.hurried());
}

TEST(CheckpointPacerTest, EachChunkWaitsForItsShareOfTheBudget) {
  const uint64_t start = NowNanos();
  constexpr uint64_t kBudget = 40'000'000;  // 40 ms over 4 chunks
  CheckpointPacer pacer(start, kBudget, 4, [] { return false; });
  pacer.Before(1);  // the first chunk's share starts at 0: it goes at once
  EXPECT_EQ(pacer.slept_nanos(), 0u);
  for (int i = 0; i < 3; ++i) pacer.Before(1);
  // The fourth chunk is not handed out before three quarters of the budget have passed.
  EXPECT_GE(NowNanos() - start, kBudget / 4 * 3);
  EXPECT_GT(pacer.slept_nanos(), 0u);
  EXPECT_FALSE(pacer.hurried());
}

TEST(CheckpointPacerTest, OnceHurriedItStopsWaitingForGood) {
  bool hurry = false;
  int asked = 0;
  CheckpointPacer pacer(NowNanos(), /*budget_nanos=*/3'600'000'000'000, 10, [&] {
    ++asked;
    return hurry;
  });
  pacer.Before(1);
  hurry = true;
  pacer.Before(1);  // due in six minutes: it asks, and goes
  EXPECT_TRUE(pacer.hurried());
  const int asked_then = asked;
  hurry = false;
  for (int i = 0; i < 8; ++i) pacer.Before(1);
  EXPECT_EQ(asked, asked_then) << "no more waiting, so no more asking";
  EXPECT_EQ(pacer.slept_nanos(), 0u);
}

}  // namespace
}  // namespace grove
