#include "config/yaml_reader.h"

#include <gtest/gtest.h>

namespace grove::config {
namespace {

TEST(ParseSizeTest, AcceptsBinarySuffixes) {
  uint64_t v = 0;
  ASSERT_TRUE(ParseSize("123", &v));
  EXPECT_EQ(v, 123u);
  ASSERT_TRUE(ParseSize("64KiB", &v));
  EXPECT_EQ(v, 64u << 10);
  ASSERT_TRUE(ParseSize("4 MiB", &v));
  EXPECT_EQ(v, 4u << 20);
  ASSERT_TRUE(ParseSize("2g", &v));
  EXPECT_EQ(v, 2ull << 30);
  ASSERT_TRUE(ParseSize("1TiB", &v));
  EXPECT_EQ(v, 1ull << 40);
}

TEST(ParseSizeTest, RejectsGarbageAndOverflow) {
  uint64_t v = 0;
  EXPECT_FALSE(ParseSize("", &v));
  EXPECT_FALSE(ParseSize("-1", &v));
  EXPECT_FALSE(ParseSize("1.5MiB", &v));
  EXPECT_FALSE(ParseSize("12 apples", &v));
  EXPECT_FALSE(ParseSize("MiB", &v));
  EXPECT_FALSE(ParseSize("99999999999TiB", &v));
}

TEST(YamlSectionTest, ReportsEveryProblemWithPathAndLine) {
  YAML::Node root = YAML::Load("a: 1\nsub:\n  flag: maybe\n  n: -3\n  extra: 1\n");
  ErrorList errors;
  YamlSection top(root, "", "test.yaml", &errors);
  uint32_t a = 0;
  top.Uint32("a", &a);
  YamlSection sub = top.Child("sub");
  bool flag = false;
  uint64_t n = 7;
  sub.Bool("flag", &flag);
  sub.Uint64("n", &n);
  sub.Finish();
  top.Finish();
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(n, 7u) << "a bad value leaves the default";
  const std::string all = errors.Join();
  EXPECT_NE(all.find("test.yaml:3: sub.flag: 'maybe' is not a boolean"), std::string::npos) << all;
  EXPECT_NE(all.find("test.yaml:4: sub.n: '-3' is not a non-negative integer"), std::string::npos)
      << all;
  EXPECT_NE(all.find("test.yaml:5: sub.extra: unknown field (allowed here: flag, n)"),
            std::string::npos)
      << all;
}

TEST(YamlSectionTest, AbsentSectionKeepsDefaults) {
  YAML::Node root = YAML::Load("other: 1\n");
  ErrorList errors;
  YamlSection top(root, "", "t", &errors);
  YamlSection sub = top.Child("missing");
  std::string s = "default";
  sub.String("name", &s);
  sub.Finish();
  EXPECT_EQ(s, "default");
  uint32_t other = 0;
  top.Uint32("other", &other);
  top.Finish();
  EXPECT_TRUE(errors.empty()) << errors.Join();
}

TEST(YamlSectionTest, ScalarWhereMappingExpected) {
  YAML::Node root = YAML::Load("sub: 5\n");
  ErrorList errors;
  YamlSection top(root, "", "t", &errors);
  YamlSection sub = top.Child("sub");
  sub.Finish();
  top.Finish();
  EXPECT_NE(errors.Join().find("sub: expected a mapping of fields"), std::string::npos)
      << errors.Join();
}

TEST(YamlSectionTest, Uint32Overflow) {
  YAML::Node root = YAML::Load("n: 4294967296\n");
  ErrorList errors;
  YamlSection top(root, "", "t", &errors);
  uint32_t n = 1;
  top.Uint32("n", &n);
  EXPECT_EQ(n, 1u);
  EXPECT_NE(errors.Join().find("too large"), std::string::npos);
}

}  // namespace
}  // namespace grove::config
