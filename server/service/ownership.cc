#include "service/ownership.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "grove/v1/metadata.h"

namespace grove::service {

struct Ownership::Generation {
  std::shared_ptr<const cluster::ShardMap> map;
  uint64_t writes = 0;   // tickets of writes admitted under this map and not finished
  bool retired = false;  // a newer map is in force; `writes` count in retired_writes_ too
};

namespace {

// Whether `previous` let this node write keys that `next` does not (a range given away, or
// fenced for a move's switch).
bool Loses(const cluster::ShardMap& previous, const cluster::ShardMap& next,
           const std::string& node) {
  for (const cluster::ShardRange& r : previous.OwnedBy(node)) {
    if (r.fenced) continue;
    // Every range of `next` that overlaps r must be this node's too, and writable.
    for (size_t i = next.IndexOf(r.start); i < next.ranges().size(); ++i) {
      const cluster::ShardRange& n = next.ranges()[i];
      if (!r.end.empty() && n.start >= r.end) break;
      if (!n.ServedBy(node) || n.fenced) return true;
    }
  }
  return false;
}

}  // namespace

Ownership::Ownership(cluster::ShardMapWatcher* watcher, std::string cluster, std::string node,
                     metrics::ClusterMetrics* metrics)
    : watcher_(watcher),
      cluster_(std::move(cluster)),
      node_(std::move(node)),
      metrics_(metrics),
      token_rng_(std::random_device{}()) {}

Ownership::~Ownership() = default;

grpc::Status Ownership::Admit(CallMetadata* md, bool write, Ticket* ticket) {
  const uint64_t wanted = md->ClientNumber(v1::kMapVersionMetadata);
  ticket->ingest_ = md->ClientNumber(v1::kMoveIngestMetadata);
  ticket->drop_foreign_ = md->ClientNumber(v1::kDropForeignMetadata) == 1;
  std::shared_ptr<Generation> g;
  {
    MutexLock lock(&mu_);
    g = current_;
  }
  if (g == nullptr || (wanted > 0 && g->map->version() < wanted)) {
    watcher_->RefreshTo(wanted);  // publishes through AfterPublish
  }
  MutexLock lock(&mu_);
  if (current_ == nullptr) {
    md->AddTrailer(v1::kNotAppliedMetadata, "1");
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        fmt::format("cluster '{}': no shard map known yet (etcd unreachable since "
                                    "this node started, or no map: grovectl cluster init)",
                                    cluster_));
  }
  ticket->owner_ = this;
  ticket->generation_ = current_;
  ticket->write_ = write;
  if (write) ++current_->writes;
  return grpc::Status::OK;
}

Ownership::Ticket::~Ticket() {
  if (!write_ || generation_ == nullptr) return;
  Ownership* o = const_cast<Ownership*>(owner_);
  MutexLock lock(&o->mu_);
  --generation_->writes;
  if (generation_->retired && --o->retired_writes_ == 0) o->drained_.SignalAll();
}

const cluster::ShardMap* Ownership::Ticket::map() const {
  return generation_ == nullptr ? nullptr : generation_->map.get();
}

grpc::Status Ownership::Ticket::NotOwner(CallMetadata* md, const cluster::ShardRange& range,
                                         std::string_view what) const {
  const uint64_t version = generation_->map->version();
  md->AddTrailer(v1::kNotOwnerMetadata, "1");
  md->AddTrailer(v1::kMapVersionMetadata, std::to_string(version));
  if (owner_->metrics_ != nullptr) owner_->metrics_->NotOwner();
  if (range.replicated()) {
    std::string nodes;
    for (const cluster::RangeReplica& r : range.replicas) {
      nodes += (nodes.empty() ? "'" : ", '") + r.node + "'";
    }
    return grpc::Status(
        grpc::StatusCode::OUT_OF_RANGE,
        fmt::format("not owner: {} is in range {} replicated on {} (owner '{}') at shard map "
                    "version {}, not on '{}'; refresh the map and send it there",
                    what, range.Describe(), nodes, range.owner, version, owner_->node_));
  }
  return grpc::Status(
      grpc::StatusCode::OUT_OF_RANGE,
      fmt::format("not owner: {} is in range {} owned by node '{}' at shard map version {}, not "
                  "by '{}'; refresh the map and send it there",
                  what, range.Describe(), range.owner, version, owner_->node_));
}

grpc::Status Ownership::Ticket::CheckKey(CallMetadata* md, std::string_view key,
                                         std::string_view field) const {
  const cluster::ShardRange& r = generation_->map->Find(key);
  if (r.ServedBy(owner_->node_)) {
    if (write_ && r.fenced) return Switching(md, r);
    return grpc::Status::OK;
  }
  if (write_ && ingest_ != 0 && r.moving_to == owner_->node_ && r.move_id == ingest_) {
    return grpc::Status::OK;  // the copy of a range this node receives
  }
  return NotOwner(md, r, fmt::format("{} '{}'", field, cluster::PrintableKey(key)));
}

grpc::Status Ownership::Ticket::Switching(CallMetadata* md,
                                          const cluster::ShardRange& range) const {
  md->AddTrailer(v1::kNotAppliedMetadata, "1");
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      fmt::format("range {} is switching to node '{}' (move {}); nothing was "
                                  "applied: retry in a moment",
                                  range.Describe(), range.moving_to, range.move_id));
}

grpc::Status Ownership::Ticket::CheckSpan(CallMetadata* md, std::string_view start,
                                          std::string_view end) const {
  const cluster::ShardMap& m = *generation_->map;
  const std::string& me = owner_->node_;
  const std::string what = fmt::format("part of [{}, {})", cluster::PrintableKey(start),
                                       cluster::PrintableKey(end, true));
  for (size_t i = m.IndexOf(start); i < m.ranges().size(); ++i) {
    const cluster::ShardRange& r = m.ranges()[i];
    if (!end.empty() && r.start >= end) break;
    if (drop_foreign_) {
      if (r.ServedBy(me) || r.moving_to == me) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            fmt::format("grove-drop-foreign: {} is in range {}, which this node "
                                        "{}; it drops only keys it neither owns nor receives",
                                        what, r.Describe(), r.ServedBy(me) ? "owns" : "receives"));
      }
      continue;
    }
    if (r.ServedBy(me)) {
      if (r.fenced) return Switching(md, r);
      if (r.moving()) {
        md->AddTrailer(v1::kNotAppliedMetadata, "1");
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("{} is in range {}, which is moving to node '{}': a "
                                        "DeleteRange there waits for the move; retry later",
                                        what, r.Describe(), r.moving_to));
      }
      continue;
    }
    if (ingest_ != 0 && r.moving_to == me && r.move_id == ingest_) continue;
    return NotOwner(md, r, what);
  }
  return grpc::Status::OK;
}

grpc::Status Ownership::Ticket::ClipScan(CallMetadata* md, bool reverse, std::string* lower,
                                         std::string* upper, bool* has_upper,
                                         std::string* stopped_at) const {
  const cluster::ShardMap& m = *generation_->map;
  stopped_at->clear();
  if (!reverse) {
    const cluster::ShardRange& r = m.Find(*lower);
    if (!r.ServedBy(owner_->node_)) {
      return NotOwner(md, r, fmt::format("scan start '{}'", cluster::PrintableKey(*lower)));
    }
    if (!r.end.empty() && (!*has_upper || *upper > r.end)) {
      *upper = r.end;
      *has_upper = true;
      *stopped_at = r.end;
    }
    return grpc::Status::OK;
  }
  // A reverse scan begins with the largest key below its end: in the last range without an
  // end, else in the range holding `upper` unless `upper` starts it (then the one before).
  size_t i = m.ranges().size() - 1;
  if (*has_upper) {
    i = m.IndexOf(*upper);
    if (m.ranges()[i].start == *upper && i > 0) --i;
  }
  const cluster::ShardRange& r = m.ranges()[i];
  if (!r.ServedBy(owner_->node_)) {
    return NotOwner(md, r,
                    fmt::format("reverse scan end '{}'", cluster::PrintableKey(*upper, true)));
  }
  if (*lower < r.start) {
    *lower = r.start;
    *stopped_at = r.start;
  }
  return grpc::Status::OK;
}

void Ownership::BeforePublish(const cluster::ShardMap* previous, const cluster::ShardMap& next) {
  MutexLock lock(&mu_);
  losing_ = previous != nullptr && Loses(*previous, next, node_);
}

void Ownership::AfterPublish(const cluster::ShardMap& map) {
  auto next = std::make_shared<Generation>();
  next->map = std::make_shared<const cluster::ShardMap>(map);
  MutexLock lock(&mu_);
  std::shared_ptr<Generation> old = current_;
  current_ = next;
  if (old != nullptr) {
    old->retired = true;
    retired_writes_ += old->writes;
  }
  // A record of changes for every move of a range this node owns; a new one (new token) when
  // this node has none for that move (it restarted, or the move restarted).
  std::map<uint64_t, ChangeRecord> records;
  for (const cluster::ShardRange& r : map.OwnedBy(node_)) {
    if (!r.moving()) continue;
    auto it = records_.find(r.move_id);
    if (it != records_.end()) {
      records[r.move_id] = std::move(it->second);
    } else {
      records[r.move_id].token = token_rng_() | 1;
    }
  }
  records_ = std::move(records);
  if (metrics_ != nullptr) {
    metrics_->SetMap(map.version(), map.OwnedBy(node_).size());
    metrics_->SetMoves(records_.size(), RecordedKeysLocked());
  }
  if (losing_) {
    // Fence: the writes decided by any older map finish before anyone relies on the change.
    while (retired_writes_ != 0) drained_.Wait();
  }
  settled_version_ = std::max(settled_version_, map.version());
  drained_.SignalAll();
}

size_t Ownership::RecordedKeysLocked() const {
  size_t n = 0;
  for (const auto& [id, record] : records_) n += record.keys.size();
  return n;
}

void Ownership::RecordWrites(const std::vector<std::string_view>& keys) {
  MutexLock lock(&mu_);
  if (records_.empty() || current_ == nullptr) return;
  const cluster::ShardMap& m = *current_->map;
  bool changed = false;
  for (std::string_view key : keys) {
    const cluster::ShardRange& r = m.Find(key);
    if (r.owner != node_ || !r.moving()) continue;
    auto it = records_.find(r.move_id);
    if (it == records_.end()) continue;
    ChangeRecord& record = it->second;
    record.keys.emplace(key);
    changed = true;
    if (record.keys.size() > kMaxRecordedKeys) {
      // Too many changes to keep: a new record under a new token makes the mover start over.
      record.keys.clear();
      record.token = token_rng_() | 1;
    }
  }
  if (changed && metrics_ != nullptr) metrics_->SetMoves(records_.size(), RecordedKeysLocked());
}

grpc::Status Ownership::TakeChanges(CallMetadata* md, uint64_t move_id, uint64_t token,
                                    uint32_t max_keys, v1::MoveChangesResponse* response) {
  const uint64_t wanted = md->ClientNumber(v1::kMapVersionMetadata);
  if (wanted > 0) watcher_->RefreshTo(wanted);
  MutexLock lock(&mu_);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (wanted > 0 && settled_version_ < wanted && drained_.WaitUntil(give_up)) {
  }
  if (wanted > 0 && settled_version_ < wanted) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        fmt::format("node '{}' has not settled shard map version {} (it has {}): "
                                    "etcd unreachable, or writes still draining",
                                    node_, wanted, settled_version_));
  }
  auto it = records_.find(move_id);
  if (it == records_.end()) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        fmt::format("move_id: node '{}' records no move {} (it does not own a "
                    "range moving under that id at shard map version {})",
                    node_, move_id, current_ == nullptr ? 0 : current_->map->version()));
  }
  ChangeRecord& record = it->second;
  if (token != 0 && token != record.token) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        fmt::format("token: node '{}' restarted its record of move {} since "
                                    "token {} (the node restarted or the record overflowed): "
                                    "copy the range again",
                                    node_, move_id, token));
  }
  response->set_token(record.token);
  response->set_map_version(current_->map->version());
  auto k = record.keys.begin();
  for (uint32_t n = 0; n < max_keys && k != record.keys.end(); ++n) {
    response->add_keys(*k);
    k = record.keys.erase(k);
  }
  response->set_remaining(record.keys.size());
  if (metrics_ != nullptr) metrics_->SetMoves(records_.size(), RecordedKeysLocked());
  return grpc::Status::OK;
}

}  // namespace grove::service
