#include "bench/key_set.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "trace/trace_file.h"

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
                                           "wiki", "gapped"));

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

// trace:PATH draws keys from the trace's keys: two clusters of traced keys give two clusters of
// generated keys, and nothing outside the traced span.
TEST(KeySetTest, TraceKeysFollowTheTracedDistribution) {
  testing::TempDir dir;
  const std::string path = dir.Sub("w.trace");
  {
    auto w = trace::TraceWriter::Create(path, trace::Header(), 1 << 30);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (uint64_t i = 0; i < 200; ++i) {
      trace::Record r;
      r.op = trace::Op::kGet;
      // "acct:" shared by all; half the keys in a cluster at 1 << 60, half at 9 << 60 (as the 8
      // bytes after it, their first bytes differing).
      const uint64_t v = (i % 2 == 0 ? 1 : 9) * (uint64_t{1} << 60) + i * (uint64_t{1} << 20);
      r.entries.push_back({"acct:" + EncodeKey(v), false, 0});
      ASSERT_TRUE((*w)->Add(r).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto spec = ParseKeySetSpec("trace:" + path);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(KeySetName(*spec), "trace:" + path);
  auto keys = MakeKeySet(*spec, 5000, 7);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 5000u);
  EXPECT_EQ(std::set<uint64_t>(keys->begin(), keys->end()).size(), 5000u);
  const uint64_t lo = uint64_t{1} << 60, hi = 9 * (uint64_t{1} << 60) + 199 * (uint64_t{1} << 20);
  uint64_t low_cluster = 0, high_cluster = 0;
  for (uint64_t k : *keys) {
    ASSERT_GE(k, lo);
    ASSERT_LE(k, hi);
    low_cluster += k < lo + 200 * (uint64_t{1} << 20) ? 1 : 0;
    high_cluster += k >= 9 * (uint64_t{1} << 60) ? 1 : 0;
  }
  // The jump between the clusters is one segment of 199: about 1/199 of the keys fall in it.
  EXPECT_GT(low_cluster, 2000u);
  EXPECT_GT(high_cluster, 2000u);
  EXPECT_FALSE(ParseKeySetSpec("trace:").ok());
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
