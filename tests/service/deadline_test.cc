#include "service/deadline.h"

#include <gtest/gtest.h>

namespace grove::service {
namespace {

using std::chrono::seconds;

TEST(DeadlineTest, NoClientDeadlineGetsTheDefault) {
  const Clock::time_point now = Clock::now();
  DeadlinePolicy p{seconds(60), seconds(10)};
  EXPECT_EQ(EffectiveDeadline(Clock::time_point::max(), now, p), now + seconds(10));
}

TEST(DeadlineTest, LongClientDeadlineIsCapped) {
  const Clock::time_point now = Clock::now();
  DeadlinePolicy p{seconds(60), seconds(10)};
  EXPECT_EQ(EffectiveDeadline(now + seconds(3600), now, p), now + seconds(60));
}

TEST(DeadlineTest, ShortClientDeadlineIsKept) {
  const Clock::time_point now = Clock::now();
  DeadlinePolicy p{seconds(60), seconds(10)};
  EXPECT_EQ(EffectiveDeadline(now + seconds(2), now, p), now + seconds(2));
  EXPECT_EQ(EffectiveDeadline(now - seconds(1), now, p), now - seconds(1)) << "already expired";
}

TEST(DeadlineTest, NearMaxDoesNotOverflow) {
  const Clock::time_point now = Clock::now();
  DeadlinePolicy p{seconds(60), seconds(10)};
  EXPECT_EQ(EffectiveDeadline(Clock::time_point::max() - seconds(1), now, p), now + seconds(10));
}

TEST(DeadlineTest, SecondsToDuration) {
  EXPECT_EQ(SecondsToDuration(0.5), std::chrono::milliseconds(500));
  EXPECT_EQ(SecondsToDuration(-3), Clock::duration::zero());
}

}  // namespace
}  // namespace grove::service
