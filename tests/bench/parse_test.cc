#include "bench/parse.h"

#include <gtest/gtest.h>

#include "bench/target.h"

namespace grove::bench {
namespace {

TEST(ParseSizeTest, SuffixesAndExponents) {
  EXPECT_EQ(*ParseSize("4096", "x"), 4096u);
  EXPECT_EQ(*ParseSize("64MiB", "x"), 64ull << 20);
  EXPECT_EQ(*ParseSize("1.5GiB", "x"), 3ull << 29);
  EXPECT_EQ(*ParseSize("10M", "x"), 10000000u);
  EXPECT_EQ(*ParseSize("1e6", "x"), 1000000u);
  EXPECT_EQ(*ParseSize("100K", "x"), 100000u);
  auto bad = ParseSize("12 parsecs", "--records");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--records"), std::string::npos);
  EXPECT_FALSE(ParseSize("-1", "x").ok());
}

TEST(ParseTargetUriTest, Forms) {
  auto e = ParseTargetUri("embedded:btree?fill_factor=0.9&x=1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->scheme, "embedded");
  EXPECT_EQ(e->body, "btree");
  EXPECT_EQ(e->params.at("fill_factor"), "0.9");
  EXPECT_EQ(e->params.at("x"), "1");

  auto r = ParseTargetUri("rocksdb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scheme, "rocksdb");
  EXPECT_TRUE(r->body.empty());

  auto d = ParseTargetUri("device?file_bytes=1GiB");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->scheme, "device");
  EXPECT_EQ(d->params.at("file_bytes"), "1GiB");

  auto g = ParseTargetUri("grpc://localhost:7400");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->scheme, "grpc");
  EXPECT_EQ(g->body, "localhost:7400");

  EXPECT_FALSE(ParseTargetUri("embedded:btree?novalue").ok());
}

TEST(OpenTargetTest, UnknownSchemeNamesTheChoices) {
  auto t = OpenTarget("leveldb", TargetOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("rocksdb"), std::string::npos);
}

}  // namespace
}  // namespace grove::bench
