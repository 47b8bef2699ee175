// The shard map watcher: it sees the map's creation and every change, never goes back to an older
// version, and keeps watching across an etcd restart.

#include "cluster/map_watcher.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "cluster/etcd_process.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::cluster {
namespace {

class MapWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = testing::EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
    EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    o.call_timeout_seconds = 2;
    auto c = EtcdClient::Create(o);
    ASSERT_OK(c.status());
    client_ = std::move(*c);
  }

  // Waits until `w` knows a map of at least `version`.
  static bool WaitVersion(ShardMapWatcher& w, uint64_t version,
                          std::chrono::seconds timeout = std::chrono::seconds(15)) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < give_up) {
      auto m = w.current();
      if (m != nullptr && m->version() >= version) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  Status Split(const std::string& key) {
    return UpdateShardMap(client_.get(), "c", 0, [&](ShardMap* m) { return m->Split(key); })
        .status();
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::EtcdProcess> etcd_;
  std::shared_ptr<EtcdClient> client_;
};

TEST_F(MapWatcherTest, SeesTheCreationAndEveryChange) {
  ShardMapWatcher w(client_, "c", nullptr);
  w.Start();
  EXPECT_EQ(w.current(), nullptr);
  ASSERT_OK(CreateShardMap(client_.get(), "c", "node-1").status());
  ASSERT_TRUE(WaitVersion(w, 1));
  ASSERT_OK(Split("m"));
  ASSERT_TRUE(WaitVersion(w, 2));
  EXPECT_EQ(w.current()->ranges().size(), 2u);
  w.Stop();
}

TEST_F(MapWatcherTest, AnOlderMapIsNeverPublished) {
  ASSERT_OK(CreateShardMap(client_.get(), "c", "node-1").status());
  const std::string v1 = ShardMap::Initial("node-1").Encode();
  ASSERT_OK(Split("g"));
  ASSERT_OK(Split("p"));
  ShardMapWatcher w(client_, "c", nullptr);
  w.Start();
  ASSERT_TRUE(WaitVersion(w, 3));
  ASSERT_OK(client_->Put(ShardMapKey("c"), v1));  // an old map written back by hand
  ASSERT_OK(client_->Put(ShardMapKey("c"), "not a map"));
  EXPECT_EQ(Split("x").code(), StatusCode::kDataLoss) << "an editor refuses a damaged map";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(w.current()->version(), 3u);
  w.Stop();
}

TEST_F(MapWatcherTest, KeepsWatchingAcrossAnEtcdRestart) {
  ASSERT_OK(CreateShardMap(client_.get(), "c", "node-1").status());
  ShardMapWatcher w(client_, "c", nullptr);
  w.Start();
  ASSERT_TRUE(WaitVersion(w, 1));
  etcd_->Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(w.current()->version(), 1u) << "the last map stays in force while etcd is down";
  ASSERT_TRUE(etcd_->Restart());
  Status s;
  for (int i = 0; i < 50; ++i) {  // the client reconnects within about a second
    s = Split("m");
    if (s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_OK(s);
  EXPECT_TRUE(WaitVersion(w, 2));
  w.Stop();
}

TEST_F(MapWatcherTest, RefreshReadsANewerMapWithoutTheWatch) {
  ASSERT_OK(CreateShardMap(client_.get(), "c", "node-1").status());
  ShardMapWatcher w(client_, "c", nullptr);  // not started: no watch
  EXPECT_EQ(w.current(), nullptr);
  ASSERT_NE(w.RefreshTo(0), nullptr);
  ASSERT_OK(Split("m"));
  EXPECT_EQ(w.current()->version(), 1u);
  EXPECT_EQ(w.RefreshTo(1)->version(), 1u) << "known already: no read";
  EXPECT_EQ(w.RefreshTo(2)->version(), 2u);
  // A version etcd does not have: one read, then none for a while however often it is asked.
  EXPECT_EQ(w.RefreshTo(99)->version(), 2u);
  ASSERT_OK(Split("q"));
  EXPECT_EQ(w.RefreshTo(100)->version(), 2u) << "asked again at once: no read";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(w.RefreshTo(100)->version(), 3u) << "later: read again";
}

}  // namespace
}  // namespace grove::cluster
