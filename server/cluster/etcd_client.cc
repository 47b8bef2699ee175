#include "cluster/etcd_client.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "etcd/etcd_v3.grpc.pb.h"

namespace grove::cluster {
namespace {

namespace pb = etcdserverpb;

Status ReadPem(const char* field, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(std::string(field) + ": cannot read '" + path + "'");
  std::stringstream s;
  s << in.rdbuf();
  *out = s.str();
  return Status::Ok();
}

bool Unreachable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

Status FromGrpc(const char* what, const std::string& endpoint, const grpc::Status& s) {
  const std::string m = std::string("etcd ") + what + " at " + endpoint + ": " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return Status::InvalidArgument(m);
    case grpc::StatusCode::NOT_FOUND:
      return Status::NotFound(m);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(m);
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::PermissionDenied(m);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status::ResourceExhausted(m);
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable(m);
    default:
      return Status::Internal(m);
  }
}

EtcdKv FromPb(const pb::KeyValue& kv) {
  return {kv.key(), kv.value(), kv.mod_revision(), kv.lease()};
}

}  // namespace

struct EtcdClient::Endpoint {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Watch::Stub> watch;
};

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) != 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdOptions& options) {
  if (options.endpoints.empty()) return Status::InvalidArgument("etcd: no endpoints");
  if (!(options.call_timeout_seconds > 0)) {
    return Status::InvalidArgument("etcd: the call timeout must be positive");
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options.ca_file.empty() && !(options.cert_file.empty() && options.key_file.empty())) {
    return Status::InvalidArgument(
        "etcd: cert_file and key_file need ca_file (TLS to etcd is on when ca_file is set)");
  }
  if (!options.ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    GROVE_RETURN_IF_ERROR(ReadPem("ca_file", options.ca_file, &ssl.pem_root_certs));
    if (options.cert_file.empty() != options.key_file.empty()) {
      return Status::InvalidArgument("etcd: cert_file and key_file must be given together");
    }
    if (!options.cert_file.empty()) {
      GROVE_RETURN_IF_ERROR(ReadPem("cert_file", options.cert_file, &ssl.pem_cert_chain));
      GROVE_RETURN_IF_ERROR(ReadPem("key_file", options.key_file, &ssl.pem_private_key));
    }
    creds = grpc::SslCredentials(ssl);
  }
  // Reconnect within a second of etcd coming back (gRPC's default backoff grows to two minutes,
  // which a node re-registering after an etcd outage would wait out).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A watch stream has no deadline: pings find an etcd that vanished without closing the
  // connection (etcd accepts pings every 5 s or slower).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  for (const std::string& address : options.endpoints) {
    if (address.empty()) return Status::InvalidArgument("etcd: an endpoint is empty");
    auto e = std::make_unique<Endpoint>();
    e->address = address;
    e->channel = grpc::CreateCustomChannel(address, creds, args);
    e->kv = pb::KV::NewStub(e->channel);
    e->lease = pb::Lease::NewStub(e->channel);
    e->watch = pb::Watch::NewStub(e->channel);
    endpoints.push_back(std::move(e));
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(options, std::move(endpoints)));
}

EtcdClient::EtcdClient(EtcdOptions options, std::vector<std::unique_ptr<Endpoint>> endpoints)
    : options_(std::move(options)), endpoints_(std::move(endpoints)) {}

EtcdClient::~EtcdClient() = default;

template <typename Call>
Status EtcdClient::Run(const char* what, const Call& call) {
  size_t start;
  {
    MutexLock lock(&mu_);
    start = current_;
  }
  Status last;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const size_t at = (start + i) % endpoints_.size();
    Endpoint& e = *endpoints_[at];
    grpc::ClientContext ctx;
    ctx.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<int64_t>(options_.call_timeout_seconds * 1e6)));
    const grpc::Status s = call(e, &ctx);
    if (s.ok()) {
      MutexLock lock(&mu_);
      current_ = at;
      return Status::Ok();
    }
    last = FromGrpc(what, e.address, s);
    if (!Unreachable(s)) return last;
  }
  return last;
}

StatusOr<std::optional<EtcdKv>> EtcdClient::Get(const std::string& key) {
  pb::RangeRequest req;
  req.set_key(key);
  pb::RangeResponse resp;
  GROVE_RETURN_IF_ERROR(Run(
      "get", [&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Range(ctx, req, &resp); }));
  if (resp.kvs_size() == 0) return std::optional<EtcdKv>();
  return std::optional<EtcdKv>(FromPb(resp.kvs(0)));
}

StatusOr<std::vector<EtcdKv>> EtcdClient::GetPrefix(const std::string& prefix, int64_t* revision) {
  pb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(PrefixEnd(prefix));
  pb::RangeResponse resp;
  GROVE_RETURN_IF_ERROR(Run("range", [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.kv->Range(ctx, req, &resp);
  }));
  std::vector<EtcdKv> out;
  for (const pb::KeyValue& kv : resp.kvs()) out.push_back(FromPb(kv));
  if (revision != nullptr) *revision = resp.header().revision();
  return out;
}

Status EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  pb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  req.set_lease(lease);
  pb::PutResponse resp;
  return Run("put",
             [&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Put(ctx, req, &resp); });
}

StatusOr<bool> EtcdClient::PutIfUnchanged(const std::string& key, const std::string& value,
                                          int64_t expected, int64_t lease) {
  pb::TxnRequest req;
  pb::Compare* c = req.add_compare();
  c->set_key(key);
  c->set_result(pb::Compare::EQUAL);
  c->set_target(pb::Compare::MOD);  // a key that does not exist has mod revision 0
  c->set_mod_revision(expected);
  pb::PutRequest* put = req.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease);
  pb::TxnResponse resp;
  GROVE_RETURN_IF_ERROR(Run(
      "txn", [&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Txn(ctx, req, &resp); }));
  return resp.succeeded();
}

Status EtcdClient::Delete(const std::string& key) {
  pb::DeleteRangeRequest req;
  req.set_key(key);
  pb::DeleteRangeResponse resp;
  return Run("delete", [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.kv->DeleteRange(ctx, req, &resp);
  });
}

StatusOr<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) {
  pb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds);
  pb::LeaseGrantResponse resp;
  GROVE_RETURN_IF_ERROR(Run("lease grant", [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseGrant(ctx, req, &resp);
  }));
  if (!resp.error().empty()) return Status::Unavailable("etcd lease grant: " + resp.error());
  return resp.id();
}

StatusOr<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  pb::LeaseKeepAliveResponse resp;
  GROVE_RETURN_IF_ERROR(Run("lease keep-alive", [&](Endpoint& e, grpc::ClientContext* ctx) {
    auto stream = e.lease->LeaseKeepAlive(ctx);
    pb::LeaseKeepAliveRequest req;
    req.set_id(lease);
    if (!stream->Write(req) || !stream->Read(&resp)) {
      stream->WritesDone();
      grpc::Status s = stream->Finish();
      return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream ended") : s;
    }
    stream->WritesDone();
    ctx->TryCancel();  // the server keeps the stream open; one answer is all this call wants
    (void)stream->Finish();
    return grpc::Status::OK;
  }));
  return resp.ttl() > 0 ? resp.ttl() : 0;
}

void EtcdClient::WatchCancel::Cancel() {
  MutexLock lock(&mu_);
  cancelled_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
}

bool EtcdClient::WatchCancel::cancelled() {
  MutexLock lock(&mu_);
  return cancelled_;
}

bool EtcdClient::WatchCancel::Attach(grpc::ClientContext* ctx) {
  MutexLock lock(&mu_);
  ctx_ = ctx;
  return !cancelled_;
}

Status EtcdClient::Watch(const std::string& key, int64_t start_revision, WatchCancel* cancel,
                         const std::function<void(const std::optional<EtcdKv>&)>& on_change) {
  size_t at;
  {
    MutexLock lock(&mu_);
    at = current_;
  }
  Endpoint& e = *endpoints_[at];
  grpc::ClientContext ctx;  // no deadline: the stream lives until cancelled or broken
  if (!cancel->Attach(&ctx)) return Status::Ok();
  auto stream = e.watch->Watch(&ctx);
  pb::WatchRequest req;
  pb::WatchCreateRequest* create = req.mutable_create_request();
  create->set_key(key);
  create->set_start_revision(start_revision);
  Status result = Status::Unavailable("etcd watch at " + e.address + ": the stream ended");
  if (stream->Write(req)) {
    pb::WatchResponse resp;
    while (stream->Read(&resp)) {
      if (resp.compact_revision() > 0) {
        result = Status::FailedPrecondition("etcd watch: revision " +
                                            std::to_string(start_revision) + " was compacted");
        break;
      }
      if (resp.canceled()) {
        result = Status::Unavailable("etcd watch canceled: " + resp.cancel_reason());
        break;
      }
      for (const pb::Event& ev : resp.events()) {
        if (ev.type() == pb::Event::DELETE) {
          on_change(std::nullopt);
        } else {
          on_change(FromPb(ev.kv()));
        }
      }
    }
  }
  ctx.TryCancel();
  const grpc::Status s = stream->Finish();
  const bool cancelled = !cancel->Attach(nullptr);
  if (cancelled) return Status::Ok();
  if (!result.IsUnavailable() || s.ok()) return result;
  return FromGrpc("watch", e.address, s);
}

Status EtcdClient::RevokeLease(int64_t lease) {
  pb::LeaseRevokeRequest req;
  req.set_id(lease);
  pb::LeaseRevokeResponse resp;
  return Run("lease revoke", [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseRevoke(ctx, req, &resp);
  });
}

}  // namespace grove::cluster
