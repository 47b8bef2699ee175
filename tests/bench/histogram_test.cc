#include "bench/histogram.h"

#include <cmath>

#include <gtest/gtest.h>

#include "bench/rng.h"

namespace grove::bench {
namespace {

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 200; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 200u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 199u);
  EXPECT_EQ(h.Percentile(50), 99u);
  EXPECT_EQ(h.Percentile(100), 199u);
  EXPECT_DOUBLE_EQ(h.Mean(), 99.5);
}

TEST(LatencyHistogramTest, BucketsTileTheRange) {
  // Every bucket starts where the previous one ends, and every value lands in the bucket
  // whose range holds it.
  for (size_t b = 1; b < LatencyHistogram::NumBuckets(); ++b) {
    ASSERT_EQ(LatencyHistogram::BucketLow(b),
              LatencyHistogram::BucketLow(b - 1) + LatencyHistogram::BucketWidth(b - 1))
        << "bucket " << b;
  }
  Rng rng(7);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng.Next() >> (20 + rng.Uniform(44));
    const size_t b = LatencyHistogram::BucketOf(v);
    ASSERT_GE(v, LatencyHistogram::BucketLow(b));
    ASSERT_LT(v, LatencyHistogram::BucketLow(b) + LatencyHistogram::BucketWidth(b));
  }
}

TEST(LatencyHistogramTest, RelativeErrorBelowOnePercent) {
  for (uint64_t v : {300ull, 55'000ull, 1'234'567ull, 987'654'321ull, 12'345'678'901ull}) {
    LatencyHistogram h;
    h.Record(v - 1);  // min and max bracket v so the clamp does not hide the bucket error
    h.Record(v);
    h.Record(v * 2);
    const double got = static_cast<double>(h.Percentile(50));
    EXPECT_LT(std::abs(got - v) / v, 1.0 / 128) << v;
  }
}

TEST(LatencyHistogramTest, PercentilesOfUniformData) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v * 1000);  // 1 us .. 100 ms
  EXPECT_NEAR(h.Percentile(50), 50e6, 50e6 / 128);
  EXPECT_NEAR(h.Percentile(99), 99e6, 99e6 / 128);
  EXPECT_NEAR(h.Percentile(99.9), 99.9e6, 99.9e6 / 128);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverything) {
  LatencyHistogram a;
  LatencyHistogram b;
  LatencyHistogram all;
  Rng rng(3);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = rng.Uniform(10'000'000);
    (i % 2 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  for (double p : {1.0, 50.0, 99.0, 99.9}) EXPECT_EQ(a.Percentile(p), all.Percentile(p)) << p;
}

TEST(LatencyHistogramTest, EmptyAndHugeValues) {
  LatencyHistogram h;
  EXPECT_EQ(h.Percentile(99), 0u);
  h.Record(UINT64_MAX);
  EXPECT_EQ(h.max(), LatencyHistogram::kMaxNanos);
}

}  // namespace
}  // namespace grove::bench
