#include "util/histogram.h"

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(HistogramTest, CountsSumAndPercentiles) {
  Histogram h;
  for (int i = 0; i < 90; ++i) h.Record(5e-6);  // first bucket (<= 10 us)
  for (int i = 0; i < 10; ++i) h.Record(1e-3);  // around 1 ms
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, 100u);
  EXPECT_NEAR(s.sum, 90 * 5e-6 + 10 * 1e-3, 1e-9);
  EXPECT_LE(s.Percentile(50), 1e-5);
  EXPECT_GT(s.Percentile(99), 5e-4);
  EXPECT_LE(s.Percentile(99), 2.1e-3);
  EXPECT_EQ(s.counts.size(), s.bounds.size() + 1);
}

TEST(HistogramTest, HugeValuesLandInInfBucket) {
  Histogram h;
  h.Record(1e6);
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.counts.back(), 1u);
}

TEST(HistogramTest, EmptyPercentileIsZero) { EXPECT_EQ(Histogram().Snapshot().Percentile(99), 0); }

}  // namespace
}  // namespace grove
