#include "service/ownership.h"

#include <fmt/format.h>

#include "grove/v1/metadata.h"

namespace grove::service {

struct Ownership::Generation {
  std::shared_ptr<const cluster::ShardMap> map;
  uint64_t writes = 0;   // tickets of writes admitted under this map and not finished
  bool retired = false;  // a newer map is in force; `writes` count in retired_writes_ too
};

namespace {

// Whether `previous` gave this node a key range that `next` does not.
bool Loses(const cluster::ShardMap& previous, const cluster::ShardMap& next,
           const std::string& node) {
  for (const cluster::ShardRange& r : previous.OwnedBy(node)) {
    // Every range of `next` that overlaps r must be this node's too.
    for (size_t i = next.IndexOf(r.start); i < next.ranges().size(); ++i) {
      const cluster::ShardRange& n = next.ranges()[i];
      if (!r.end.empty() && n.start >= r.end) break;
      if (n.owner != node) return true;
    }
  }
  return false;
}

}  // namespace

Ownership::Ownership(cluster::ShardMapWatcher* watcher, std::string cluster, std::string node,
                     metrics::ClusterMetrics* metrics)
    : watcher_(watcher), cluster_(std::move(cluster)), node_(std::move(node)), metrics_(metrics) {}

Ownership::~Ownership() = default;

grpc::Status Ownership::Admit(grpc::ServerContext* context, bool write, Ticket* ticket) {
  uint64_t wanted = 0;
  const auto& md = context->client_metadata();
  if (auto it = md.find(v1::kMapVersionMetadata); it != md.end()) {
    const std::string text(it->second.data(), it->second.size());
    wanted = std::strtoull(text.c_str(), nullptr, 10);
  }
  std::shared_ptr<Generation> g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    g = current_;
  }
  if (g == nullptr || (wanted > 0 && g->map->version() < wanted)) {
    watcher_->RefreshTo(wanted);  // publishes through AfterPublish
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (current_ == nullptr) {
    context->AddTrailingMetadata(v1::kNotAppliedMetadata, "1");
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
  std::lock_guard<std::mutex> lock(o->mu_);
  --generation_->writes;
  if (generation_->retired && --o->retired_writes_ == 0) o->drained_.notify_all();
}

const cluster::ShardMap* Ownership::Ticket::map() const {
  return generation_ == nullptr ? nullptr : generation_->map.get();
}

grpc::Status Ownership::Ticket::NotOwner(grpc::ServerContext* context,
                                         const cluster::ShardRange& range,
                                         std::string_view what) const {
  const uint64_t version = generation_->map->version();
  context->AddTrailingMetadata(v1::kNotOwnerMetadata, "1");
  context->AddTrailingMetadata(v1::kMapVersionMetadata, std::to_string(version));
  if (owner_->metrics_ != nullptr) owner_->metrics_->NotOwner();
  return grpc::Status(
      grpc::StatusCode::OUT_OF_RANGE,
      fmt::format("not owner: {} is in range {} owned by node '{}' at shard map version {}, not "
                  "by '{}'; refresh the map and send it there",
                  what, range.Describe(), range.owner, version, owner_->node_));
}

grpc::Status Ownership::Ticket::CheckKey(grpc::ServerContext* context, std::string_view key,
                                         std::string_view field) const {
  const cluster::ShardRange& r = generation_->map->Find(key);
  if (r.owner == owner_->node_) return grpc::Status::OK;
  return NotOwner(context, r, fmt::format("{} '{}'", field, cluster::PrintableKey(key)));
}

grpc::Status Ownership::Ticket::CheckSpan(grpc::ServerContext* context, std::string_view start,
                                          std::string_view end) const {
  const cluster::ShardMap& m = *generation_->map;
  for (size_t i = m.IndexOf(start); i < m.ranges().size(); ++i) {
    const cluster::ShardRange& r = m.ranges()[i];
    if (!end.empty() && r.start >= end) break;
    if (r.owner != owner_->node_) {
      return NotOwner(context, r,
                      fmt::format("part of [{}, {})", cluster::PrintableKey(start),
                                  cluster::PrintableKey(end, true)));
    }
  }
  return grpc::Status::OK;
}

grpc::Status Ownership::Ticket::ClipScan(grpc::ServerContext* context, bool reverse,
                                         std::string* lower, std::string* upper, bool* has_upper,
                                         std::string* stopped_at) const {
  const cluster::ShardMap& m = *generation_->map;
  stopped_at->clear();
  if (!reverse) {
    const cluster::ShardRange& r = m.Find(*lower);
    if (r.owner != owner_->node_) {
      return NotOwner(context, r, fmt::format("scan start '{}'", cluster::PrintableKey(*lower)));
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
  if (r.owner != owner_->node_) {
    return NotOwner(context, r,
                    fmt::format("reverse scan end '{}'", cluster::PrintableKey(*upper, true)));
  }
  if (*lower < r.start) {
    *lower = r.start;
    *stopped_at = r.start;
  }
  return grpc::Status::OK;
}

void Ownership::BeforePublish(const cluster::ShardMap* previous, const cluster::ShardMap& next) {
  std::lock_guard<std::mutex> lock(mu_);
  losing_ = previous != nullptr && Loses(*previous, next, node_);
}

void Ownership::AfterPublish(const cluster::ShardMap& map) {
  auto next = std::make_shared<Generation>();
  next->map = std::make_shared<const cluster::ShardMap>(map);
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<Generation> old = current_;
  current_ = next;
  if (old != nullptr) {
    old->retired = true;
    retired_writes_ += old->writes;
  }
  if (metrics_ != nullptr) {
    metrics_->SetMap(map.version(), map.OwnedBy(node_).size());
  }
  if (!losing_) return;
  // Fence: the writes decided by any older map finish before anyone relies on the change.
  drained_.wait(lock, [&] { return retired_writes_ == 0; });
}

}  // namespace grove::service
