#pragma once

// ShardMapWatcher: a node's view of the shard map (shard_map.h), kept current by an etcd watch.
//
// A watcher thread reads /grove/<cluster>/shardmap, publishes it, and watches the key from the
// revision it read; when the stream breaks (etcd restarted, endpoint gone) it reads and watches
// again after a backoff of 100 ms doubling to 1 s. A published map never goes back to an older
// version. While etcd is down the last map read stays in force: the node keeps serving what it
// owns (no map can change without etcd either).
//
// Before a map in which this node loses a range is published, the listener's BeforeLoss runs:
// the service uses it to wait for writes still in flight under the old map (fencing; see
// service/ownership.h).
//
// Thread safety: every method from any thread; Start and Stop from one.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "grove/logger.h"
#include "grove/status.h"

#include "cluster/etcd_client.h"
#include "cluster/shard_map.h"
#include "util/mutex.h"

namespace grove::cluster {

class ShardMapWatcher {
 public:
  struct Listener {
    virtual ~Listener() = default;
    // `next` is about to replace `previous` (null at the first map).
    virtual void BeforePublish(const ShardMap* previous, const ShardMap& next) = 0;
    virtual void AfterPublish(const ShardMap& map) = 0;
  };

  ShardMapWatcher(std::shared_ptr<EtcdClient> etcd, std::string cluster, Logger* logger);
  ~ShardMapWatcher();  // Stop()

  // Not owned; set before Start.
  void set_listener(Listener* listener) { listener_ = listener; }
  // Reads the map once (an error is logged, not returned: etcd may be down; the thread keeps
  // trying) and starts the watcher thread.
  void Start();
  void Stop() GROVE_EXCLUDES(stop_mu_);

  // The newest map known; null before the first was read.
  std::shared_ptr<const ShardMap> current() const GROVE_EXCLUDES(map_mu_);
  // Reads the map from etcd now unless the one known has at least `version` (or a read for that
  // version or a lower one found nothing newer less than kMinRefreshInterval ago). Returns the
  // map known afterwards (maybe still older, when etcd cannot be reached or has no such version).
  std::shared_ptr<const ShardMap> RefreshTo(uint64_t version) GROVE_EXCLUDES(refresh_mu_);

 private:
  // Publishes `bytes` if it is a newer map than the current one.
  void Offer(const std::string& bytes) GROVE_EXCLUDES(map_mu_);
  Status ReadOnce(int64_t* revision);
  void Run() GROVE_EXCLUDES(stop_mu_);

  const std::shared_ptr<EtcdClient> etcd_;
  const std::string cluster_;
  Logger* const logger_;
  Listener* listener_ = nullptr;

  mutable Mutex map_mu_;  // held across the listener's calls
  std::shared_ptr<const ShardMap> map_ GROVE_GUARDED_BY(map_mu_);
  static constexpr std::chrono::milliseconds kMinRefreshInterval{20};
  Mutex refresh_mu_ GROVE_ACQUIRED_BEFORE(map_mu_);  // one RefreshTo read at a time
  // The version the last read did not reach (0: it did).
  uint64_t unmet_version_ GROVE_GUARDED_BY(refresh_mu_) = 0;
  std::chrono::steady_clock::time_point unmet_at_ GROVE_GUARDED_BY(refresh_mu_){};

  Mutex stop_mu_;
  CondVar stop_cv_{&stop_mu_};
  bool stop_ GROVE_GUARDED_BY(stop_mu_) = false;
  EtcdClient::WatchCancel cancel_;
  std::thread thread_;
};

}  // namespace grove::cluster
