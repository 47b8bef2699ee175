// The one validator of Options (options/check_options.h): every broken rule reported at once
// with its field, the io.* rules only when the engine builds its backend, and Db::Open refusing
// with the same words a grove.yaml gets from config/.

#include "options/check_options.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "grove/db.h"
#include "grove/limits.h"
#include "grove/logger.h"

#include "testutil/temp_dir.h"

namespace grove {
namespace {

Options Valid(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.cache_bytes = 8 << 20;
  o.direct_io = false;
  o.logger = NewNullLogger();
  return o;
}

TEST(CheckOptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateEngineOptions(Valid("/tmp/anything")).ok());
}

TEST(CheckOptionsTest, EveryProblemIsReportedAtOnce) {
  Options o = Valid("");
  o.max_key_bytes = limits::kMaxKeyBytes + 1;
  o.checkpoint.dirty_fraction = 0.5;
  o.inner_cache_fraction = 2;
  const Status s = ValidateEngineOptions(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  const std::string m(s.message());
  for (const char* want : {"data_dir: must not be empty",
                           "limits.max_key_bytes: 1025 is out of range (allowed: "
                           "1..1024 bytes)",
                           "checkpoint.dirty_fraction: must be in (0, 0.45]",
                           "inner_cache_fraction: 2 is out of range (allowed: 0..1)"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\nin:\n" << m;
  }
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 3) << m;
}

TEST(CheckOptionsTest, TheLimitsAreTheNamedOnes) {
  Options o = Valid("/tmp/x");
  o.max_key_bytes = limits::kMaxKeyBytes;
  o.inline_value_bytes = limits::kMaxKeyPlusInlineBytes - limits::kMaxKeyBytes;
  o.max_value_bytes = limits::kMaxValueBytes;
  o.max_batch_entries = limits::kMaxBatchEntries;
  o.max_batch_bytes = limits::kMinBatchBytes;
  o.wal.max_unsynced_bytes = 2 * limits::kMinBatchBytes;
  EXPECT_TRUE(ValidateEngineOptions(o).ok()) << ValidateEngineOptions(o).ToString();
  o.inline_value_bytes += 1;  // two cells no longer fit a page
  EXPECT_NE(std::string(ValidateEngineOptions(o).message()).find("at most 1880"),
            std::string::npos);
  o.inline_value_bytes -= 1;
  o.max_value_bytes += 1;
  EXPECT_FALSE(ValidateEngineOptions(o).ok());
}

TEST(CheckOptionsTest, IoFieldsAreTheBackendsToCheck) {
  // psync_threads 0 (no workers: batches run in the caller) is the engine's to accept.
  Options o = Valid("/tmp/x");
  o.io.psync_threads = 0;
  EXPECT_TRUE(ValidateEngineOptions(o).ok()) << ValidateEngineOptions(o).ToString();
}

TEST(CheckOptionsTest, OpenRefusesWithTheSameWords) {
  testing::TempDir dir;
  Options o = Valid(dir.Sub("db"));
  o.max_key_bytes = 5000;
  o.scan_readahead_pages = 1000;
  auto db = Db::Open(o);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
  const std::string m(db.status().message());
  EXPECT_NE(m.find("limits.max_key_bytes: 5000 is out of range (allowed: 1..1024 bytes)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("scan_readahead_pages: 1000 is out of range (allowed: 0..256 pages)"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace grove
