#include "grovectl/progress.h"

#include <sstream>

#include <gtest/gtest.h>

namespace grove::grovectl {
namespace {

TEST(ProgressTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3ull << 30), "3.0 GiB");
}

TEST(ProgressTest, LineWithKnownTotal) {
  EXPECT_EQ(ProgressLine(500, 50, 100, 2.0),
            "[##########..........]  50%  500 records  50 B  250 records/s");
  EXPECT_EQ(ProgressLine(10, 200, 100, 1.0).substr(0, 27), "[####################] 100%");
}

TEST(ProgressTest, LineWithoutTotal) {
  EXPECT_EQ(ProgressLine(7, 2048, 0, 0), "7 records  2.0 KiB  0 records/s");
}

TEST(ProgressTest, DisabledWritesNothing) {
  std::ostringstream out;
  Progress p(out, false, 100);
  p.Update(1, 1);
  p.Finish();
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressTest, EnabledDrawsAndClears) {
  std::ostringstream out;
  Progress p(out, true, 100);
  p.Update(1, 50);
  p.Finish();
  const std::string s = out.str();
  EXPECT_EQ(s.front(), '\r');
  EXPECT_NE(s.find("50%"), std::string::npos);
  EXPECT_EQ(s.back(), '\r');
}

}  // namespace
}  // namespace grove::grovectl
