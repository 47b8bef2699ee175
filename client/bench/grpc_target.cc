// grpc://host:port drives groved through the client library (grove::client::Client): with
// --grpc-transport stream (the default) all workers share one client, whose Batch streams carry
// every worker's calls (docs/server.md, "Many calls on one stream"); with unary each worker has
// a client (a channel) of its own and every call is one RPC. etcd://host:port/cluster does the
// same through the client's cluster routing (its figures are the nodes' summed).
// grpc-noop://host:port answers every operation with a grpc.health.v1 Check on the same server: it
// crosses the same channel, HTTP/2 transport and server thread pool without touching the engine, so
// it is the ceiling of the RPC stack. (grove.v1.KV has no no-op call; the health service is the
// closest thing the server offers.)
//
// Engine counters come from the Stats RPC. The server is another process, so device bytes are
// the server's page reads and writes times 4 KiB.

#include <algorithm>
#include <mutex>
#include <optional>

#include "grove/client/client.h"

#include "bench/target.h"
#include "util/mutex.h"

namespace grove::bench {
namespace {

Status FromGrpc(const grpc::Status& s, const char* what) {
  if (s.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(s.error_code()),
                std::string("grpc ") + what + ": " + s.error_message());
}

class GrpcSession final : public Session {
 public:
  GrpcSession(std::shared_ptr<client::Client> c, bool noop) : client_(std::move(c)), noop_(noop) {}

  Status Read(Slice key, std::string* value, bool* found) override {
    if (noop_) return Noop(found);
    return FromGrpc(client_->Get(key, value, found), "get");
  }

  Status Write(Slice key, Slice value) override {
    if (noop_) return Noop(nullptr);
    return FromGrpc(client_->Put(key, value), "put");
  }

  Status Scan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
    return ScanRange(start, end, limit, /*reverse=*/false, entries);
  }

  Status WriteBatch(const std::vector<std::pair<std::string, std::string>>& entries) override {
    if (noop_) return Noop(nullptr);
    std::vector<client::Mutation> m(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      m[i].key = entries[i].first;
      m[i].value = entries[i].second;
    }
    return FromGrpc(client_->BatchInsert(m), "batch insert");
  }

  Status Delete(Slice key) override {
    if (noop_) return Noop(nullptr);
    return FromGrpc(client_->Delete(key), "delete");
  }

  Status BatchRead(const std::vector<std::string>& keys, uint64_t* found) override {
    if (noop_) {
      *found = keys.size();
      return Noop(nullptr);
    }
    std::vector<std::optional<std::string>> values;
    GROVE_RETURN_IF_ERROR(FromGrpc(client_->BatchGet(keys, &values), "batch get"));
    *found = 0;
    for (const auto& v : values) *found += v.has_value() ? 1 : 0;
    return Status::Ok();
  }

  Status WriteMutations(const std::vector<Mutation>& mutations) override {
    if (noop_) return Noop(nullptr);
    std::vector<client::Mutation> m(mutations.size());
    for (size_t i = 0; i < mutations.size(); ++i) {
      m[i].type =
          mutations[i].is_delete ? client::Mutation::Type::kDelete : client::Mutation::Type::kPut;
      m[i].key = mutations[i].key;
      m[i].value = mutations[i].value;
    }
    return FromGrpc(client_->BatchInsert(m), "batch insert");
  }

  Status DeleteRange(Slice start, Slice end, uint64_t limit, uint64_t* deleted) override {
    *deleted = 0;
    if (noop_) return Noop(nullptr);
    client::DeleteRangeOutcome outcome;
    const uint32_t capped = static_cast<uint32_t>(std::min<uint64_t>(limit, UINT32_MAX));
    GROVE_RETURN_IF_ERROR(
        FromGrpc(client_->DeleteRange(start, end, capped, &outcome), "delete range"));
    *deleted = outcome.deleted;
    return Status::Ok();
  }

  Status ReverseScan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
    return ScanRange(start, end, limit, /*reverse=*/true, entries);
  }

 private:
  Status ScanRange(Slice start, Slice end, uint32_t limit, bool reverse, uint64_t* entries) {
    if (noop_) {
      *entries = 0;
      return Noop(nullptr);
    }
    client::ScanRange range;
    range.start = std::string(start);
    range.end = std::string(end);
    range.reverse = reverse;
    // Width scans pass no count limit; pages stay within the server's max_scan_limit default.
    range.limit = limit == UINT32_MAX ? 0 : limit;
    range.page_size = std::min<uint32_t>(limit, 10000);
    uint64_t n = 0;
    const grpc::Status s = client_->Scan(range, [&](std::string_view, std::string_view) {
      ++n;
      return true;
    });
    *entries = n;
    return FromGrpc(s, "scan");
  }

  Status Noop(bool* found) {
    grpc::health::v1::HealthCheckResponse::ServingStatus status;
    if (found != nullptr) *found = true;
    return FromGrpc(client_->Health("", &status), "health check");
  }

  std::shared_ptr<client::Client> client_;  // the workers' shared one, or this worker's own
  const bool noop_;
};

class GrpcTarget final : public Target {
 public:
  GrpcTarget(std::string uri, client::ClientOptions options, bool noop)
      : uri_(std::move(uri)), options_(std::move(options)), noop_(noop) {}

  std::string Uri() const override { return uri_; }

  std::map<std::string, std::string> Config() const override {
    std::map<std::string, std::string> c{
        {"address", options_.address},
        {"call", noop_ ? "grpc.health.v1.Health/Check" : "grove.v1.KV"},
        {"timeout_ms", std::to_string(options_.timeout.count())},
        {"transport", options_.transport == client::ClientOptions::Transport::kStream
                          ? "stream (" + std::to_string(options_.streams) + " streams)"
                          : "unary"}};
    std::vector<std::pair<std::string, v1::StatsResponse>> nodes;
    if (!noop_ && Client()->NodeStats(&nodes).ok() && !nodes.empty()) {
      const v1::StatsResponse& s = nodes[0].second;  // a cluster's nodes run one configuration
      if (nodes.size() > 1) c["nodes"] = std::to_string(nodes.size());
      c["server_version"] = s.version();
      c["variant"] = s.variant();
      c["io_backend"] = s.io_backend();
      c["cache_bytes"] = std::to_string(s.cache().capacity_pages() * 4096);
    }
    return c;
  }

  Status Reset() override {
    if (noop_) return Status::Ok();
    std::vector<std::pair<std::string, v1::StatsResponse>> nodes;
    GROVE_RETURN_IF_ERROR(FromGrpc(Client()->NodeStats(&nodes), "stats"));
    for (const auto& [node, s] : nodes) {
      if (s.index().entries() == 0 && s.index().leaf_pages() <= 1) continue;
      return Status::FailedPrecondition(
          uri_ +
          ": the server already holds data; LOAD needs an empty database (start groved "
          "on an empty data directory), or leave load out of --workloads (node " +
          node + ")");
    }
    return Status::Ok();
  }

  StatusOr<std::unique_ptr<Session>> NewSession() override {
    // The no-op baseline and a cluster client (unary to the nodes) keep a client per worker.
    const bool shared = !noop_ && options_.transport == client::ClientOptions::Transport::kStream &&
                        options_.address.rfind("etcd://", 0) != 0;
    MutexLock lock(&shared_mu_);
    if (shared && shared_ != nullptr) {
      return std::unique_ptr<Session>(std::make_unique<GrpcSession>(shared_, noop_));
    }
    std::unique_ptr<client::Client> c;
    GROVE_RETURN_IF_ERROR(FromGrpc(client::Client::Create(options_, &c), "connect"));
    std::shared_ptr<client::Client> session_client(std::move(c));
    if (shared) shared_ = session_client;
    return std::unique_ptr<Session>(std::make_unique<GrpcSession>(session_client, noop_));
  }

  StatusOr<TargetStats> Stats() override {
    TargetStats t;
    if (noop_) return t;
    // A cluster's figures are its nodes' summed.
    std::vector<std::pair<std::string, v1::StatsResponse>> nodes;
    GROVE_RETURN_IF_ERROR(FromGrpc(Client()->NodeStats(&nodes), "stats"));
    auto& c = t.counters;
    auto& g = t.gauges;
    for (const auto& [node, s] : nodes) {
      double reads = 0;
      double writes = 0;
      for (const auto& [cause, n] : s.cache().page_reads()) {
        c["page_reads." + cause] += static_cast<double>(n);
        reads += static_cast<double>(n);
      }
      for (const auto& [cause, n] : s.cache().page_writes()) {
        c["page_writes." + cause] += static_cast<double>(n);
        writes += static_cast<double>(n);
      }
      c["page_reads"] += reads;
      c["page_writes"] += writes;
      c["device_read_bytes"] += reads * 4096;
      c["device_write_bytes"] += writes * 4096;
      c["cache_hits"] += static_cast<double>(s.cache().hits());
      c["cache_misses"] += static_cast<double>(s.cache().misses());
      c["wal_bytes"] += static_cast<double>(s.wal().bytes());
      c["wal_syncs"] += static_cast<double>(s.wal().syncs());
      c["checkpoints"] += static_cast<double>(s.checkpoint().count());
      c["engine_gets"] += static_cast<double>(s.operations().gets());
      c["engine_puts"] += static_cast<double>(s.operations().puts());
      c["engine_writes"] += static_cast<double>(s.operations().writes());
      c["engine_scans"] += static_cast<double>(s.operations().scans());
      g["index_height"] = std::max(g["index_height"], static_cast<double>(s.index().height()));
      g["index_inner_pages"] += static_cast<double>(s.index().inner_pages());
      g["index_leaf_pages"] += static_cast<double>(s.index().leaf_pages());
      g["index_inner_bytes"] += static_cast<double>(s.index().inner_bytes());
      g["index_model_bytes"] += static_cast<double>(s.index().model_bytes());
      g["index_entries"] += static_cast<double>(s.index().entries());
      g["data_file_bytes"] += static_cast<double>(s.storage().data_file_pages()) * 4096;
      g["cache_capacity_pages"] += static_cast<double>(s.cache().capacity_pages());
    }
    return t;
  }

  Status Close() override { return Status::Ok(); }

 private:
  client::Client* Client() const {
    if (!control_) client::Client::Create(options_, &control_).IgnoreError();
    return control_.get();
  }

  const std::string uri_;
  const client::ClientOptions options_;
  const bool noop_;
  mutable std::unique_ptr<client::Client> control_;  // stats calls, made on first use
  Mutex shared_mu_;
  // Stream transport: every worker's client.
  std::shared_ptr<client::Client> shared_ GROVE_GUARDED_BY(shared_mu_);
};

}  // namespace

StatusOr<std::unique_ptr<Target>> OpenGrpcTarget(const TargetUri& uri, const TargetOptions& o,
                                                 bool noop) {
  if (!uri.params.empty()) {
    return Status::InvalidArgument(uri.scheme + "://: no parameters are accepted (use --grpc-*)");
  }
  client::ClientOptions options;
  options.address = uri.scheme == "etcd" ? "etcd://" + uri.body : uri.body;
  options.token = o.grpc_token;
  options.timeout = std::chrono::milliseconds(o.grpc_timeout_ms);
  options.transport = o.grpc_transport == "unary" ? client::ClientOptions::Transport::kUnary
                                                  : client::ClientOptions::Transport::kStream;
  options.streams = static_cast<int>(o.grpc_streams);
  options.stream_messages_in_flight = o.grpc_stream_messages;
  options.etcd_ca_file = o.etcd_ca_file;
  options.etcd_cert_file = o.etcd_cert_file;
  options.etcd_key_file = o.etcd_key_file;
  auto target = std::make_unique<GrpcTarget>(uri.scheme + "://" + uri.body, options, noop);
  // Fail early, with the server's answer, rather than in every worker.
  auto session = target->NewSession();
  if (!session.ok()) return session.status();
  std::string value;
  bool found = false;
  GROVE_RETURN_IF_ERROR((*session)->Read(std::string(8, '\0'), &value, &found));
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace grove::bench
