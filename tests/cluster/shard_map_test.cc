// The shard map: its invariants, splits, lookups and encoding, and its changes in etcd (created
// once, edited by compare-and-set so that concurrent administrators lose nothing).

#include "cluster/shard_map.h"

#include <algorithm>
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

std::vector<std::string> Nodes(const ShardRange& r) {
  std::vector<std::string> out;
  for (const RangeReplica& replica : r.replicas) out.push_back(replica.node);
  return out;
}

TEST(ShardMapTest, AReplicatedLayoutSpreadsReplicasFromEachOwnerOnward) {
  auto m =
      ShardMap::InitialReplicated("n1", {{"g", "n2"}, {"p", "n4"}}, {"n1", "n2", "n3", "n4"}, 3);
  ASSERT_OK(m.status());
  EXPECT_EQ(m->replication_factor(), 3u);
  ASSERT_EQ(m->ranges().size(), 3u);
  EXPECT_EQ(Nodes(m->ranges()[0]), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(Nodes(m->ranges()[1]), (std::vector<std::string>{"n2", "n3", "n4"}));
  EXPECT_EQ(Nodes(m->ranges()[2]), (std::vector<std::string>{"n4", "n1", "n2"}));
  // Replica ids are unique over the map.
  std::vector<uint64_t> ids;
  for (const ShardRange& r : m->ranges()) {
    for (const RangeReplica& replica : r.replicas) ids.push_back(replica.id);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
  EXPECT_EQ(ids.size(), 9u);

  // n3 holds two ranges (as a replica), owns none; n1 serves the first and the last.
  EXPECT_EQ(m->OwnedBy("n3").size(), 2u);
  EXPECT_TRUE(m->ranges()[2].ServedBy("n1"));
  EXPECT_FALSE(m->ranges()[1].ServedBy("n1"));
  ASSERT_NE(m->ranges()[2].ReplicaOn("n2"), nullptr);
  EXPECT_EQ(m->ranges()[2].ReplicaOn("n3"), nullptr);

  auto back = ShardMap::Decode(m->Encode());
  ASSERT_OK(back.status());
  EXPECT_EQ(back->replication_factor(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back->ranges()[i].replicas, m->ranges()[i].replicas);
}

TEST(ShardMapTest, AReplicatedLayoutRefusesBadNodesAndFactors) {
  const auto code = [](const StatusOr<ShardMap>& m) { return m.status().code(); };
  const auto message = [](const StatusOr<ShardMap>& m) { return m.status().ToString(); };
  auto twice = ShardMap::InitialReplicated("a", {}, {"a", "b", "a"}, 2);
  EXPECT_EQ(code(twice), StatusCode::kInvalidArgument);
  EXPECT_NE(message(twice).find("nodes[2]"), std::string::npos) << message(twice);
  auto bad = ShardMap::InitialReplicated("a", {}, {"a", "B C"}, 2);
  EXPECT_NE(message(bad).find("nodes[1]"), std::string::npos) << message(bad);
  auto big = ShardMap::InitialReplicated("a", {}, {"a", "b"}, 3);
  EXPECT_EQ(code(big), StatusCode::kInvalidArgument);
  EXPECT_NE(message(big).find("replication factor"), std::string::npos) << message(big);
  EXPECT_EQ(code(ShardMap::InitialReplicated("a", {}, {"a"}, 0)), StatusCode::kInvalidArgument);
  auto stranger = ShardMap::InitialReplicated("a", {{"m", "z"}}, {"a", "b"}, 2);
  EXPECT_NE(message(stranger).find("'z'"), std::string::npos) << message(stranger);
}

TEST(ShardMapTest, AReplicatedRangeIsNeitherSplitNorMovedAndKeepsItsOwnerAmongItsReplicas) {
  auto m = ShardMap::InitialReplicated("a", {}, {"a", "b", "c"}, 3);
  ASSERT_OK(m.status());
  EXPECT_EQ(m->Split("m").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->StartMove("", "b").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->Assign("", "d").code(), StatusCode::kFailedPrecondition);
  ASSERT_OK(m->Assign("", "c"));  // another replica first
  EXPECT_EQ(m->ranges()[0].owner, "c");
  EXPECT_EQ(m->ranges()[0].replicas.size(), 3u);

  // Damage: an owner outside the replicas, a repeated replica, an id past the counter.
  v1::ShardMap pb;
  ASSERT_TRUE(pb.ParseFromString(m->Encode()));
  v1::ShardMap outside = pb;
  outside.mutable_ranges(0)->set_owner("d");
  EXPECT_EQ(ShardMap::Decode(outside.SerializeAsString()).status().code(), StatusCode::kDataLoss);
  v1::ShardMap repeated = pb;
  repeated.mutable_ranges(0)->mutable_replicas(1)->set_node("a");
  EXPECT_EQ(ShardMap::Decode(repeated.SerializeAsString()).status().code(), StatusCode::kDataLoss);
  v1::ShardMap past = pb;
  past.mutable_ranges(0)->mutable_replicas(2)->set_id(pb.next_replica_id());
  EXPECT_EQ(ShardMap::Decode(past.SerializeAsString()).status().code(), StatusCode::kDataLoss);
  v1::ShardMap moving = pb;
  moving.mutable_ranges(0)->set_moving_to("d");
  moving.mutable_ranges(0)->set_move_id(1);
  EXPECT_EQ(ShardMap::Decode(moving.SerializeAsString()).status().code(), StatusCode::kDataLoss);
}

TEST(ShardMapTest, ReplicasAreAddedUnderNewIdsAndRemovedWithTheOwnerPassingOn) {
  auto m = ShardMap::InitialReplicated("a", {}, {"a", "b", "c"}, 3);
  ASSERT_OK(m.status());
  EXPECT_FALSE(m->ranges()[0].reconfigured);
  const uint64_t version = m->version();
  StatusOr<uint64_t> d = m->AddReplica("", "d");
  ASSERT_OK(d.status());
  EXPECT_EQ(*d, 4u);  // after the three of the layout
  EXPECT_EQ(m->version(), version + 1);
  EXPECT_TRUE(m->ranges()[0].reconfigured);
  ASSERT_NE(m->ranges()[0].ReplicaOn("d"), nullptr);
  EXPECT_EQ(m->AddReplica("", "d").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m->AddReplica("", "B C").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m->AddReplica("zz", "e").status().code(), StatusCode::kInvalidArgument);

  // The owner goes: the first other replica is tried first from then on.
  ASSERT_OK(m->RemoveReplica("", "a"));
  EXPECT_EQ(m->ranges()[0].owner, "b");
  EXPECT_EQ(m->ranges()[0].ReplicaOn("a"), nullptr);
  EXPECT_EQ(m->RemoveReplica("", "a").code(), StatusCode::kInvalidArgument);
  // Back again, it is a new replica with a new id.
  StatusOr<uint64_t> again = m->AddReplica("", "a");
  ASSERT_OK(again.status());
  EXPECT_EQ(*again, 5u);

  // It round-trips, and a range is never left without a replica.
  auto decoded = ShardMap::Decode(m->Encode());
  ASSERT_OK(decoded.status());
  EXPECT_TRUE(decoded->ranges()[0].reconfigured);
  EXPECT_EQ(decoded->ranges()[0].replicas, m->ranges()[0].replicas);
  auto one = ShardMap::InitialReplicated("a", {}, {"a", "b"}, 1);
  ASSERT_OK(one.status());
  EXPECT_EQ(one->RemoveReplica("", "a").code(), StatusCode::kFailedPrecondition);
  ShardMap plain = ShardMap::Initial("a");
  EXPECT_EQ(plain.AddReplica("", "b").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(plain.RemoveReplica("", "a").code(), StatusCode::kFailedPrecondition);
}

TEST(ShardMapTest, AReplicatedRangeSplitsInTwoStepsAndFreezesItsReplicasMeanwhile) {
  auto m = ShardMap::InitialReplicated("a", {}, {"a", "b", "c"}, 3);
  ASSERT_OK(m.status());
  EXPECT_EQ(m->ReserveSplit("").status().code(), StatusCode::kInvalidArgument);
  StatusOr<uint64_t> id = m->ReserveSplit("m");
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, 2u);
  StatusOr<uint64_t> again = m->ReserveSplit("m");
  ASSERT_OK(again.status());
  EXPECT_EQ(*again, *id);
  EXPECT_EQ(m->ReserveSplit("q").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->AddReplica("", "d").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->RemoveReplica("", "c").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->CompleteSplit("q").code(), StatusCode::kFailedPrecondition);
  auto decoded = ShardMap::Decode(m->Encode());  // the reservation round-trips
  ASSERT_OK(decoded.status());
  EXPECT_EQ(decoded->ranges()[0].split_id, *id);

  ASSERT_OK(m->CompleteSplit("m"));
  ASSERT_EQ(m->ranges().size(), 2u);
  const ShardRange& left = m->ranges()[0];
  const ShardRange& right = m->ranges()[1];
  EXPECT_EQ(left.end, "m");
  EXPECT_EQ(left.id, 1u);
  EXPECT_EQ(left.split_id, 0u);
  EXPECT_EQ(right.start, "m");
  EXPECT_EQ(right.id, *id);
  EXPECT_EQ(right.replicas, left.replicas);
  EXPECT_TRUE(right.from_split);
  ASSERT_OK(ShardMap::Decode(m->Encode()).status());
  // A split id another range holds is damage.
  v1::ShardMap pb;
  ASSERT_TRUE(pb.ParseFromString(m->Encode()));
  pb.mutable_ranges(0)->set_split_key("c");
  pb.mutable_ranges(0)->set_split_id(right.id);
  EXPECT_EQ(ShardMap::Decode(pb.SerializeAsString()).status().code(), StatusCode::kDataLoss);
  ShardMap plain = ShardMap::Initial("a");
  EXPECT_EQ(plain.ReserveSplit("m").status().code(), StatusCode::kFailedPrecondition);
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
