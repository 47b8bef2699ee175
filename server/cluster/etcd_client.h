#pragma once

// EtcdClient: the calls of etcd's v3 API that Grove's cluster metadata needs (proto/etcd): keys
// read singly or by prefix, written plainly, under a lease or only if unchanged since they were
// read (a transaction comparing the mod revision), and leases granted, kept alive and revoked.
//
// Endpoints are tried in turn, starting with the one that answered last: a call that finds etcd
// unreachable (UNAVAILABLE, or no answer within the call timeout) goes on to the next endpoint,
// and fails UNAVAILABLE only when none answered. A refused call (bad argument, lease not found)
// is not retried. Every call has the timeout; nothing waits forever for etcd.
//
// Thread safety: every method is safe for concurrent use.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grove/status.h"

#include "util/mutex.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace grove::cluster {

struct EtcdOptions {
  std::vector<std::string> endpoints = {};  // host:port, at least one
  // TLS to etcd when ca_file is set; cert_file and key_file (together) for client certificates.
  std::string ca_file = "", cert_file = "", key_file = "";
  double call_timeout_seconds = 5;
};

struct EtcdKv {
  std::string key, value;
  int64_t mod_revision = 0;  // etcd's revision of the key's last write
  int64_t lease = 0;
};

class EtcdClient {
 public:
  static StatusOr<std::unique_ptr<EtcdClient>> Create(const EtcdOptions& options);
  ~EtcdClient();

  StatusOr<std::optional<EtcdKv>> Get(const std::string& key);
  // Every key starting with `prefix`, in key order; *revision receives the store's revision
  // at the read (the point a watch would continue from).
  StatusOr<std::vector<EtcdKv>> GetPrefix(const std::string& prefix, int64_t* revision = nullptr);
  Status Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // Writes `key` only if its mod revision is still `expected` (0: only if it does not exist):
  // the compare-and-set every shared record is changed with. False when someone else changed it.
  StatusOr<bool> PutIfUnchanged(const std::string& key, const std::string& value, int64_t expected,
                                int64_t lease = 0);
  Status Delete(const std::string& key);

  // A lease of `ttl_seconds`; keys written under it vanish when it is not kept alive.
  StatusOr<int64_t> GrantLease(int64_t ttl_seconds);
  // One keep-alive: the lease's new time to live in seconds, 0 when the lease is gone.
  StatusOr<int64_t> KeepAlive(int64_t lease);
  Status RevokeLease(int64_t lease);

  // Watches one key: calls on_change with the key's new state (nullopt: deleted) for every
  // change after `start_revision`, until `cancel` is cancelled or the stream ends. Runs on the
  // endpoint that answered last and does not fail over mid-stream: a caller that sees it return
  // reads the key again and watches from there. Returns OK when cancelled, UNAVAILABLE when the
  // stream broke, and FailedPrecondition when etcd compacted start_revision away.
  class WatchCancel;
  Status Watch(const std::string& key, int64_t start_revision, WatchCancel* cancel,
               const std::function<void(const std::optional<EtcdKv>&)>& on_change);

  const EtcdOptions& options() const { return options_; }

 private:
  struct Endpoint;
  EtcdClient(EtcdOptions options, std::vector<std::unique_ptr<Endpoint>> endpoints);
  // Runs `call` against the endpoints in turn (see above). `call` returns the gRPC outcome.
  template <typename Call>
  Status Run(const char* what, const Call& call);

  const EtcdOptions options_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  Mutex mu_;
  size_t current_ GROVE_GUARDED_BY(mu_) = 0;  // the endpoint that answered last
};

// Stops a running EtcdClient::Watch from another thread.
class EtcdClient::WatchCancel {
 public:
  void Cancel();
  bool cancelled();

 private:
  friend class EtcdClient;
  // The running watch's context, or null. False when already cancelled.
  bool Attach(grpc::ClientContext* ctx);
  Mutex mu_;
  bool cancelled_ GROVE_GUARDED_BY(mu_) = false;
  grpc::ClientContext* ctx_ GROVE_GUARDED_BY(mu_) = nullptr;
};

// The smallest key greater than every key starting with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(const std::string& prefix);

}  // namespace grove::cluster
