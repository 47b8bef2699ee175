#include "service/replica_host.h"

#include <chrono>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cluster/members.h"
#include "cluster/shard_map.h"

namespace grove::service {
namespace {

constexpr std::chrono::milliseconds kStartPeriod{250};

std::string RangeName(uint64_t range_id) { return "range-" + std::to_string(range_id); }

}  // namespace

ReplicaHost::ReplicaHost(ReplicaHostOptions options, std::shared_ptr<cluster::EtcdClient> etcd,
                         cluster::ShardMapWatcher* watcher, Logger* logger)
    : options_(std::move(options)), etcd_(std::move(etcd)), watcher_(watcher), logger_(logger) {}

StatusOr<std::unique_ptr<ReplicaHost>> ReplicaHost::Start(ReplicaHostOptions options,
                                                          std::shared_ptr<cluster::EtcdClient> etcd,
                                                          cluster::ShardMapWatcher* watcher,
                                                          Logger* logger) {
  std::unique_ptr<ReplicaHost> host(
      new ReplicaHost(std::move(options), std::move(etcd), watcher, logger));
  GROVE_ASSIGN_OR_RETURN(host->loop_, raft::RaftLoop::Start());
  raft::GroupTransportOptions to;
  to.bind_address = host->options_.raft.listen;
  to.advertise_address = host->options_.raft.advertise_address;
  auto transport = raft::GroupTransport::Start(host->loop_.get(), to);
  if (!transport.ok()) return transport.status().WithContext("cluster.raft.listen");
  host->transport_ = std::move(*transport);
  return host;
}

ReplicaHost::~ReplicaHost() { Stop(); }

void ReplicaHost::Open(Db* db) {
  MutexLock lock(&mu_);
  if (db_ != nullptr || stop_) return;
  db_ = db;
  starter_ = std::thread([this] { Run(); });
}

void ReplicaHost::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    wake_.SignalAll();
  }
  if (starter_.joinable()) starter_.join();
  std::map<uint64_t, Hosted> replicas;
  {
    MutexLock lock(&mu_);
    replicas.swap(replicas_);
  }
  for (auto& [id, hosted] : replicas) {
    service_.Remove(RangeName(id));
    if (Status s = hosted.range->Close(); !s.ok()) {
      Log(LogLevel::kWarn, fmt::format("closing the replica of range {}: {}", id, s.ToString()));
    }
    hosted.range.reset();
  }
  if (transport_ != nullptr) {
    if (Status s = transport_->Stop(); !s.ok()) {
      Log(LogLevel::kWarn, "stopping the raft transport: " + s.ToString());
    }
    transport_.reset();
  }
  if (loop_ != nullptr) {
    loop_->Stop();
    loop_.reset();
  }
}

std::shared_ptr<raft::ReplicatedRange> ReplicaHost::Find(uint64_t range_id) const {
  MutexLock lock(&mu_);
  auto it = replicas_.find(range_id);
  return it == replicas_.end() ? nullptr : it->second.range;
}

std::vector<metrics::RaftGroupFigures> ReplicaHost::Figures() const {
  std::vector<std::pair<uint64_t, std::shared_ptr<raft::ReplicatedRange>>> running;
  {
    MutexLock lock(&mu_);
    for (const auto& [id, hosted] : replicas_) running.emplace_back(id, hosted.range);
  }
  std::vector<metrics::RaftGroupFigures> out;
  for (const auto& [id, range] : running) {
    const raft::RaftStatus s = range->GetStatus();
    metrics::RaftGroupFigures f;
    f.range = id;
    f.leader = s.role == raft::RaftRole::kLeader;
    f.term = s.term;
    f.commit_index = s.commit_index;
    f.applied_index = s.last_applied;  // barriers included: it meets the commit index
    f.last_index = s.last_index;
    for (const auto& [replica, match] : s.follower_match) {
      f.follower_lag.emplace_back(replica, s.last_index > match ? s.last_index - match : 0);
    }
    f.proposals_committed = range->proposals_committed();
    f.proposals_failed = range->proposals_failed();
    f.failed = !s.failure.ok();
    out.push_back(std::move(f));
  }
  return out;
}

std::string ReplicaHost::StartProblem(uint64_t range_id) const {
  MutexLock lock(&mu_);
  auto it = problems_.find(range_id);
  return it == problems_.end() ? "" : it->second;
}

void ReplicaHost::Run() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stop_) return;
    }
    if (std::shared_ptr<const cluster::ShardMap> map = watcher_->current(); map != nullptr) {
      StartMissing(*map);
    }
    MutexLock lock(&mu_);
    if (stop_) return;
    (void)wake_.WaitFor(kStartPeriod);
  }
}

bool ReplicaHost::StartMissing(const cluster::ShardMap& map) {
  std::vector<const cluster::ShardRange*> missing;
  {
    MutexLock lock(&mu_);
    for (const cluster::ShardRange& r : map.ranges()) {
      if (r.ReplicaOn(options_.node) != nullptr && replicas_.count(r.id) == 0) {
        missing.push_back(&r);
      }
    }
  }
  if (missing.empty()) return false;
  auto nodes = cluster::ListNodes(etcd_.get(), options_.cluster);
  if (!nodes.ok()) {
    MutexLock lock(&mu_);
    for (const cluster::ShardRange* r : missing) {
      problems_[r->id] = "cannot read the members' Raft addresses: " + nodes.status().ToString();
    }
    return true;
  }
  std::map<std::string, std::string> raft_addresses;
  for (const cluster::NodeStatus& n : *nodes) {
    if (!n.raft_address.empty()) raft_addresses[n.name] = n.raft_address;
  }
  bool still_missing = false;
  for (const cluster::ShardRange* r : missing) {
    {
      MutexLock lock(&mu_);
      if (stop_) return true;
    }
    Status s = StartReplica(*r, raft_addresses);
    MutexLock lock(&mu_);
    if (s.ok()) {
      problems_.erase(r->id);
      continue;
    }
    still_missing = true;
    // Logged when it changes, not at every attempt.
    std::string& known = problems_[r->id];
    if (known != s.ToString()) {
      known = s.ToString();
      Log(LogLevel::kWarn,
          fmt::format("replica of range {} {} not started: {}", r->id, r->Describe(), known));
    }
  }
  return still_missing;
}

Status ReplicaHost::StartReplica(const cluster::ShardRange& range,
                                 const std::map<std::string, std::string>& raft_addresses) {
  raft::ReplicatedRangeOptions o;
  for (const cluster::RangeReplica& replica : range.replicas) {
    auto address = raft_addresses.find(replica.node);
    if (address == raft_addresses.end()) {
      return Status::Unavailable(fmt::format(
          "node '{}' has not registered a Raft address yet (is it running with cluster.raft?)",
          replica.node));
    }
    o.raft.bootstrap.push_back({replica.id, address->second});
    if (replica.node == options_.node) {
      o.raft.id = replica.id;
      if (address->second != transport_->address()) {
        return Status::FailedPrecondition(fmt::format(
            "etcd has '{}' as this node's Raft address, not {} (the node registers it at start)",
            address->second, transport_->address()));
      }
    }
  }
  o.raft.group = range.id;
  o.raft.transport = transport_.get();
  o.raft.dir = options_.dir + "/" + RangeName(range.id);
  o.raft.election_timeout_ms = options_.raft.election_timeout_ms;
  o.raft.heartbeat_ms = options_.raft.heartbeat_ms;
  o.raft.snapshot_threshold = options_.raft.snapshot_threshold;
  o.raft.snapshot_trailing = options_.raft.snapshot_trailing;
  o.name = RangeName(range.id);
  o.start = range.start;
  o.end = range.end;
  o.max_key_bytes = options_.max_key_bytes;
  o.max_value_bytes = options_.max_value_bytes;
  o.max_batch_bytes = options_.max_batch_bytes;
  o.max_batch_entries = options_.max_batch_entries;
  raft::GrpcRangeSourceOptions so;
  const uint64_t id = range.id;
  so.address = [this, id] { return CopySource(id); };
  auto source = std::make_unique<raft::GrpcRangeSource>(std::move(so));
  o.source = source.get();
  Db* db = nullptr;
  {
    MutexLock lock(&mu_);
    db = db_;
  }
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<raft::ReplicatedRange> started,
                         raft::ReplicatedRange::Start(loop_.get(), o, db));
  std::shared_ptr<raft::ReplicatedRange> shared(std::move(started));
  service_.Add(o.name, shared.get());
  Log(LogLevel::kInfo,
      fmt::format("replica {} of range {} {} started ({} replicas; applied {})", o.raft.id,
                  range.id, range.Describe(), range.replicas.size(), shared->applied()));
  MutexLock lock(&mu_);
  replicas_[range.id] = Hosted{std::move(source), std::move(shared)};
  return Status::Ok();
}

StatusOr<std::string> ReplicaHost::CopySource(uint64_t range_id) {
  std::shared_ptr<const cluster::ShardMap> map = watcher_->current();
  if (map == nullptr) return Status::Unavailable("range copy: no shard map known");
  const cluster::ShardRange* range = nullptr;
  for (const cluster::ShardRange& r : map->ranges()) {
    if (r.id == range_id) range = &r;
  }
  if (range == nullptr) {
    return Status::Unavailable(fmt::format("range copy: range {} is not in the map", range_id));
  }
  std::vector<std::string> others;
  for (const cluster::RangeReplica& replica : range->replicas) {
    if (replica.node != options_.node) others.push_back(replica.node);
  }
  if (others.empty()) {
    return Status::Unavailable(fmt::format("range copy: range {} has no other replica", range_id));
  }
  const std::string& node = others[source_turn_.fetch_add(1) % others.size()];
  GROVE_ASSIGN_OR_RETURN(std::vector<cluster::NodeStatus> nodes,
                         cluster::ListNodes(etcd_.get(), options_.cluster));
  for (const cluster::NodeStatus& n : nodes) {
    if (n.name == node && !n.address.empty()) {
      Log(LogLevel::kInfo, fmt::format("replica of range {} is behind a snapshot: installing "
                                       "the range from node '{}' at {}",
                                       range_id, node, n.address));
      return n.address;
    }
  }
  return Status::Unavailable(fmt::format("range copy: node '{}' has no address in etcd", node));
}

}  // namespace grove::service
