#include "util/coding.h"

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(CodingTest, VarintRoundTripsAcrossWidths) {
  std::string buf;
  std::vector<uint64_t> values = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, UINT64_MAX};
  for (uint64_t v : values) PutVarint64(&buf, v);
  Slice in(buf);
  for (uint64_t v : values) {
    uint64_t got;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
  }
  EXPECT_TRUE(in.empty());
}

TEST(CodingTest, TruncatedVarintIsRejected) {
  std::string buf;
  PutVarint64(&buf, 1ull << 40);
  Slice in(buf.data(), buf.size() - 1);
  uint64_t v;
  EXPECT_FALSE(GetVarint64(&in, &v));
}

TEST(CodingTest, Varint32RejectsWideValues) {
  std::string buf;
  PutVarint64(&buf, 1ull << 33);
  Slice in(buf);
  uint32_t v;
  EXPECT_FALSE(GetVarint32(&in, &v));
  EXPECT_EQ(in.size(), buf.size());
}

TEST(CodingTest, LengthPrefixedRejectsOverlongLength) {
  std::string buf;
  PutVarint32(&buf, 10);
  buf += "abc";
  Slice in(buf), out;
  EXPECT_FALSE(GetLengthPrefixed(&in, &out));
}

TEST(CodingTest, BigEndianKeysSortLikeIntegers) {
  EXPECT_LT(EncodeU64Key(1), EncodeU64Key(256));
  EXPECT_LT(EncodeU64Key(255), EncodeU64Key(UINT64_MAX));
  EXPECT_EQ(DecodeBigEndian64(EncodeU64Key(0x0102030405060708ull).data()), 0x0102030405060708ull);
  EXPECT_EQ(Project(EncodeU64Key(42)), 42u);
  EXPECT_EQ(Project("a"), uint64_t{'a'} << 56);
}

}  // namespace
}  // namespace grove
