#include "bench/key_set.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace grove::bench {
namespace {

class KeySetShapeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(KeySetShapeTest, UniqueKeysOfTheRequestedCount) {
  auto spec = ParseKeySetSpec(GetParam());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(KeySetName(*spec), GetParam());
  auto keys = MakeKeySet(*spec, 50000, 42);
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->size(), 50000u);
  std::vector<uint64_t> sorted = *keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicates";
  EXPECT_NE(sorted.front(), 0u);
  EXPECT_NE(*keys, sorted) << "random insertion order expected";
  // Deterministic for a seed, different for another.
  EXPECT_EQ(*MakeKeySet(*spec, 50000, 42), *keys);
  EXPECT_NE(*MakeKeySet(*spec, 50000, 43), *keys);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KeySetShapeTest,
                         ::testing::Values("dense", "sparse", "lognormal", "books", "fb", "osm",
                                           "wiki"));

TEST(KeySetTest, DenseIsOneToN) {
  KeySetSpec spec;
  spec.sorted_order = true;
  auto keys = MakeKeySet(spec, 1000, 1);
  ASSERT_TRUE(keys.ok());
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ((*keys)[i], i + 1);
}

TEST(KeySetTest, SosdFileRoundTripDropsDuplicates) {
  testing::TempDir dir;
  const std::string path = dir.Sub("keys_uint64");
  ASSERT_TRUE(WriteSosdFile(path, {5, 3, 3, 9, 1}).ok());
  auto keys = ReadSosdFile(path);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::vector<uint64_t>{1, 3, 5, 9}));

  auto spec = ParseKeySetSpec("sosd:" + path);
  ASSERT_TRUE(spec.ok());
  spec->sorted_order = true;
  auto sample = MakeKeySet(*spec, 3, 1);  // a uniform sample keeps the file's keys
  ASSERT_TRUE(sample.ok());
  ASSERT_EQ(sample->size(), 3u);
  for (uint64_t k : *sample) EXPECT_TRUE(k == 1 || k == 3 || k == 5 || k == 9);
}

TEST(KeySetTest, SosdFileWithWrongCountIsRejected) {
  testing::TempDir dir;
  const std::string path = dir.Sub("bad");
  FILE* f = std::fopen(path.c_str(), "wb");
  const uint64_t count = 10;
  std::fwrite(&count, 8, 1, f);
  std::fwrite(&count, 8, 1, f);
  std::fclose(f);
  auto keys = ReadSosdFile(path);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("10 keys"), std::string::npos);
}

TEST(KeySetTest, UnknownShapeNamesTheChoices) {
  auto spec = ParseKeySetSpec("zipf");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("lognormal"), std::string::npos);
}

TEST(KeyEncodingTest, BigEndianOrderIsNumericOrder) {
  EXPECT_EQ(EncodeKey(0x0102030405060708ull), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_LT(EncodeKey(255), EncodeKey(256));
  EXPECT_EQ(DecodeKey(EncodeKey(123456789)), 123456789u);
}

}  // namespace
}  // namespace grove::bench
