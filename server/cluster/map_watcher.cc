#include "cluster/map_watcher.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace grove::cluster {

ShardMapWatcher::ShardMapWatcher(std::shared_ptr<EtcdClient> etcd, std::string cluster,
                                 Logger* logger)
    : etcd_(std::move(etcd)), cluster_(std::move(cluster)), logger_(logger) {}

ShardMapWatcher::~ShardMapWatcher() { Stop(); }

void ShardMapWatcher::Start() {
  int64_t revision = 0;
  if (Status s = ReadOnce(&revision); !s.ok() && logger_ != nullptr) {
    logger_->Log(LogLevel::kWarn, "cluster: cannot read the shard map yet (" + s.ToString() +
                                      "); refusing keys until it is known");
  }
  thread_ = std::thread([this] { Run(); });
}

void ShardMapWatcher::Stop() {
  {
    MutexLock lock(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const ShardMap> ShardMapWatcher::current() const {
  MutexLock lock(&map_mu_);
  return map_;
}

std::shared_ptr<const ShardMap> ShardMapWatcher::RefreshTo(uint64_t version) {
  auto known = current();
  if (known != nullptr && known->version() >= version) return known;
  MutexLock lock(&refresh_mu_);
  known = current();  // another caller may have read it meanwhile
  if (known != nullptr && known->version() >= version) return known;
  // A version that etcd does not have (a client's garbage, or etcd unreachable) must not cost
  // an etcd read per call: after a read that did not reach a version, asking for it or a
  // higher one reads again only kMinRefreshInterval later.
  const auto now = std::chrono::steady_clock::now();
  if (unmet_version_ != 0 && version >= unmet_version_ && now - unmet_at_ < kMinRefreshInterval) {
    return known;
  }
  int64_t revision = 0;
  (void)ReadOnce(&revision);  // unreachable etcd: decide by what is known
  known = current();
  if (known == nullptr || known->version() < version) {
    unmet_version_ = version;
    unmet_at_ = now;
  } else {
    unmet_version_ = 0;
  }
  return known;
}

void ShardMapWatcher::Offer(const std::string& bytes) {
  auto decoded = ShardMap::Decode(bytes);
  if (!decoded.ok()) {
    if (logger_ != nullptr) {
      logger_->Log(LogLevel::kError, "cluster: ignoring a shard map that does not decode: " +
                                         decoded.status().ToString());
    }
    return;
  }
  auto next = std::make_shared<const ShardMap>(std::move(*decoded));
  MutexLock lock(&map_mu_);
  if (map_ != nullptr && map_->version() >= next->version()) return;
  if (listener_ != nullptr) listener_->BeforePublish(map_.get(), *next);
  map_ = next;
  if (listener_ != nullptr) listener_->AfterPublish(*next);
}

Status ShardMapWatcher::ReadOnce(int64_t* revision) {
  // A prefix read, for the store's revision even when the key is absent: a watch from the
  // revision after it misses no change, the map's creation included.
  const std::string key = ShardMapKey(cluster_);
  GROVE_ASSIGN_OR_RETURN(std::vector<EtcdKv> kvs, etcd_->GetPrefix(key, revision));
  for (const EtcdKv& kv : kvs) {
    if (kv.key == key) {
      Offer(kv.value);
      return Status::Ok();
    }
  }
  return Status::NotFound("cluster '" + cluster_ + "' has no shard map");
}

void ShardMapWatcher::Run() {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    {
      MutexLock lock(&stop_mu_);
      if (stop_) return;
    }
    int64_t revision = 0;
    Status s = ReadOnce(&revision);
    if (s.ok() || s.IsNotFound()) {
      s = etcd_->Watch(ShardMapKey(cluster_), revision + 1, &cancel_,
                       [this](const std::optional<EtcdKv>& kv) {
                         if (kv) Offer(kv->value);
                       });
      if (s.ok()) backoff = std::chrono::milliseconds(100);  // cancelled, or ended cleanly
    }
    MutexLock lock(&stop_mu_);
    if (stop_) return;
    if (!s.ok() && logger_ != nullptr) {
      logger_->Log(LogLevel::kDebug, "cluster: shard map watch: " + s.ToString());
    }
    const auto until = std::chrono::steady_clock::now() + backoff;
    while (!stop_ && stop_cv_.WaitUntil(until)) {
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace grove::cluster
