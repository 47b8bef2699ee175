#include "grove/client/client.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "grove/v1/metadata.h"

#include "lib/batcher.h"
#include "lib/router.h"

namespace grove::client {
namespace {

grpc::Status ReadFile(const char* option, const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        std::string(option) + ": cannot read '" + path + "'");
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return grpc::Status::OK;
}

bool Retryable(const grpc::Status& s) { return s.error_code() == grpc::StatusCode::UNAVAILABLE; }

// The answer of a cluster client (etcd:// address) to a call that one node answers for itself.
grpc::Status PerNode(const char* call) {
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      std::string(call) +
          " is per node: call a node's own address (grovectl cluster status "
          "lists them)" +
          (std::string_view(call) == "Stats" ? "; NodeStats gives every node's" : ""));
}

void SetPrecondition(const Precondition& p, v1::Precondition* out) {
  switch (p.kind) {
    case Precondition::Kind::kNone:
      break;
    case Precondition::Kind::kAbsent:
      out->set_absent(true);
      break;
    case Precondition::Kind::kValueEquals:
      out->set_value_equals(p.value);
      break;
    case Precondition::Kind::kVersionEquals:
      out->set_version_equals(p.version);
      break;
  }
}

// Fills `failure` from a FAILED_PRECONDITION's trailing metadata (kv.proto, Precondition): a
// unary call's trailers or a Batch sub-request's status metadata.
template <typename Metadata>
void ReadFailure(const grpc::Status& s, const Metadata& md, ConditionFailure* failure) {
  if (failure == nullptr || s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) return;
  *failure = ConditionFailure();
  for (const auto& [k, v] : md) {
    const std::string key(k.data(), k.size());
    const std::string value(v.data(), v.size());
    if (key == "grove-current-found") {
      failure->found = value == "1";
    } else if (key == "grove-current-version") {
      failure->version = std::strtoull(value.c_str(), nullptr, 10);
    } else if (key == "grove-current-value-bin") {
      failure->has_value = true;
      failure->value = value;
    } else if (key == "grove-failed-mutation") {
      failure->mutation = std::atoi(value.c_str());
    }
  }
}

}  // namespace

grpc::Status Client::Create(const ClientOptions& options, std::unique_ptr<Client>* client) {
  if (options.address.rfind("etcd://", 0) == 0) {
    std::unique_ptr<Router> router;
    grpc::Status s = Router::Create(options, &router);
    if (!s.ok()) return s;
    client->reset(new Client(options, std::move(router)));
    return grpc::Status::OK;
  }
  grpc::ChannelArguments args;
  // Accept any message the server's own limits allow (gRPC's default is 4 MiB).
  args.SetMaxReceiveMessageSize(-1);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.ca_file.empty()) {
      grpc::Status s = ReadFile("ca_file", options.ca_file, &ssl.pem_root_certs);
      if (!s.ok()) return s;
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "cert_file and key_file must be given together");
    }
    if (!options.cert_file.empty()) {
      grpc::Status s = ReadFile("cert_file", options.cert_file, &ssl.pem_cert_chain);
      if (s.ok()) s = ReadFile("key_file", options.key_file, &ssl.pem_private_key);
      if (!s.ok()) return s;
    }
    if (!options.server_name.empty()) args.SetSslTargetNameOverride(options.server_name);
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  client->reset(new Client(options, grpc::CreateCustomChannel(options.address, creds, args)));
  return grpc::Status::OK;
}

Client::Client(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      kv_(v1::KV::NewStub(channel_)),
      admin_(v1::Admin::NewStub(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)),
      jitter_state_(std::random_device{}()) {
  if (options_.transport == ClientOptions::Transport::kStream) {
    BatcherOptions b;
    b.streams = options_.streams;
    b.max_calls = std::max<size_t>(1, options_.stream_max_calls);
    b.messages_in_flight = std::max<size_t>(1, options_.stream_messages_in_flight);
    b.prepare = [this](grpc::ClientContext* ctx) {
      if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
      for (const auto& [key, value] : options_.metadata) ctx->AddMetadata(key, value);
    };
    batcher_ = std::make_unique<Batcher>(channel_, std::move(b));
  }
}

Client::Client(ClientOptions options, std::unique_ptr<Router> router)
    : options_(std::move(options)),
      jitter_state_(std::random_device{}()),
      router_(std::move(router)) {}

Client::~Client() = default;

std::unique_ptr<grpc::ClientContext> Client::NewContext() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  // Sent as plain metadata rather than call credentials: gRPC refuses call credentials on
  // plaintext channels, and the loopback listener is plaintext.
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  for (const auto& [key, value] : options_.metadata) ctx->AddMetadata(key, value);
  if (const uint64_t v = routed_map_version_.load(std::memory_order_relaxed); v != 0) {
    ctx->AddMetadata(v1::kMapVersionMetadata, std::to_string(v));
  }
  return ctx;
}

std::chrono::milliseconds Client::Backoff(int retry) {
  auto d = options_.initial_backoff * (1 << std::min(retry, 16));
  d = std::min(d, options_.max_backoff);
  // "Equal jitter": half fixed, half random, so that many clients do not retry in lockstep.
  // SplitMix64 over a shared counter: a well-mixed draw per call, safe from any thread.
  uint64_t z = jitter_state_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed) +
               0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const uint64_t half = static_cast<uint64_t>(d.count() / 2);
  return std::chrono::milliseconds(static_cast<int64_t>(half + z % (half + 1)));
}

grpc::Status Client::WithRetries(const std::function<grpc::Status(grpc::ClientContext*)>& attempt,
                                 bool write) {
  return Retry(
      [&](bool* not_applied) {
        std::unique_ptr<grpc::ClientContext> ctx = NewContext();
        grpc::Status s = attempt(ctx.get());
        *not_applied = ctx->GetServerTrailingMetadata().count(v1::kNotAppliedMetadata) > 0;
        return s;
      },
      write);
}

grpc::Status Client::KvCall(const v1::SubRequest& sub, bool write, ConditionFailure* failure,
                            const std::function<grpc::Status(grpc::ClientContext*)>& unary,
                            const std::function<void(v1::SubResult*)>& take) {
  const auto unary_attempt = [&](bool* not_applied) {
    std::unique_ptr<grpc::ClientContext> ctx = NewContext();
    grpc::Status s = unary(ctx.get());
    *not_applied = ctx->GetServerTrailingMetadata().count(v1::kNotAppliedMetadata) > 0;
    ReadFailure(s, ctx->GetServerTrailingMetadata(), failure);
    return s;
  };
  if (batcher_ == nullptr || no_stream_.load(std::memory_order_relaxed)) {
    return Retry(unary_attempt, write);
  }
  if (options_.stream_lone_calls_unary && batcher_->Load() == 0) {
    // No other call in flight: this one goes unary (ClientOptions::stream_lone_calls_unary),
    // unless another lone call just took that way, which makes this one not alone.
    int none = 0;
    if (lone_calls_.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) {
      grpc::Status s = Retry(unary_attempt, write);
      lone_calls_.store(0, std::memory_order_release);
      return s;
    }
  }
  v1::SubResult result;
  bool via_stream = true;
  grpc::Status s = Retry(
      [&](bool* not_applied) {
        if (!via_stream) return unary_attempt(not_applied);
        result.Clear();
        const Batcher::Outcome o =
            batcher_->Call(sub, std::chrono::system_clock::now() + options_.timeout, &result);
        if (o.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
          // A server from before Batch: unary calls from now on.
          no_stream_.store(true, std::memory_order_relaxed);
          via_stream = false;
          return unary_attempt(not_applied);
        }
        if (!o.status.ok()) {
          *not_applied = o.not_applied;
          return o.status;
        }
        const auto& md = result.status().metadata();
        *not_applied = md.count(v1::kNotAppliedMetadata) > 0;
        grpc::Status r(static_cast<grpc::StatusCode>(result.status().code()),
                       result.status().message());
        ReadFailure(r, md, failure);
        return r;
      },
      write);
  if (s.ok() && via_stream) take(&result);
  return s;
}

grpc::Status Client::Retry(const std::function<grpc::Status(bool* not_applied)>& attempt,
                           bool write) {
  grpc::Status s;
  for (int i = 0; i < std::max(1, options_.max_attempts); ++i) {
    if (i > 0) std::this_thread::sleep_for(Backoff(i - 1));
    // A write is sent only over a connection that is ready when the attempt starts; without one
    // it is not sent at all, which is always safe to retry. (A connection that breaks between
    // this check and the send makes a write look sent: the safe direction.)
    if (write && !WaitForConnection()) {
      s = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                       "no connection to " + options_.address +
                           " (server down or unreachable, or the TLS handshake failed); the write "
                           "was not sent",
                       kNotAppliedDetails);
      continue;
    }
    bool not_applied = false;
    s = attempt(&not_applied);
    if (not_applied && !s.ok()) {
      s = grpc::Status(s.error_code(), s.error_message(), kNotAppliedDetails);
    }
    if (!Retryable(s)) return s;
    if (write && !not_applied) {
      return grpc::Status(s.error_code(), s.error_message() +
                                              " (the write was sent; it may or may not have been "
                                              "applied, so it is not retried)");
    }
  }
  return s;
}

bool Client::WaitForConnection() {
  if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
  const auto wait = std::min(options_.timeout, options_.connect_timeout);
  return channel_->WaitForConnected(std::chrono::system_clock::now() + wait) &&
         channel_->GetState(false) == GRPC_CHANNEL_READY;
}

grpc::Status Client::Get(std::string_view key, std::string* value, bool* found) {
  ValueInfo info;
  return Get(key, value, found, &info);
}

grpc::Status Client::Get(std::string_view key, std::string* value, bool* found, ValueInfo* info) {
  if (router_) return router_->Get(key, value, found, info);
  v1::SubRequest sub;
  v1::GetRequest& req = *sub.mutable_get();
  req.set_key(key.data(), key.size());
  v1::GetResponse resp;
  grpc::Status s = KvCall(
      sub, /*write=*/false, nullptr,
      [&](grpc::ClientContext* ctx) { return kv_->Get(ctx, req, &resp); },
      [&](v1::SubResult* r) { resp.Swap(r->mutable_get()); });
  if (!s.ok()) return s;
  *found = resp.found();
  *value = std::move(*resp.mutable_value());
  *info = ValueInfo{resp.version(), resp.expires_at_ms()};
  return s;
}

grpc::Status Client::BatchGet(const std::vector<std::string>& keys,
                              std::vector<std::optional<std::string>>* values) {
  if (router_) return router_->BatchGet(keys, values);
  v1::SubRequest sub;
  v1::BatchGetRequest& req = *sub.mutable_batch_get();
  for (const std::string& k : keys) req.add_keys(k);
  v1::BatchGetResponse resp;
  grpc::Status s = KvCall(
      sub, /*write=*/false, nullptr,
      [&](grpc::ClientContext* ctx) { return kv_->BatchGet(ctx, req, &resp); },
      [&](v1::SubResult* r) { resp.Swap(r->mutable_batch_get()); });
  if (!s.ok()) return s;
  values->clear();
  for (v1::GetResult& r : *resp.mutable_results()) {
    if (r.found()) {
      values->emplace_back(std::move(*r.mutable_value()));
    } else {
      values->emplace_back(std::nullopt);
    }
  }
  return s;
}

grpc::Status Client::Put(std::string_view key, std::string_view value) {
  return Put(key, value, WriteOptions());
}

grpc::Status Client::Put(std::string_view key, std::string_view value, const WriteOptions& options,
                         WriteOutcome* outcome) {
  if (router_) return router_->Put(key, value, options, outcome);
  v1::SubRequest sub;
  v1::PutRequest& req = *sub.mutable_put();
  req.set_key(key.data(), key.size());
  req.set_value(value.data(), value.size());
  if (options.precondition.kind != Precondition::Kind::kNone) {
    SetPrecondition(options.precondition, req.mutable_precondition());
    req.set_return_current(options.return_current);
  }
  req.set_ttl_ms(static_cast<uint64_t>(std::max<int64_t>(0, options.ttl.count())));
  v1::PutResponse resp;
  grpc::Status s = KvCall(
      sub, /*write=*/true, outcome != nullptr ? &outcome->failure : nullptr,
      [&](grpc::ClientContext* ctx) { return kv_->Put(ctx, req, &resp); },
      [&](v1::SubResult* r) { resp.Swap(r->mutable_put()); });
  if (s.ok() && outcome != nullptr) outcome->version = resp.version();
  return s;
}

grpc::Status Client::Delete(std::string_view key) { return Delete(key, WriteOptions()); }

grpc::Status Client::Delete(std::string_view key, const WriteOptions& options,
                            WriteOutcome* outcome) {
  if (router_) return router_->Delete(key, options, outcome);
  v1::SubRequest sub;
  v1::DeleteRequest& req = *sub.mutable_delete_();
  req.set_key(key.data(), key.size());
  if (options.precondition.kind != Precondition::Kind::kNone) {
    SetPrecondition(options.precondition, req.mutable_precondition());
    req.set_return_current(options.return_current);
  }
  v1::DeleteResponse resp;
  grpc::Status s = KvCall(
      sub, /*write=*/true, outcome != nullptr ? &outcome->failure : nullptr,
      [&](grpc::ClientContext* ctx) { return kv_->Delete(ctx, req, &resp); },
      [&](v1::SubResult* r) { resp.Swap(r->mutable_delete_()); });
  if (s.ok() && outcome != nullptr) outcome->version = resp.version();
  return s;
}

grpc::Status Client::BatchInsert(const std::vector<Mutation>& mutations, WriteOutcome* outcome) {
  if (router_) return router_->BatchInsert(mutations, outcome);
  v1::SubRequest sub;
  v1::BatchInsertRequest& req = *sub.mutable_batch_insert();
  for (const Mutation& m : mutations) {
    v1::Mutation* pm = req.add_mutations();
    pm->set_type(m.type == Mutation::Type::kPut ? v1::Mutation::PUT : v1::Mutation::DELETE);
    pm->set_key(m.key);
    if (m.type == Mutation::Type::kPut) {
      pm->set_value(m.value);
      pm->set_ttl_ms(static_cast<uint64_t>(std::max<int64_t>(0, m.ttl.count())));
    }
    if (m.precondition.kind != Precondition::Kind::kNone) {
      SetPrecondition(m.precondition, pm->mutable_precondition());
    }
  }
  v1::BatchInsertResponse resp;
  grpc::Status s = KvCall(
      sub, /*write=*/true, outcome != nullptr ? &outcome->failure : nullptr,
      [&](grpc::ClientContext* ctx) { return kv_->BatchInsert(ctx, req, &resp); },
      [&](v1::SubResult* r) { resp.Swap(r->mutable_batch_insert()); });
  if (s.ok() && outcome != nullptr) outcome->version = resp.version();
  return s;
}

grpc::Status Client::DeleteRange(std::string_view start, std::string_view end, uint32_t limit,
                                 DeleteRangeOutcome* outcome) {
  if (router_) return router_->DeleteRange(start, end, limit, outcome);
  v1::SubRequest sub;
  v1::DeleteRangeRequest& req = *sub.mutable_delete_range();
  req.set_start(start.data(), start.size());
  req.set_end(end.data(), end.size());
  req.set_limit(limit);
  v1::DeleteRangeResponse resp;
  grpc::Status s = KvCall(
      sub, /*write=*/true, nullptr,
      [&](grpc::ClientContext* ctx) { return kv_->DeleteRange(ctx, req, &resp); },
      [&](v1::SubResult* r) { resp.Swap(r->mutable_delete_range()); });
  if (!s.ok()) return s;
  *outcome = DeleteRangeOutcome{resp.deleted(), resp.more(), resp.resume_key(), resp.limited_by(),
                                resp.version()};
  return s;
}

grpc::Status Client::Backup(const std::string& name, uint64_t max_bytes_per_second,
                            std::chrono::seconds deadline, v1::BackupResponse* response) {
  if (router_) return PerNode("Backup");
  v1::BackupRequest req;
  req.set_name(name);
  req.set_max_bytes_per_second(max_bytes_per_second);
  return WithRetries(
      [&](grpc::ClientContext* ctx) {
        // The copy outlasts an ordinary call's deadline.
        ctx->set_deadline(std::chrono::system_clock::now() + deadline);
        return admin_->Backup(ctx, req, response);
      },
      /*write=*/true);
}

grpc::Status Client::Verify(bool pause_writers, uint64_t cache_bytes, std::chrono::seconds deadline,
                            v1::VerifyResponse* response) {
  if (router_) return PerNode("Verify");
  v1::VerifyRequest req;
  req.set_pause_writers(pause_writers);
  req.set_cache_bytes(cache_bytes);
  return WithRetries(
      [&](grpc::ClientContext* ctx) {
        // The walk reads every page: it outlasts an ordinary call's deadline.
        ctx->set_deadline(std::chrono::system_clock::now() + deadline);
        return admin_->Verify(ctx, req, response);
      },
      /*write=*/true);
}

grpc::Status Client::StartTrace(double sample, double duration_seconds, const std::string& name,
                                bool hash_keys, v1::TraceStatusResponse* response) {
  if (router_) return PerNode("StartTrace");
  v1::StartTraceRequest req;
  req.set_sample(sample);
  req.set_duration_seconds(duration_seconds);
  req.set_name(name);
  req.set_hash_keys(hash_keys);
  // Not retried once sent: a second start would find the first running.
  return WithRetries(
      [&](grpc::ClientContext* ctx) { return admin_->StartTrace(ctx, req, response); },
      /*write=*/true);
}

grpc::Status Client::StopTrace(v1::TraceStatusResponse* response) {
  if (router_) return PerNode("StopTrace");
  return WithRetries([&](grpc::ClientContext* ctx) { return admin_->StopTrace(ctx, {}, response); },
                     /*write=*/true);
}

grpc::Status Client::TraceStatus(v1::TraceStatusResponse* response) {
  if (router_) return PerNode("TraceStatus");
  return WithRetries(
      [&](grpc::ClientContext* ctx) { return admin_->GetTraceStatus(ctx, {}, response); },
      /*write=*/false);
}

grpc::Status Client::Scan(const ScanRange& range, const ScanVisitor& visit) {
  return ScanWithExpiry(
      range, [&](std::string_view k, std::string_view v, uint64_t) { return visit(k, v); });
}

grpc::Status Client::ScanWithExpiry(const ScanRange& range, const ScanEntryVisitor& visit) {
  if (router_) return router_->Scan(range, visit);
  return ScanNode(range, visit, nullptr, nullptr);
}

grpc::Status Client::MoveChanges(uint64_t move_id, uint64_t token, uint32_t max_keys,
                                 v1::MoveChangesResponse* response) {
  if (router_) return PerNode("MoveChanges");
  v1::MoveChangesRequest req;
  req.set_move_id(move_id);
  req.set_token(token);
  req.set_max_keys(max_keys);
  return WithRetries([&](grpc::ClientContext* ctx) {
    response->Clear();
    return admin_->MoveChanges(ctx, req, response);
  });
}

grpc::Status Client::ScanNode(const ScanRange& range, const ScanEntryVisitor& visit,
                              std::string* stopped_at, bool* visitor_stopped) {
  if (stopped_at != nullptr) stopped_at->clear();
  if (visitor_stopped != nullptr) *visitor_stopped = false;
  v1::ScanRequest req;
  req.set_start(range.start);
  req.set_end(range.end);
  req.set_reverse(range.reverse);
  req.set_keys_only(range.keys_only);
  uint64_t delivered = 0;
  int failures = 0;
  while (true) {
    uint64_t want = range.page_size == 0 ? 0 : range.page_size;
    if (range.limit != 0) {
      const uint64_t remaining = range.limit - delivered;
      if (remaining == 0) {
        if (visitor_stopped != nullptr) *visitor_stopped = true;
        return grpc::Status::OK;
      }
      if (want == 0 || remaining < want) want = remaining;
    }
    req.set_limit(static_cast<uint32_t>(want));

    std::unique_ptr<grpc::ClientContext> ctx = NewContext();
    std::unique_ptr<grpc::ClientReader<v1::ScanResponse>> reader = kv_->Scan(ctx.get(), req);
    v1::ScanResponse msg;
    bool more = false;
    bool stopped = false;
    std::string last_key;
    bool progressed = false;
    while (!stopped && reader->Read(&msg)) {
      for (const v1::KeyValue& kv : msg.entries()) {
        ++delivered;
        if (!visit(kv.key(), kv.value(), kv.expires_at_ms()) ||
            (range.limit != 0 && delivered >= range.limit)) {
          stopped = true;
          break;
        }
      }
      if (!msg.entries().empty()) {
        last_key = msg.last_key();
        progressed = true;
      }
      more = msg.more();
    }
    if (stopped) {
      ctx->TryCancel();
      (void)reader->Finish();  // CANCELLED by us; not an error
      if (visitor_stopped != nullptr) *visitor_stopped = true;
      return grpc::Status::OK;
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) {
      if (!Retryable(s)) return s;
      // A stream that delivered entries made progress; only consecutive fruitless attempts count.
      failures = progressed ? 1 : failures + 1;
      if (failures >= std::max(1, options_.max_attempts)) return s;
      std::this_thread::sleep_for(Backoff(failures - 1));
      more = true;  // resume below
      if (!progressed) continue;
    }
    if (!more) {
      if (s.ok() && stopped_at != nullptr) {
        const auto& trailers = ctx->GetServerTrailingMetadata();
        if (auto it = trailers.find(v1::kScanStoppedAtMetadata); it != trailers.end()) {
          stopped_at->assign(it->second.data(), it->second.size());
        }
      }
      return grpc::Status::OK;
    }
    // Continue after the last key delivered: forward, from the next possible key; reverse, up to
    // (excluding) it.
    if (range.reverse) {
      req.set_end(last_key);
    } else {
      req.set_start(last_key + '\0');
    }
  }
}

grpc::Status Client::Stats(v1::StatsResponse* stats) {
  if (router_) return PerNode("Stats");
  v1::StatsRequest req;
  return WithRetries([&](grpc::ClientContext* ctx) { return kv_->Stats(ctx, req, stats); });
}

grpc::Status Client::Health(const std::string& service,
                            grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
  if (router_) return PerNode("Health");
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  // No retries: a health probe reports what it sees now.
  std::unique_ptr<grpc::ClientContext> ctx = NewContext();
  grpc::Status s = health_->Check(ctx.get(), req, &resp);
  if (s.ok()) *status = resp.status();
  return s;
}

grpc::Status Client::NodeStats(std::vector<std::pair<std::string, v1::StatsResponse>>* stats) {
  if (router_) return router_->NodeStats(stats);
  v1::StatsResponse one;
  grpc::Status s = Stats(&one);
  if (!s.ok()) return s;
  stats->assign(1, {options_.address, std::move(one)});
  return s;
}

}  // namespace grove::client
