#pragma once

// grove::client::Client: one small class over the grove.v1.KV stub.
//
//   * Every call gets a deadline (ClientOptions::timeout per attempt).
//   * Reads (Get, BatchGet, Scan, Stats) are retried on UNAVAILABLE (server starting, draining,
//     restarting, or the connection broke) with exponential backoff and jitter, up to
//     max_attempts.
//   * Writes (Put, Delete, BatchInsert) are sent only over a ready connection (each attempt waits
//     up to connect_timeout for one; an attempt without one is not sent and is retried), and are
//     retried on UNAVAILABLE only when the server says it refused them before applying anything
//     (trailing metadata "grove-not-applied"). A write whose connection broke after it was sent
//     may have been applied: retrying it blindly could apply it a second time after another
//     client's later write to the same key (the linearizability test caught exactly that), so it
//     fails with UNAVAILABLE and a message saying its outcome is unknown.
//   * TLS and mutual TLS from PEM files; a bearer token is sent with every KV call.
//   * Scan pages and resumes: it asks for page_size entries at a time, continues while the server
//     says more, and after a broken stream restarts right after the last key it delivered, so the
//     callback sees each key exactly once, in order.
//
// Cluster routing: with `address` "etcd://host:port[,host:port...]/CLUSTER" the client reads the
// cluster's shard map and member list from etcd and sends each call to the node owning its keys
// (client/lib/router.h, docs/cluster.md "Routing"): Get, Put and Delete by key, BatchGet split per
// node, BatchInsert only within one range (INVALID_ARGUMENT otherwise), Scan and DeleteRange
// across ranges in key order. A node's OUT_OF_RANGE (not the owner) makes it read the map again
// and resend; Stats, Backup and Health are per node (NodeStats gives every node's figures).
//
// Errors are grpc::Status values with the server's message (the field is named there). A
// status whose call certainly applied nothing (not sent, or refused by the server before it
// applied anything: trailing metadata grove-not-applied) carries error_details() equal to
// kNotAppliedDetails: resending it, even a write, is safe.
//
// Thread safety: a Client may be shared by many threads.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include "grove/v1/admin.grpc.pb.h"
#include "grove/v1/kv.grpc.pb.h"

#include "grpc/health/v1/health.grpc.pb.h"

namespace grove::client {

// error_details() of a status whose call applied nothing (see above).
inline constexpr char kNotAppliedDetails[] = "grove-not-applied";
inline bool NotApplied(const grpc::Status& s) {
  return !s.ok() && s.error_details() == kNotAppliedDetails;
}

class Router;
class Batcher;

struct ClientOptions {
  std::string address = "127.0.0.1:7400";
  std::string token;  // bearer token; empty sends none

  bool tls = false;
  std::string ca_file;    // CA that signed the server certificate; empty: system roots
  std::string cert_file;  // client certificate and key, for servers that require mutual TLS
  std::string key_file;
  std::string server_name;  // expected name in the server certificate, when not the address

  std::chrono::milliseconds timeout{10000};  // deadline of each attempt
  int max_attempts = 5;                      // attempts on UNAVAILABLE, the first included
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // How long a write waits for a ready connection (at most `timeout`) before that attempt is
  // refused unsent, which is safe to retry. Short, so that a broken TLS setup fails fast.
  std::chrono::milliseconds connect_timeout{1000};
  // Metadata sent with every call besides the token, e.g. grove-move-ingest for a range move's
  // copy (grove/v1/metadata.h).
  std::vector<std::pair<std::string, std::string>> metadata;

  // How Get, BatchGet, Put, Delete, BatchInsert and DeleteRange travel. kStream: the calls of
  // every thread are multiplexed onto `streams` grove.v1.KV/Batch streams of the channel, a lone
  // call sent at once and calls that meet a message in flight coalesced into the next one, up to
  // stream_max_calls (docs/server.md, "Many calls on one stream"): the same answers, errors and
  // retry rules as unary, at a fraction of the per-call cost. kUnary: one RPC per call. Scan,
  // Stats and the admin calls are unary either way, and so is a cluster client (etcd://). A
  // server without Batch (UNIMPLEMENTED) is served unary calls from then on.
  enum class Transport { kStream, kUnary };
  Transport transport = Transport::kStream;
  int streams = 1;
  size_t stream_max_calls = 256;
  // Request messages a stream has sent and not had answered in full; groved answers them in
  // order. 1: a message is sent only once the last one's results are all back.
  size_t stream_messages_in_flight = 2;
  // kStream: a call that finds no other call of this client in flight goes as a unary RPC.
  // Alone it shares no message, and the stream's thread hand-offs (the caller to groved's reader,
  // the client's reader back to the caller) would only add to its latency: at one thread the
  // stream's p50 was 1.13x and its p99 1.24-1.47x unary's. Calls that overlap take the stream.
  bool stream_lone_calls_unary = true;

  // etcd:// addresses only: TLS to etcd when etcd_ca_file (the CA that signed etcd's
  // certificate) is set; etcd_cert_file and etcd_key_file, together, for etcd's
  // --client-cert-auth. The nodes themselves are reached with the TLS settings above.
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
};

// A condition on the key a write changes (grove.v1.Precondition): the write applies only when it
// holds, and fails with FAILED_PRECONDITION otherwise.
struct Precondition {
  enum class Kind { kNone, kAbsent, kValueEquals, kVersionEquals };
  Kind kind = Kind::kNone;
  std::string value;     // kValueEquals
  uint64_t version = 0;  // kVersionEquals

  static Precondition Absent() { return {Kind::kAbsent, "", 0}; }
  static Precondition ValueEquals(std::string v) { return {Kind::kValueEquals, std::move(v), 0}; }
  static Precondition VersionEquals(uint64_t v) { return {Kind::kVersionEquals, "", v}; }
};

// What the key of a failed precondition holds, from the FAILED_PRECONDITION's trailing metadata.
struct ConditionFailure {
  bool found = false;
  uint64_t version = 0;
  bool has_value = false;  // the write asked for the value (return_current) and the key is present
  std::string value;
  int mutation = -1;  // BatchInsert: the mutation whose precondition failed
};

struct Mutation {
  enum class Type { kPut, kDelete };
  Mutation() = default;
  // {type, key, value} as before preconditions existed, or with one.
  Mutation(Type t, std::string k, std::string v, Precondition p = {})
      : type(t), key(std::move(k)), value(std::move(v)), precondition(std::move(p)) {}

  Type type = Type::kPut;
  std::string key;
  std::string value;
  Precondition precondition;         // kNone: unconditional
  std::chrono::milliseconds ttl{0};  // kPut: time to live (0: the key does not expire)
};

// How Put and Delete write (grove.v1.PutRequest / DeleteRequest).
struct WriteOptions {
  Precondition precondition;  // kNone: unconditional
  // Put only: the key reads as absent this long after the server applies the put (0: never).
  std::chrono::milliseconds ttl{0};
  bool return_current = false;  // on FAILED_PRECONDITION, fetch the key's value too
};

// What a write reports besides its status.
struct WriteOutcome {
  uint64_t version = 0;      // OK: the version the write gave its keys
  ConditionFailure failure;  // FAILED_PRECONDITION: what the key holds
};

// What Get reports besides the value.
struct ValueInfo {
  uint64_t version = 0;     // the key's version (0 when absent)
  uint64_t expires_ms = 0;  // Unix milliseconds from which it reads as absent; 0: never
};

// What DeleteRange did (grove.v1.DeleteRangeResponse).
struct DeleteRangeOutcome {
  uint64_t deleted = 0;
  bool more = false;  // a limit stopped it: continue from resume_key
  std::string resume_key;
  std::string limited_by;  // "limit" or "limits.max_batch_entries"
  uint64_t version = 0;
};

// Keys in [start, end) (end empty: to the last key), forward or reverse.
struct ScanRange {
  std::string start;
  std::string end;
  uint64_t limit = 0;  // entries in total; 0: all of them
  bool reverse = false;
  bool keys_only = false;
  uint32_t page_size = 10000;  // entries per request (at most the server's limits.max_scan_limit)
};

// Return false to stop the scan early (Scan then returns OK).
using ScanVisitor = std::function<bool(std::string_view key, std::string_view value)>;
// The same with the entry's expiry: Unix ms from which it reads as absent, 0 for never.
using ScanEntryVisitor =
    std::function<bool(std::string_view key, std::string_view value, uint64_t expires_at_ms)>;

class Client {
 public:
  // INVALID_ARGUMENT naming the option when a TLS file cannot be read. Does not connect yet:
  // the first call does.
  static grpc::Status Create(const ClientOptions& options, std::unique_ptr<Client>* client);
  ~Client();

  grpc::Status Get(std::string_view key, std::string* value, bool* found);
  // The same, with the key's version and expiry (zeros when absent).
  grpc::Status Get(std::string_view key, std::string* value, bool* found, ValueInfo* info);
  // (*values)[i] answers keys[i]; nullopt when absent.
  grpc::Status BatchGet(const std::vector<std::string>& keys,
                        std::vector<std::optional<std::string>>* values);
  grpc::Status Put(std::string_view key, std::string_view value);
  grpc::Status Delete(std::string_view key);
  // Conditional writes (compare-and-swap: Precondition::VersionEquals of the version Get
  // returned) and puts that expire. `outcome` (may be null) receives the new version, or on
  // FAILED_PRECONDITION what the key holds.
  grpc::Status Put(std::string_view key, std::string_view value, const WriteOptions& options,
                   WriteOutcome* outcome = nullptr);
  grpc::Status Delete(std::string_view key, const WriteOptions& options,
                      WriteOutcome* outcome = nullptr);
  // Atomic and durable: all mutations or none (none when any precondition fails;
  // outcome->failure.mutation names it).
  grpc::Status BatchInsert(const std::vector<Mutation>& mutations, WriteOutcome* outcome = nullptr);
  // Deletes the keys of [start, end) (empty: unbounded), at most `limit` (0: the server's most)
  // in this call; outcome->more and resume_key say whether and where to continue.
  grpc::Status DeleteRange(std::string_view start, std::string_view end, uint32_t limit,
                           DeleteRangeOutcome* outcome);
  // grove.v1.Admin/Backup: a consistent backup into a new directory `name` (empty: a generated
  // name) under the server's backup.dir, while it serves. Needs the admin role. Waits up to
  // `deadline` (the copy takes as long as the disk needs); not retried unless the server refused
  // it before starting.
  grpc::Status Backup(const std::string& name, uint64_t max_bytes_per_second,
                      std::chrono::seconds deadline, v1::BackupResponse* response);
  // grove.v1.Admin/Verify: checks the database's structure while it serves (online: a snapshot of
  // the newest checkpoint; `pause_writers`: the live state, every write held meanwhile). Needs
  // the admin role. Problems found are in the response. Waits up to `deadline`; not retried
  // unless the server refused it before starting.
  grpc::Status Verify(bool pause_writers, uint64_t cache_bytes, std::chrono::seconds deadline,
                      v1::VerifyResponse* response);
  // grove.v1.Admin/StartTrace, StopTrace and GetTraceStatus: a sampled trace of the calls the
  // server serves, under its trace.dir (docs/operations.md, "Trace the workload"). Admin role.
  // `hash_keys`: the server writes keys hashed, order kept (docs/formats/trace.md).
  grpc::Status StartTrace(double sample, double duration_seconds, const std::string& name,
                          bool hash_keys, v1::TraceStatusResponse* response);
  grpc::Status StopTrace(v1::TraceStatusResponse* response);
  grpc::Status TraceStatus(v1::TraceStatusResponse* response);
  grpc::Status Scan(const ScanRange& range, const ScanVisitor& visit);
  grpc::Status ScanWithExpiry(const ScanRange& range, const ScanEntryVisitor& visit);
  grpc::Status Stats(v1::StatsResponse* stats);
  // grove.v1.Admin/MoveChanges (cluster mode, for a range move's copy): one node's record of
  // the keys written into a moving range. Needs the admin role.
  grpc::Status MoveChanges(uint64_t move_id, uint64_t token, uint32_t max_keys,
                           v1::MoveChangesResponse* response);
  // The health of `service` ("" = the whole server), e.g. SERVING.
  grpc::Status Health(const std::string& service,
                      grpc::health::v1::HealthCheckResponse::ServingStatus* status);

  // Every node's Stats (a cluster client: the owners in the shard map, by name; otherwise the
  // one server, named by its address).
  grpc::Status NodeStats(std::vector<std::pair<std::string, v1::StatsResponse>>* stats);

  const ClientOptions& options() const { return options_; }

 private:
  friend class Router;
  Client(ClientOptions options, std::shared_ptr<grpc::Channel> channel);
  explicit Client(ClientOptions options, std::unique_ptr<Router> router);

  // One server's Scan. *stopped_at (may be null) receives the server's
  // grove-scan-stopped-at-bin trailer when the scan reached the end of the node's range;
  // *visitor_stopped whether `visit` or the limit ended it.
  grpc::Status ScanNode(const ScanRange& range, const ScanEntryVisitor& visit,
                        std::string* stopped_at, bool* visitor_stopped);

  // A context with this attempt's deadline and the token.
  std::unique_ptr<grpc::ClientContext> NewContext() const;
  // True when the channel is connected, after waiting up to connect_timeout (at most timeout).
  bool WaitForConnection();
  // Runs attempt(context) with a fresh context per attempt until it returns something other than
  // UNAVAILABLE or attempts run out; `write` selects the write rules above.
  grpc::Status WithRetries(const std::function<grpc::Status(grpc::ClientContext*)>& attempt,
                           bool write = false);
  // The retry loop itself: attempt(&not_applied) sets not_applied when the server (or the
  // stream, for a call it never sent) says nothing was applied.
  grpc::Status Retry(const std::function<grpc::Status(bool* not_applied)>& attempt, bool write);
  // One KV call: `sub` over the Batch stream when the client has one (take(result) then moves
  // the response out), `unary(context)` otherwise. `failure` (may be null) receives what a failed
  // precondition found.
  grpc::Status KvCall(const v1::SubRequest& sub, bool write, ConditionFailure* failure,
                      const std::function<grpc::Status(grpc::ClientContext*)>& unary,
                      const std::function<void(v1::SubResult*)>& take);
  std::chrono::milliseconds Backoff(int retry);

  const ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KV::Stub> kv_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  std::unique_ptr<Batcher> batcher_;    // Transport::kStream (not for a cluster client)
  std::atomic<bool> no_stream_{false};  // the server answered Batch with UNIMPLEMENTED
  std::atomic<int> lone_calls_{0};      // a lone call is on its unary way (0 or 1)
  // Backoff jitter without a lock: each draw advances this by a fixed odd step and mixes it.
  std::atomic<uint64_t> jitter_state_;
  // Cluster mode: the router (then the stubs above are null); for a router's node client, the
  // map version it routes by, sent as grove-map-version.
  std::unique_ptr<Router> router_;
  std::atomic<uint64_t> routed_map_version_{0};
};

}  // namespace grove::client
