#include "util/crc32c.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace grove::crc32c {
namespace {

// Vectors from RFC 3720, appendix B.4.
TEST(Crc32cTest, StandardVectors) {
  char buf[32];
  std::memset(buf, 0, sizeof(buf));
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x8a9136aau);
  std::memset(buf, 0xff, sizeof(buf));
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x62a8ab43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(i);
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x46dd794eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x113fdb5cu);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string a = "hello ", b = "world, with an odd length!";
  EXPECT_EQ(Extend(Value(a.data(), a.size()), b.data(), b.size()),
            Value((a + b).data(), a.size() + b.size()));
}

TEST(Crc32cTest, MaskRoundTripsAndDiffers) {
  const uint32_t crc = Value("foo", 3);
  EXPECT_NE(Mask(crc), crc);
  EXPECT_EQ(Unmask(Mask(crc)), crc);
}

}  // namespace
}  // namespace grove::crc32c
