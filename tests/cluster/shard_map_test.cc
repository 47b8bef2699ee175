// The shard map: its invariants, splits, lookups and encoding, and its changes in etcd (created
// once, edited by compare-and-set so that concurrent administrators lose nothing).

#include "cluster/shard_map.h"

#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "grove/v1/cluster.pb.h"

#include "cluster/etcd_process.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::cluster {
namespace {

TEST(ShardMapTest, OneRangeHoldsEveryKeyAtFirst) {
  ShardMap m = ShardMap::Initial("node-1");
  ASSERT_OK(m.Validate());
  EXPECT_EQ(m.version(), 1u);
  ASSERT_EQ(m.ranges().size(), 1u);
  for (const std::string& k : {std::string(), std::string("a"), std::string(300, '\xff')}) {
    EXPECT_EQ(m.Find(k).owner, "node-1");
  }
}

TEST(ShardMapTest, SplitsKeepTheCoverWithNewIdsAndTheOwner) {
  ShardMap m = ShardMap::Initial("node-1");
  ASSERT_OK(m.Split("m"));
  ASSERT_OK(m.Split("g"));
  ASSERT_OK(m.Validate());
  EXPECT_EQ(m.version(), 3u);
  ASSERT_EQ(m.ranges().size(), 3u);
  EXPECT_EQ(m.ranges()[0].start, "");
  EXPECT_EQ(m.ranges()[0].end, "g");
  EXPECT_EQ(m.ranges()[1].start, "g");
  EXPECT_EQ(m.ranges()[1].end, "m");
  EXPECT_EQ(m.ranges()[2].start, "m");
  EXPECT_EQ(m.ranges()[2].end, "");
  // Ids are never reused: 1 was split into 2 and 3, 2 into 4 and 5.
  EXPECT_EQ(m.ranges()[0].id, 4u);
  EXPECT_EQ(m.ranges()[1].id, 5u);
  EXPECT_EQ(m.ranges()[2].id, 3u);
  for (const ShardRange& r : m.ranges()) EXPECT_EQ(r.owner, "node-1");
  EXPECT_EQ(m.IndexOf(""), 0u);
  EXPECT_EQ(m.IndexOf("f\xff"), 0u);
  EXPECT_EQ(m.IndexOf("g"), 1u);
  EXPECT_EQ(m.IndexOf("l"), 1u);
  EXPECT_EQ(m.IndexOf("m"), 2u);
  EXPECT_EQ(m.IndexOf(std::string("m\0", 2)), 2u);
}

TEST(ShardMapTest, AnInitialLayoutCutsTheKeySpaceAtEachSplit) {
  auto m = ShardMap::Initial("n1", {{"p", "n3"}, {"g", "n2"}});
  ASSERT_OK(m.status());
  EXPECT_EQ(m->version(), 1u);
  ASSERT_EQ(m->ranges().size(), 3u);
  EXPECT_EQ(m->Find("a").owner, "n1");
  EXPECT_EQ(m->Find("g").owner, "n2");
  EXPECT_EQ(m->Find("o").owner, "n2");
  EXPECT_EQ(m->Find("p").owner, "n3");
  EXPECT_EQ(ShardMap::Initial("n1", {{"g", "n2"}, {"g", "n3"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardMap::Initial("n1", {{"", "n2"}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardMap::Initial("n1", {{"g", "N 2"}}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ShardMapTest, ASplitAtTheFirstKeyOrAnExistingStartIsRefused) {
  ShardMap m = ShardMap::Initial("node-1");
  EXPECT_EQ(m.Split("").code(), StatusCode::kInvalidArgument);
  ASSERT_OK(m.Split("k"));
  Status again = m.Split("k");
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("already starts a range"), std::string::npos) << again.ToString();
  EXPECT_EQ(m.version(), 2u);
}

TEST(ShardMapTest, BinaryKeysSplitAndPrint) {
  ShardMap m = ShardMap::Initial("n");
  const std::string k("\x00\xff\x01", 3);
  ASSERT_OK(m.Split(k));
  EXPECT_EQ(m.IndexOf(std::string(1, '\0')), 0u);
  EXPECT_EQ(m.IndexOf(k), 1u);
  EXPECT_EQ(m.ranges()[1].Describe(), "[\\x00\\xff\\x01, (end))");
  EXPECT_EQ(PrintableKey("a\\b"), "a\\x5cb");
}

TEST(ShardMapTest, EncodingRoundTripsAndDamageIsRefused) {
  ShardMap m = ShardMap::Initial("node-1");
  ASSERT_OK(m.Split("m"));
  ASSERT_OK(m.Assign("m", "node-2"));
  auto back = ShardMap::Decode(m.Encode());
  ASSERT_OK(back.status());
  EXPECT_EQ(back->version(), m.version());
  ASSERT_EQ(back->ranges().size(), 2u);
  EXPECT_EQ(back->Find("z").owner, "node-2");

  EXPECT_EQ(ShardMap::Decode("\xff\xff\xff").status().code(), StatusCode::kDataLoss);
  v1::ShardMap pb;
  ASSERT_TRUE(pb.ParseFromString(m.Encode()));
  pb.mutable_ranges(1)->set_start("n");  // a gap between "m" and "n"
  auto gap = ShardMap::Decode(pb.SerializeAsString());
  EXPECT_EQ(gap.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(gap.status().message().find("not followed by its end's range"), std::string::npos)
      << gap.status().ToString();
  pb.mutable_ranges(1)->set_start("m");
  pb.mutable_ranges(1)->set_id(pb.ranges(0).id());
  EXPECT_EQ(ShardMap::Decode(pb.SerializeAsString()).status().code(), StatusCode::kDataLoss);
}

TEST(ShardMapTest, AssignNeedsARangeStartAndAValidNode) {
  ShardMap m = ShardMap::Initial("node-1");
  ASSERT_OK(m.Split("m"));
  EXPECT_EQ(m.Assign("n", "node-2").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Assign("m", "Bad Name").code(), StatusCode::kInvalidArgument);
  ASSERT_OK(m.Assign("m", "node-2"));
  ASSERT_EQ(m.OwnedBy("node-2").size(), 1u);
  EXPECT_EQ(m.OwnedBy("node-2")[0].start, "m");
}

class ShardMapStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = testing::EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
    EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    auto c = EtcdClient::Create(o);
    ASSERT_OK(c.status());
    client_ = std::move(*c);
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::EtcdProcess> etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(ShardMapStoreTest, TheMapIsCreatedOnce) {
  auto none = ReadShardMap(client_.get(), "c1");
  ASSERT_OK(none.status());
  EXPECT_FALSE(none->has_value());
  ASSERT_OK(CreateShardMap(client_.get(), "c1", "node-1").status());
  auto again = CreateShardMap(client_.get(), "c1", "node-2");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  auto stored = ReadShardMap(client_.get(), "c1");
  ASSERT_OK(stored.status());
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ((*stored)->map.Find("x").owner, "node-1");
  // Another cluster's map is another key.
  ASSERT_OK(CreateShardMap(client_.get(), "c2", "node-9").status());
}

TEST_F(ShardMapStoreTest, ConcurrentEditorsLoseNoChange) {
  ASSERT_OK(CreateShardMap(client_.get(), "c", "node-1").status());
  auto editor = [&](char first) {
    for (int i = 0; i < 5; ++i) {
      const std::string key = std::string(1, first) + std::to_string(i);
      auto r = UpdateShardMap(client_.get(), "c", 0, [&](ShardMap* m) { return m->Split(key); });
      EXPECT_OK(r.status());
    }
  };
  std::thread a(editor, 'a'), b(editor, 'b');
  a.join();
  b.join();
  auto stored = ReadShardMap(client_.get(), "c");
  ASSERT_OK(stored.status());
  const ShardMap& m = (*stored)->map;
  EXPECT_EQ(m.version(), 11u);
  EXPECT_EQ(m.ranges().size(), 11u);
  ASSERT_OK(m.Validate());
}

TEST_F(ShardMapStoreTest, AnEditThatNoLongerAppliesOrAStaleVersionWritesNothing) {
  ASSERT_OK(CreateShardMap(client_.get(), "c", "node-1").status());
  auto split = [](ShardMap* m) { return m->Split("k"); };
  ASSERT_OK(UpdateShardMap(client_.get(), "c", 1, split).status());
  auto again = UpdateShardMap(client_.get(), "c", 0, split);
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  auto stale = UpdateShardMap(client_.get(), "c", 1, [](ShardMap* m) { return m->Split("q"); });
  EXPECT_EQ(stale.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("at version 2, not 1"), std::string::npos)
      << stale.status().ToString();
  auto stored = ReadShardMap(client_.get(), "c");
  ASSERT_OK(stored.status());
  EXPECT_EQ((*stored)->map.version(), 2u);
  auto missing = UpdateShardMap(client_.get(), "nomap", 0, split);
  EXPECT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace grove::cluster
