#pragma once

// grovectl's commands, each over a connected Client. They write results to `out`, diagnostics to
// `err`, and return the process exit status:
//
//   0  success
//   1  the call failed (the gRPC code and the server's message are printed)
//   2  bad usage (a malformed key, an unreadable file)
//   3  get: the key does not exist

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "grove/client/client.h"
#include "grove/client/codec.h"
#include "grove/client/record_reader.h"

#include <nlohmann/json_fwd.hpp>

namespace grove::cluster {
class EtcdClient;
}  // namespace grove::cluster

namespace grove::grovectl {

// One JSON line of -o json output. JSON strings must be UTF-8: text-format bytes that are not
// are replaced (ask for --key-format hex or base64 to keep them).
std::string Dump(const nlohmann::json& j);

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNotFound = 3;
inline constexpr int kExitPrecondition = 4;  // cas: the expectation did not hold

enum class Output { kText, kJson };

struct Context {
  client::Client* client = nullptr;
  client::Format key_format = client::Format::kText;
  client::Format value_format = client::Format::kText;
  Output output = Output::kText;
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

// Prints "grovectl: CODE: message" (with a hint for UNAVAILABLE) and returns kExitFailed.
int ReportRpcError(const Context& ctx, const grpc::Status& status);

int RunGet(const Context& ctx, const std::string& key);
// `value` is used unless `value_file` is set ("-" reads standard input).
int RunPut(const Context& ctx, const std::string& key, const std::string& value,
           const std::string& value_file, std::chrono::milliseconds ttl);
int RunDelete(const Context& ctx, const std::string& key);

// cas KEY NEW with exactly one expectation: the key holds `expect_value`, is at `expect_version`,
// or is absent.
struct CasArgs {
  std::string key;
  std::string new_value;
  bool has_expect_value = false;
  std::string expect_value;
  bool has_expect_version = false;
  uint64_t expect_version = 0;
  bool expect_absent = false;
};
int RunCas(const Context& ctx, const CasArgs& args);

// delete-range: calls of at most `limit` keys (0: the server's most) until the range is empty,
// or one call with `once`.
struct DeleteRangeArgs {
  std::string start;  // as written (decoded with the key format); empty: the smallest key
  std::string end;    // empty: past the largest key
  uint32_t limit = 0;
  bool once = false;
};
int RunDeleteRange(const Context& ctx, const DeleteRangeArgs& args);

// Parses a duration: a number with a unit (ms, s, m, h, d), e.g. "500ms", "30s", "1.5h"; a bare
// number is seconds. False (with `why`) when it is malformed or negative.
bool ParseDuration(const std::string& text, std::chrono::milliseconds* out, std::string* why);

// Parses a byte size: a number with an optional unit (B, KiB, MiB, GiB; K, M, G mean the same),
// e.g. "50MiB". False (with `why`) when it is malformed.
bool ParseBytes(const std::string& text, uint64_t* out, std::string* why);

// backup [NAME]: grove.v1.Admin/Backup on the server (into NAME under its backup.dir).
struct BackupArgs {
  std::string name;
  uint64_t max_bytes_per_second = 0;
  std::chrono::seconds wait{3600};
};
int RunBackup(const Context& ctx, const BackupArgs& args);

// verify: the server checks its database's structure (online, or with writers paused).
struct VerifyArgs {
  bool pause_writers = false;
  uint64_t cache_bytes = 0;
  std::chrono::seconds wait{3600};
};
int RunVerify(const Context& ctx, const VerifyArgs& args);

// trace start|stop|status: a sampled trace of what the server serves, under its trace.dir.
struct TraceArgs {
  enum class Action { kStart, kStop, kStatus };
  Action action = Action::kStatus;
  double sample = 0.01;
  double duration_seconds = 0;  // 0: until stopped
  std::string name;             // empty: trace-<UTC time>
  bool hash_keys = false;
};
int RunTrace(const Context& ctx, const TraceArgs& args);

// restore BACKUP DATA_DIR and verify-backup BACKUP: local, on the machine holding the backup
// (they open the database with the engine, not through a server).
struct RestoreArgs {
  std::string backup_dir;
  std::string data_dir;  // restore: the new data directory; verify-backup: a scratch one
  uint64_t cache_bytes = 256ull << 20;
  bool direct_io = true;
  bool checksums_only = false;  // verify-backup: check the files' checksums, do not open it
};
int RunRestore(const Context& ctx, const RestoreArgs& args);
int RunVerifyBackup(const Context& ctx, const RestoreArgs& args);

// grovectl cluster status: the members of a cluster and whether they are up, read from etcd.
struct ClusterArgs {
  std::vector<std::string> etcd_endpoints;
  std::string cluster = "default";
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
  double timeout_seconds = 5;
};
// The etcd client of a cluster command; null (with the message written) on a bad argument.
std::unique_ptr<cluster::EtcdClient> ConnectEtcd(const ClusterArgs& args, std::ostream& err);
// Nodes with liveness, then the shard map's ranges (keys shown in `key_format`).
int RunClusterStatus(const ClusterArgs& args, Output output, client::Format key_format,
                     std::ostream& out, std::ostream& err);
// Creates the cluster's shard map: one range over every key, owned by `owner`, cut at each
// split (decoded key, node) into a range of that node. With `replicas` (node names), every range
// is replicated on `factor` of them, starting at its owner (ShardMap::InitialReplicated).
int RunClusterInit(const ClusterArgs& args, const std::string& owner,
                   const std::vector<std::pair<std::string, std::string>>& splits,
                   const std::vector<std::string>& replicas, uint32_t factor,
                   client::Format key_format, std::ostream& out, std::ostream& err);
// Splits the range holding `key` at `key` (decoded bytes); both halves keep the owner.
// `expect_version` (0: any) refuses unless the map is at that version.
int RunClusterSplit(const ClusterArgs& args, const std::string& key, uint64_t expect_version,
                    client::Format key_format, std::ostream& out, std::ostream& err);

struct MoveArgs {
  std::string start;  // the range's first key (decoded)
  std::string node;   // the target
  bool abort = false;
  double max_keys_per_second = 0;      // the copy's pace; 0: as fast as it goes
  uint32_t batch_keys = 500;           // keys per BatchInsert to the target and per MoveChanges
  client::ClientOptions node_options;  // token, TLS and timeouts for the nodes
  // A replicated range (its replica moves: add, leadership, remove; grovectl/replicas.cc):
  std::string from;               // the replica that goes (default: the owner's)
  double catch_up_seconds = 600;  // how long the new replica may take to catch up
};
// Moves the range starting at move.start to move.node (grovectl/move.cc).
int RunClusterMove(const ClusterArgs& args, const MoveArgs& move, client::Format key_format,
                   std::ostream& out, std::ostream& err);

// cluster add-replica / remove-replica / transfer-leader RANGE NODE, and cluster move of a
// replicated range (`command` "move"): Raft configuration changes through the range's leader,
// the shard map written to match (grovectl/replicas.cc).
struct ReplicaArgs {
  std::string command;  // add-replica, remove-replica, transfer-leader, move or split
  std::string start;    // the range's first key (decoded); split: the key to split at
  std::string node;
  std::string from;               // move: the replica that goes (default: the owner's)
  double catch_up_seconds = 600;  // how long a new replica may take to catch up
};
int RunClusterReplicas(const ClusterArgs& args, const ReplicaArgs& replica,
                       client::Format key_format, std::ostream& out, std::ostream& err);

struct ScanArgs {
  std::string start;  // as written (decoded with the key format)
  std::string end;
  uint64_t limit = 0;
  bool reverse = false;
  bool keys_only = false;
  uint32_t page_size = 10000;
};
int RunScan(const Context& ctx, const ScanArgs& args);

struct LoadArgs {
  std::string file;    // "-" reads standard input
  std::string format;  // "csv", "tsv", "jsonl"; empty: from the file name
  bool header = false;
  uint32_t batch_entries = 1000;
  uint64_t batch_bytes = 1ull << 20;
  int progress = -1;  // 1 on, 0 off, -1 when stderr is a terminal
};
int RunLoad(const Context& ctx, const LoadArgs& args);

int RunStats(const Context& ctx);
int RunHealth(const Context& ctx, const std::string& service);

}  // namespace grove::grovectl
