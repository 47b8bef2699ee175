#include "lib/router.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "grove/v1/metadata.h"

#include "cluster/members.h"

namespace grove::client {
namespace {

constexpr char kScheme[] = "etcd://";

bool NotOwner(const grpc::Status& s) { return s.error_code() == grpc::StatusCode::OUT_OF_RANGE; }

grpc::Status FromStatus(const Status& s, const std::string& what) {
  grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE;
  if (s.code() == StatusCode::kInvalidArgument) code = grpc::StatusCode::INVALID_ARGUMENT;
  if (s.code() == StatusCode::kDataLoss) code = grpc::StatusCode::DATA_LOSS;
  if (s.code() == StatusCode::kFailedPrecondition) code = grpc::StatusCode::FAILED_PRECONDITION;
  return grpc::Status(code, what + ": " + s.ToString());
}

// Waits a little before resending to a map that did not change (a switch in progress).
void Pause(int attempt) {
  if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
}

}  // namespace

grpc::Status Router::Create(const ClientOptions& options, std::unique_ptr<Router>* router) {
  std::string_view rest = options.address;
  if (rest.substr(0, sizeof(kScheme) - 1) != kScheme) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "address: not an etcd:// address: '" + options.address + "'");
  }
  rest.remove_prefix(sizeof(kScheme) - 1);
  std::string cluster = "default";
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    cluster = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
  }
  cluster::EtcdOptions eo;
  for (size_t start = 0; start <= rest.size();) {
    const size_t comma = std::min(rest.find(',', start), rest.size());
    if (comma > start) eo.endpoints.emplace_back(rest.substr(start, comma - start));
    start = comma + 1;
  }
  if (eo.endpoints.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "address: etcd://HOST:PORT[,HOST:PORT...][/CLUSTER] names no endpoint");
  }
  if (Status s = cluster::CheckNames(cluster, "x"); !s.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "address: the cluster name: " + s.ToString());
  }
  eo.call_timeout_seconds = std::chrono::duration<double>(options.timeout).count();
  eo.ca_file = options.etcd_ca_file;
  eo.cert_file = options.etcd_cert_file;
  eo.key_file = options.etcd_key_file;
  auto etcd = cluster::EtcdClient::Create(eo);
  if (!etcd.ok()) {
    const bool tls = !(eo.ca_file.empty() && eo.cert_file.empty() && eo.key_file.empty());
    return FromStatus(etcd.status(), tls ? "etcd TLS options" : "address");
  }
  ClientOptions node = options;
  node.address.clear();
  router->reset(new Router(std::move(node), std::move(cluster), std::move(*etcd)));
  return grpc::Status::OK;
}

Router::Router(ClientOptions node_options, std::string cluster,
               std::unique_ptr<cluster::EtcdClient> etcd)
    : node_options_(std::move(node_options)),
      cluster_(std::move(cluster)),
      etcd_(std::move(etcd)),
      stale_reads_(
          std::any_of(node_options_.metadata.begin(), node_options_.metadata.end(),
                      [](const auto& kv) { return kv.first == v1::kMaxStalenessMetadata; })) {}

grpc::Status Router::Current(std::shared_ptr<const View>* view) {
  {
    MutexLock lock(&mu_);
    if (view_ != nullptr) {
      *view = view_;
      return grpc::Status::OK;
    }
  }
  grpc::Status s = Refresh(nullptr);
  if (!s.ok()) return s;
  MutexLock lock(&mu_);
  *view = view_;
  return grpc::Status::OK;
}

grpc::Status Router::Refresh(const std::shared_ptr<const View>& seen) {
  MutexLock refresh(&refresh_mu_);
  {
    MutexLock lock(&mu_);
    if (view_ != seen) return grpc::Status::OK;  // another thread read it meanwhile
  }
  auto stored = cluster::ReadShardMap(etcd_.get(), cluster_);
  if (!stored.ok()) return FromStatus(stored.status(), "reading the shard map");
  if (!*stored) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "cluster '" + cluster_ + "' has no shard map (grovectl cluster init)");
  }
  auto nodes = cluster::ListNodes(etcd_.get(), cluster_);
  if (!nodes.ok()) return FromStatus(nodes.status(), "reading the cluster's members");
  auto view = std::make_shared<View>();
  view->map = std::make_shared<const cluster::ShardMap>(std::move((*stored)->map));
  for (const cluster::NodeStatus& n : *nodes) view->addresses[n.name] = n.address;
  MutexLock lock(&mu_);
  if (view_ != nullptr && view_->map->version() > view->map->version()) return grpc::Status::OK;
  view_ = std::move(view);
  for (auto& [address, c] : clients_) c->routed_map_version_.store(view_->map->version());
  return grpc::Status::OK;
}

grpc::Status Router::NodeClient(const View& view, const std::string& owner, Client** client) {
  auto it = view.addresses.find(owner);
  if (it == view.addresses.end() || it->second.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "node '" + owner + "' owns a range but has never registered an address");
  }
  MutexLock lock(&mu_);
  std::unique_ptr<Client>& c = clients_[it->second];
  if (c == nullptr) {
    ClientOptions o = node_options_;
    o.address = it->second;
    // Unary: each call carries the map version it was routed by (a stream's metadata is fixed
    // when it opens).
    o.transport = ClientOptions::Transport::kUnary;
    if (view.map->replication_factor() > 0) {
      // Replicated ranges: the router tries the next replica rather than the same one again.
      o.max_attempts = 1;
      o.connect_timeout = std::min(o.connect_timeout, std::chrono::milliseconds(250));
    }
    grpc::Status s = Client::Create(o, &c);
    if (!s.ok()) {
      clients_.erase(it->second);
      return s;
    }
    c->routed_map_version_.store(view.map->version());
  }
  *client = c.get();
  return grpc::Status::OK;
}

std::string Router::Target(const cluster::ShardRange& range, bool read) {
  if (!range.replicated()) return range.owner;
  if (read && stale_reads_) {
    return range
        .replicas[read_turn_.fetch_add(1, std::memory_order_relaxed) % range.replicas.size()]
        .node;
  }
  MutexLock lock(&mu_);
  auto it = leaders_.find(range.id);
  if (it != leaders_.end() && range.ReplicaOn(it->second) != nullptr) return it->second;
  return range.owner;
}

void Router::Observe(const cluster::ShardRange& range, const std::string& tried,
                     const grpc::Status& status, bool read) {
  if (!range.replicated() || (read && stale_reads_ && status.ok())) return;
  const bool missed = status.error_code() == grpc::StatusCode::OUT_OF_RANGE ||
                      status.error_code() == grpc::StatusCode::UNAVAILABLE;
  MutexLock lock(&mu_);
  if (!missed) {
    leaders_[range.id] = tried;
    return;
  }
  const std::vector<cluster::RangeReplica>& replicas = range.replicas;
  size_t next = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i].node == tried) next = (i + 1) % replicas.size();
  }
  leaders_[range.id] = replicas[next].node;
}

grpc::Status Router::ForKey(std::string_view key, bool read,
                            const std::function<grpc::Status(Client*)>& call) {
  grpc::Status s;
  // A replicated range's calls go on from replica to replica while its leader is being found
  // (an election, a replica down), for up to one call timeout.
  const auto replicated_deadline = std::chrono::steady_clock::now() + node_options_.timeout;
  int replicated_misses = 0;
  for (int attempt = 0; attempt < kRouteAttempts;) {
    std::shared_ptr<const View> view;
    if (s = Current(&view); !s.ok()) return s;
    Client* c = nullptr;
    const cluster::ShardRange& range = view->map->Find(key);
    const std::string target = Target(range, read);
    if (s = NodeClient(*view, target, &c); !s.ok()) return s;
    s = call(c);
    Observe(range, target, s, read);
    if (range.replicated() && s.error_code() == grpc::StatusCode::UNAVAILABLE &&
        (read || NotApplied(s)) && std::chrono::steady_clock::now() < replicated_deadline) {
      // Another replica may lead; past the first round, give an election time.
      if (++replicated_misses >= static_cast<int>(range.replicas.size())) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(
            200, 10 << std::min(replicated_misses - static_cast<int>(range.replicas.size()), 4))));
      }
      continue;
    }
    if (!NotOwner(s)) return s;
    if (range.replicated() && ++replicated_misses < 2 * static_cast<int>(range.replicas.size())) {
      continue;  // not the leader: the next replica, without reading the map
    }
    ++attempt;
    Pause(attempt > 1 ? attempt - 1 : 0);
    if (grpc::Status r = Refresh(view); !r.ok()) return r;
  }
  return s;
}

grpc::Status Router::Get(std::string_view key, std::string* value, bool* found, ValueInfo* info) {
  return ForKey(key, /*read=*/true, [&](Client* c) { return c->Get(key, value, found, info); });
}

grpc::Status Router::Put(std::string_view key, std::string_view value, const WriteOptions& options,
                         WriteOutcome* outcome) {
  return ForKey(key, /*read=*/false,
                [&](Client* c) { return c->Put(key, value, options, outcome); });
}

grpc::Status Router::Delete(std::string_view key, const WriteOptions& options,
                            WriteOutcome* outcome) {
  return ForKey(key, /*read=*/false, [&](Client* c) { return c->Delete(key, options, outcome); });
}

grpc::Status Router::BatchGet(const std::vector<std::string>& keys,
                              std::vector<std::optional<std::string>>* values) {
  grpc::Status s;
  for (int attempt = 0; attempt < kRouteAttempts; ++attempt) {
    Pause(attempt > 1 ? attempt - 1 : 0);
    std::shared_ptr<const View> view;
    if (s = Current(&view); !s.ok()) return s;
    std::map<std::string, std::vector<size_t>> by_owner;
    for (size_t i = 0; i < keys.size(); ++i) {
      by_owner[Target(view->map->Find(keys[i]), /*read=*/true)].push_back(i);
    }
    values->assign(keys.size(), std::nullopt);
    bool rerouted = false;
    for (const auto& [owner, indexes] : by_owner) {
      Client* c = nullptr;
      if (s = NodeClient(*view, owner, &c); !s.ok()) return s;
      std::vector<std::string> part;
      for (size_t i : indexes) part.push_back(keys[i]);
      std::vector<std::optional<std::string>> got;
      s = c->BatchGet(part, &got);
      for (size_t i : indexes) Observe(view->map->Find(keys[i]), owner, s, /*read=*/true);
      if (NotOwner(s)) {
        rerouted = true;
        break;
      }
      if (!s.ok()) return s;
      for (size_t j = 0; j < indexes.size(); ++j) (*values)[indexes[j]] = std::move(got[j]);
    }
    if (!rerouted) return grpc::Status::OK;
    if (grpc::Status r = Refresh(view); !r.ok()) return r;
  }
  return s;
}

grpc::Status Router::BatchInsert(const std::vector<Mutation>& mutations, WriteOutcome* outcome) {
  const std::string first = mutations.empty() ? std::string() : mutations[0].key;
  return ForKey(first, /*read=*/false, [&](Client* c) -> grpc::Status {
    std::shared_ptr<const View> view;
    if (grpc::Status s = Current(&view); !s.ok()) return s;
    const cluster::ShardMap& m = *view->map;
    const size_t range = m.IndexOf(first);
    for (size_t i = 1; i < mutations.size(); ++i) {
      if (m.IndexOf(mutations[i].key) != range) {
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            "mutations[" + std::to_string(i) + "].key is in shard range " +
                m.Find(mutations[i].key).Describe() + ", mutations[0].key in " +
                m.ranges()[range].Describe() +
                ": a BatchInsert is atomic only within one range; send one batch per range "
                "(grovectl cluster status lists them)");
      }
    }
    return c->BatchInsert(mutations, outcome);
  });
}

grpc::Status Router::Scan(const ScanRange& range, const ScanEntryVisitor& visit) {
  ScanRange part = range;
  uint64_t delivered = 0;
  std::string last;
  bool any = false;
  const ScanEntryVisitor counting = [&](std::string_view k, std::string_view v, uint64_t e) {
    ++delivered;
    last.assign(k.data(), k.size());
    any = true;
    return visit(k, v, e);
  };
  int attempt = 0;
  while (true) {
    std::shared_ptr<const View> view;
    if (grpc::Status s = Current(&view); !s.ok()) return s;
    const cluster::ShardMap& m = *view->map;
    size_t i = m.ranges().size() - 1;  // a reverse scan without an end starts in the last range
    if (!range.reverse) {
      i = m.IndexOf(part.start);
    } else if (!part.end.empty()) {
      i = m.IndexOf(part.end);
      if (m.ranges()[i].start == part.end && i > 0) --i;
    }
    Client* c = nullptr;
    const std::string target = Target(m.ranges()[i], /*read=*/true);
    if (grpc::Status s = NodeClient(*view, target, &c); !s.ok()) return s;
    part.limit = range.limit == 0 ? 0 : range.limit - delivered;
    std::string stopped_at;
    bool visitor_stopped = false;
    any = false;
    grpc::Status s = c->ScanNode(part, counting, &stopped_at, &visitor_stopped);
    Observe(m.ranges()[i], target, s, /*read=*/true);
    if (NotOwner(s)) {
      if (++attempt >= kRouteAttempts) return s;
      // Resume after what this node delivered before it refused (the range moved meanwhile).
      if (any) {
        if (range.reverse) {
          part.end = last;
        } else {
          part.start = last + '\0';
        }
      }
      if (grpc::Status r = Refresh(view); !r.ok()) return r;
      Pause(attempt - 1);
      continue;
    }
    if (!s.ok() || visitor_stopped) return s;
    if (range.limit != 0 && delivered >= range.limit) return grpc::Status::OK;
    if (stopped_at.empty()) return grpc::Status::OK;  // the node's range held the rest
    attempt = 0;
    if (range.reverse) {
      part.end = stopped_at;
    } else {
      part.start = stopped_at;
    }
  }
}

grpc::Status Router::DeleteRange(std::string_view start, std::string_view end, uint32_t limit,
                                 DeleteRangeOutcome* outcome) {
  // Copied first: `start` or `end` may point into *outcome (a caller resuming from resume_key).
  std::string cursor(start);
  const std::string end_copy(end);
  end = end_copy;
  *outcome = DeleteRangeOutcome{};
  int attempt = 0;
  while (true) {
    std::shared_ptr<const View> view;
    if (grpc::Status s = Current(&view); !s.ok()) return s;
    const cluster::ShardRange& r = view->map->Find(cursor);
    std::string part_end(end);
    bool last_part = true;
    if (!r.end.empty() && (end.empty() || std::string_view(r.end) < end)) {
      part_end = r.end;
      last_part = false;
    }
    Client* c = nullptr;
    const std::string target = Target(r);
    if (grpc::Status s = NodeClient(*view, target, &c); !s.ok()) return s;
    const uint32_t part_limit =
        limit == 0 ? 0 : static_cast<uint32_t>(limit - std::min<uint64_t>(limit, outcome->deleted));
    DeleteRangeOutcome part;
    grpc::Status s = c->DeleteRange(cursor, part_end, part_limit, &part);
    Observe(r, target, s);
    if (NotOwner(s)) {
      if (++attempt >= kRouteAttempts) return s;
      if (grpc::Status rr = Refresh(view); !rr.ok()) return rr;
      Pause(attempt - 1);
      continue;
    }
    if (!s.ok()) {
      // The parts before this one are deleted: say where to go on.
      outcome->more = true;
      outcome->resume_key = cursor;
      return s;
    }
    attempt = 0;
    outcome->deleted += part.deleted;
    outcome->version = std::max(outcome->version, part.version);
    if (part.more) {
      outcome->more = true;
      outcome->resume_key = part.resume_key;
      outcome->limited_by = part.limited_by;
      return grpc::Status::OK;
    }
    if (last_part) return grpc::Status::OK;
    cursor = part_end;
    if (limit != 0 && outcome->deleted >= limit) {
      outcome->more = true;
      outcome->resume_key = cursor;
      outcome->limited_by = "limit";
      return grpc::Status::OK;
    }
  }
}

grpc::Status Router::NodeStats(std::vector<std::pair<std::string, v1::StatsResponse>>* stats) {
  std::shared_ptr<const View> view;
  if (grpc::Status s = Current(&view); !s.ok()) return s;
  std::set<std::string> owners;
  for (const cluster::ShardRange& r : view->map->ranges()) owners.insert(r.owner);
  stats->clear();
  for (const std::string& owner : owners) {
    Client* c = nullptr;
    if (grpc::Status s = NodeClient(*view, owner, &c); !s.ok()) return s;
    v1::StatsResponse one;
    if (grpc::Status s = c->Stats(&one); !s.ok()) return s;
    stats->emplace_back(owner, std::move(one));
  }
  return grpc::Status::OK;
}

}  // namespace grove::client
