#include "grove/client/codec.h"

#include <gtest/gtest.h>

namespace grove::client {
namespace {

std::string MustDecode(Format f, std::string_view text) {
  std::string bytes, error;
  EXPECT_TRUE(Decode(f, text, &bytes, &error)) << error;
  return bytes;
}

std::string DecodeError(Format f, std::string_view text) {
  std::string bytes, error;
  EXPECT_FALSE(Decode(f, text, &bytes, &error)) << text;
  return error;
}

TEST(CodecTest, FormatNames) {
  for (std::string_view name : {"text", "hex", "base64", "u64"}) {
    ASSERT_TRUE(ParseFormat(name).has_value()) << name;
    EXPECT_EQ(FormatName(*ParseFormat(name)), name);
  }
  EXPECT_FALSE(ParseFormat("binary").has_value());
}

TEST(CodecTest, TextIsVerbatim) {
  const std::string bytes("a\0b\xff", 4);
  EXPECT_EQ(Encode(Format::kText, bytes), bytes);
  EXPECT_EQ(MustDecode(Format::kText, bytes), bytes);
}

TEST(CodecTest, Hex) {
  EXPECT_EQ(Encode(Format::kHex, std::string("\x00\x7f\xff", 3)), "007fff");
  EXPECT_EQ(MustDecode(Format::kHex, "007FfF"), std::string("\x00\x7f\xff", 3));
  EXPECT_EQ(MustDecode(Format::kHex, ""), "");
  EXPECT_EQ(DecodeError(Format::kHex, "abc"), "'abc' is not hex (two hex digits per byte)");
  DecodeError(Format::kHex, "zz");
}

TEST(CodecTest, Base64RoundTripsEveryLength) {
  std::string bytes;
  for (int n = 0; n < 40; ++n) {
    const std::string enc = Encode(Format::kBase64, bytes);
    EXPECT_EQ(enc.size() % 4, 0u);
    EXPECT_EQ(MustDecode(Format::kBase64, enc), bytes) << n;
    bytes.push_back(static_cast<char>(n * 37 + 250));
  }
  EXPECT_EQ(Encode(Format::kBase64, "key"), "a2V5");
  EXPECT_EQ(Encode(Format::kBase64, "ke"), "a2U=");
  EXPECT_EQ(Encode(Format::kBase64, "k"), "aw==");
  EXPECT_EQ(MustDecode(Format::kBase64, "aGVsbG8gd29ybGQ="), "hello world");
}

TEST(CodecTest, Base64Rejects) {
  for (std::string_view bad : {"a", "a2V", "a=V5", "a2V5=", "a2U=a2V5", "a!V5", "===="}) {
    DecodeError(Format::kBase64, bad);
  }
}

TEST(CodecTest, U64IsBigEndianSoNumericOrderIsKeyOrder) {
  EXPECT_EQ(MustDecode(Format::kU64, "1"), std::string("\0\0\0\0\0\0\0\x01", 8));
  EXPECT_EQ(MustDecode(Format::kU64, "258"), std::string("\0\0\0\0\0\0\x01\x02", 8));
  EXPECT_LT(MustDecode(Format::kU64, "255"), MustDecode(Format::kU64, "256"));
  EXPECT_EQ(Encode(Format::kU64, MustDecode(Format::kU64, "18446744073709551615")),
            "18446744073709551615");
  EXPECT_EQ(Encode(Format::kU64, "abc"), "0x616263") << "not 8 bytes";
  DecodeError(Format::kU64, "-1");
  DecodeError(Format::kU64, "18446744073709551616");
  DecodeError(Format::kU64, "");
  DecodeError(Format::kU64, "12a");
}

}  // namespace
}  // namespace grove::client
