// The insert forecaster: nothing before its sample fills, then each epoch's counts per
// equi-depth partition, interpolated over partly covered partitions.

#include "index/treeline/forecast.h"

#include <random>

#include <gtest/gtest.h>

namespace grove::treeline {
namespace {

TEST(ForecastTest, NothingUntilAnEpochEnds) {
  InsertForecaster f({.epoch_inserts = 1000, .partitions = 10, .future_epochs = 1});
  for (uint64_t i = 0; i < 500; ++i) f.RecordInsert(i);
  EXPECT_EQ(f.Forecast(0, UINT64_MAX), 0.0);
  EXPECT_EQ(f.finished_epochs(), 0u);
}

TEST(ForecastTest, UniformInsertsForecastInProportionToTheRange) {
  InsertForecaster f({.epoch_inserts = 2000, .partitions = 20, .future_epochs = 1});
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) f.RecordInsert(rng() % 1000000);
  ASSERT_GE(f.finished_epochs(), 3u);
  const double all = f.Forecast(0, UINT64_MAX);
  EXPECT_NEAR(all, 2000.0, 1.0);
  EXPECT_NEAR(f.Forecast(0, 500000), 1000.0, 150.0);
  EXPECT_NEAR(f.Forecast(250000, 260000), 20.0, 15.0);
  EXPECT_EQ(f.Forecast(600000, 600000), 0.0);
}

TEST(ForecastTest, SkewedInsertsPointAtTheirRange) {
  InsertForecaster f({.epoch_inserts = 1000, .partitions = 10, .future_epochs = 2});
  std::mt19937_64 rng(5);
  for (int i = 0; i < 5000; ++i)
    f.RecordInsert(rng() % 10 == 0 ? rng() % 1000000 : 100 + rng() % 100);
  ASSERT_GE(f.finished_epochs(), 2u);
  // Nine in ten of an epoch's inserts land in [100, 200); two future epochs.
  EXPECT_GT(f.Forecast(100, 200), 2 * 1000 * 0.8);
  EXPECT_LT(f.Forecast(500000, 900000), 2 * 1000 * 0.1);
}

}  // namespace
}  // namespace grove::treeline
