#include "service/replica_host.h"

#include <charconv>
#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cluster/members.h"
#include "cluster/shard_map.h"

namespace grove::service {
namespace {

constexpr std::chrono::milliseconds kStartPeriod{250};

// How long a removed replica's drop waits for the calls still holding it.
constexpr std::chrono::seconds kReleaseWait{30};

std::string RangeName(uint64_t range_id) { return raft::ReplicatedRangeName(range_id); }
// A replica's directory under cluster.raft's dir: range-<range id>.<replica id>.
std::string ReplicaDirName(uint64_t range_id, uint64_t replica_id) {
  return RangeName(range_id) + "." + std::to_string(replica_id);
}
// The ids a directory name holds, or false when it is not a replica's.
bool ParseReplicaDir(const std::string& name, uint64_t* range_id, uint64_t* replica_id) {
  constexpr std::string_view kPrefix = "range-";
  if (name.rfind(kPrefix, 0) != 0) return false;
  const size_t dot = name.find('.', kPrefix.size());
  if (dot == std::string::npos) return false;
  const char* first = name.data() + kPrefix.size();
  auto a = std::from_chars(first, name.data() + dot, *range_id);
  auto b = std::from_chars(name.data() + dot + 1, name.data() + name.size(), *replica_id);
  return a.ec == std::errc() && a.ptr == name.data() + dot && b.ec == std::errc() &&
         b.ptr == name.data() + name.size();
}
// Whether `dir` holds Raft state (a log, metadata, snapshots).
bool HoldsRaftState(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) && !std::filesystem::is_empty(dir, ec);
}

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
    f.barrier_reads = range->barrier_reads();
    f.barriers = range->barriers();
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
  bool swept = false;
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stop_) return;
    }
    if (std::shared_ptr<const cluster::ShardMap> map = watcher_->current(); map != nullptr) {
      if (!swept) {
        DropLeftovers(*map);
        swept = true;
      }
      Reconcile(*map);
    }
    MutexLock lock(&mu_);
    if (stop_) return;
    (void)wake_.WaitFor(kStartPeriod);
  }
}

void ReplicaHost::Reconcile(const cluster::ShardMap& map) {
  std::vector<const cluster::ShardRange*> missing;
  std::vector<Hosted> gone;
  {
    MutexLock lock(&mu_);
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      const cluster::ShardRange* listed = map.RangeWithId(it->first);
      const cluster::RangeReplica* mine =
          listed == nullptr ? nullptr : listed->ReplicaOn(options_.node);
      if (mine != nullptr && mine->id == it->second.range->replica_id()) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second));
      it = replicas_.erase(it);
    }
    for (const cluster::ShardRange& r : map.ranges()) {
      if (r.ReplicaOn(options_.node) != nullptr && replicas_.count(r.id) == 0) {
        missing.push_back(&r);
      }
    }
  }
  for (Hosted& hosted : gone) StopAndDrop(std::move(hosted));
  if (missing.empty()) return;
  auto nodes = cluster::ListNodes(etcd_.get(), options_.cluster);
  if (!nodes.ok()) {
    MutexLock lock(&mu_);
    for (const cluster::ShardRange* r : missing) {
      problems_[r->id] = "cannot read the members' Raft addresses: " + nodes.status().ToString();
    }
    return;
  }
  std::map<std::string, std::string> raft_addresses;
  for (const cluster::NodeStatus& n : *nodes) {
    if (!n.raft_address.empty()) raft_addresses[n.name] = n.raft_address;
  }
  for (const cluster::ShardRange* r : missing) {
    {
      MutexLock lock(&mu_);
      if (stop_) return;
    }
    Status s = StartReplica(*r, raft_addresses);
    MutexLock lock(&mu_);
    if (s.ok()) {
      problems_.erase(r->id);
      continue;
    }
    // Logged when it changes, not at every attempt.
    std::string& known = problems_[r->id];
    if (known != s.ToString()) {
      known = s.ToString();
      Log(LogLevel::kWarn,
          fmt::format("replica of range {} {} not started: {}", r->id, r->Describe(), known));
    }
  }
}

void ReplicaHost::StopAndDrop(Hosted hosted) {
  raft::ReplicatedRangeOptions& o = hosted.options;
  o.end = hosted.range->end();  // a split narrowed it: the keys past it are another range's
  service_.Remove(o.name);
  if (Status s = hosted.range->Close(); !s.ok()) {
    Log(LogLevel::kWarn,
        fmt::format("closing the removed replica {} of {}: {}", o.raft.id, o.name, s.ToString()));
  }
  // Calls that found the replica before it left may still read its keys: they go first.
  const auto give_up = std::chrono::steady_clock::now() + kReleaseWait;
  while (hosted.range.use_count() > 1 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  hosted.range.reset();
  Db* db = nullptr;
  {
    MutexLock lock(&mu_);
    db = db_;
  }
  Status dropped = raft::ReplicatedRange::DropLocal(db, o);
  std::error_code ec;
  if (dropped.ok()) std::filesystem::remove_all(o.raft.dir, ec);
  if (!dropped.ok() || ec) {
    Log(LogLevel::kWarn,
        fmt::format("replica {} of {} left the group, but its copy here stays until groved "
                    "restarts: {}",
                    o.raft.id, o.name, !dropped.ok() ? dropped.ToString() : ec.message()));
    return;
  }
  Log(LogLevel::kInfo,
      fmt::format("replica {} of {} is no longer in the shard map: stopped, its keys and Raft log "
                  "here dropped",
                  o.raft.id, o.name));
}

void ReplicaHost::DropLeftovers(const cluster::ShardMap& map) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  for (const std::string& name : names) {
    uint64_t range_id = 0, replica_id = 0;
    if (!ParseReplicaDir(name, &range_id, &replica_id)) continue;
    const cluster::ShardRange* range = map.RangeWithId(range_id);
    const cluster::RangeReplica* mine =
        range == nullptr ? nullptr : range->ReplicaOn(options_.node);
    if (mine != nullptr && mine->id == replica_id) continue;
    Status dropped;
    // The range's keys here belong to no replica unless the map lists another one on this node
    // (which installs the range before it serves).
    if (range != nullptr && mine == nullptr) {
      raft::ReplicatedRangeOptions o = Options(*range, replica_id);
      Db* db = nullptr;
      {
        MutexLock lock(&mu_);
        db = db_;
      }
      dropped = raft::ReplicatedRange::DropLocal(db, o);
    }
    if (dropped.ok()) std::filesystem::remove_all(options_.dir + "/" + name, ec);
    Log(dropped.ok() && !ec ? LogLevel::kInfo : LogLevel::kWarn,
        fmt::format("replica {} of range {} is not in the shard map for this node: {}", replica_id,
                    range_id,
                    !dropped.ok() ? "keeping its copy: " + dropped.ToString()
                    : ec          ? "removing its Raft log: " + ec.message()
                                  : "its copy here dropped"));
  }
}

raft::ReplicatedRangeOptions ReplicaHost::Options(const cluster::ShardRange& range,
                                                  uint64_t replica_id) const {
  raft::ReplicatedRangeOptions o;
  o.raft.group = range.id;
  o.raft.id = replica_id;
  o.raft.transport = transport_.get();
  o.raft.dir = options_.dir + "/" + ReplicaDirName(range.id, replica_id);
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
  o.from_split = range.from_split;
  return o;
}

Status ReplicaHost::StartReplica(const cluster::ShardRange& range,
                                 const std::map<std::string, std::string>& raft_addresses) {
  const cluster::RangeReplica* mine = range.ReplicaOn(options_.node);
  if (mine == nullptr) return Status::Internal("not a replica of this node");
  raft::ReplicatedRangeOptions o = Options(range, mine->id);
  for (const cluster::RangeReplica& replica : range.replicas) {
    auto address = raft_addresses.find(replica.node);
    if (address == raft_addresses.end()) {
      if (range.reconfigured && replica.node != options_.node) continue;  // not needed to join
      return Status::Unavailable(fmt::format(
          "node '{}' has not registered a Raft address yet (is it running with cluster.raft?)",
          replica.node));
    }
    // A group changed since it was created is joined, not bootstrapped: the leader brings a
    // replica without state its configuration.
    if (!range.reconfigured) o.raft.bootstrap.push_back({replica.id, address->second});
    if (replica.node == options_.node && address->second != transport_->address()) {
      return Status::FailedPrecondition(fmt::format(
          "etcd has '{}' as this node's Raft address, not {} (the node registers it at start)",
          address->second, transport_->address()));
    }
  }
  Db* db = nullptr;
  {
    MutexLock lock(&mu_);
    db = db_;
  }
  // Groups created before replica ids named the directories kept their log in range-<id>.
  const std::string legacy = options_.dir + "/" + RangeName(range.id);
  std::error_code ec;
  if (!HoldsRaftState(o.raft.dir) && HoldsRaftState(legacy)) {
    std::filesystem::rename(legacy, o.raft.dir, ec);
    if (ec) {
      return Status::Unavailable(
          fmt::format("renaming {} to {}: {}", legacy, o.raft.dir, ec.message()));
    }
  }
  // A replica without Raft state goes on from the state the engine holds of its group (its
  // applied mark: a lost log's, or a split's first state); keys of the range without one are
  // no state of the group's, and go before the group brings the range.
  if (!HoldsRaftState(o.raft.dir)) {
    GROVE_ASSIGN_OR_RETURN(const bool holds, raft::ReplicatedRange::HoldsState(db, o.name));
    if (!holds) GROVE_RETURN_IF_ERROR(raft::ReplicatedRange::DropLocal(db, o));
  }
  raft::GrpcRangeSourceOptions so;
  const uint64_t id = range.id;
  so.address = [this, id] { return CopySource(id); };
  auto source = std::make_unique<raft::GrpcRangeSource>(std::move(so));
  o.source = source.get();
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<raft::ReplicatedRange> started,
                         raft::ReplicatedRange::Start(loop_.get(), o, db));
  std::shared_ptr<raft::ReplicatedRange> shared(std::move(started));
  service_.Add(o.name, shared.get());
  Log(LogLevel::kInfo,
      fmt::format("replica {} of range {} {} started ({} replicas{}; applied {})", o.raft.id,
                  range.id, range.Describe(), range.replicas.size(),
                  range.reconfigured ? ", joining the group" : "", shared->applied()));
  MutexLock lock(&mu_);
  replicas_[range.id] = Hosted{std::move(source), std::move(shared), o};
  return Status::Ok();
}

StatusOr<std::string> ReplicaHost::CopySource(uint64_t range_id) {
  std::shared_ptr<const cluster::ShardMap> map = watcher_->current();
  if (map == nullptr) return Status::Unavailable("range copy: no shard map known");
  const cluster::ShardRange* range = map->RangeWithId(range_id);
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
