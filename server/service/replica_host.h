#pragma once

// ReplicaHost: a groved's replicas of the shard map's replicated ranges (docs/cluster.md,
// "Replicated ranges").
//
// It owns the node's Raft loop and transport (cluster.raft.listen: one port for all its groups)
// and one ReplicatedRange per replicated range whose replicas list this node. A range's group is
// the range's id, this replica's id in it the map's, its Raft log
// <data_dir>/raft/range-<id>.<replica id>, and its marks in the engine
// raft/range-<id>/{applied,installing}.
//
//   Start      the transport listens (an address in use fails groved's start)
//   Open(db)   the starter thread runs: every 250 ms it looks at the watcher's map, starts the
//              replicas it lists for this node that are not running yet, and stops those it no
//              longer lists. A new group is bootstrapped with every replica's Raft address, read
//              from etcd (nodes/<name>, which each node writes at start): a replica whose peers
//              have not registered yet waits for them. A range whose replicas changed since
//              (ShardRange::reconfigured) is joined instead: the replica starts empty and the
//              leader, whose configuration lists it, brings it the log or a snapshot.
//   Stop       the starter ends, each replica is closed (its group stops; the engine keeps
//              what it applied), then the transport and the loop.
//
// A replica that starts without Raft state drops what the engine holds of its range first (the
// keys and marks of an earlier replica on this node, or of one whose log was lost). A replica
// the map no longer lists for this node (grovectl cluster remove-replica took it out of its
// group) is stopped, and its keys, marks and log are dropped; a groved that was down then drops
// them at its next start.
//
// A replica behind a snapshot installs its range from another replica over gRPC
// (grove.v1.Replication/CopyRange, the service() registered on groved's port), trying the other
// replicas in turn: any that has applied the snapshot's index can serve it.
//
// The group's configuration is the group's own: grovectl changes it through the leader
// (grove.v1.RangeMembership) and writes the map to match; this host follows the map.
//
// Thread safety: every method from any thread. Find's replicas stay valid while the caller holds
// them; Stop waits for nothing the callers hold, so it runs after the gRPC server drained.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "grove/db.h"
#include "grove/logger.h"
#include "grove/status.h"

#include "cluster/etcd_client.h"
#include "cluster/map_watcher.h"
#include "cluster/raft/group_transport.h"
#include "cluster/raft/raft_loop.h"
#include "cluster/raft/range_copy_rpc.h"
#include "cluster/raft/replicated_range.h"
#include "config/config.h"
#include "metrics/raft_metrics.h"
#include "util/mutex.h"

namespace grove::service {

struct ReplicaHostOptions {
  std::string cluster;  // cluster.name
  std::string node;     // cluster.node_name
  config::RaftConfig raft;
  std::string dir;  // where the groups' logs live: <data_dir>/raft
  // The engine's limits (Options::max_*): a write outside them is refused before it is proposed.
  uint32_t max_key_bytes = 128;
  uint32_t max_value_bytes = 64u << 10;
  uint64_t max_batch_bytes = 4ull << 20;
  uint32_t max_batch_entries = 10000;
};

class ReplicaHost {
 public:
  // Starts the loop and the transport. `watcher` and `logger` must outlive the host.
  static StatusOr<std::unique_ptr<ReplicaHost>> Start(ReplicaHostOptions options,
                                                      std::shared_ptr<cluster::EtcdClient> etcd,
                                                      cluster::ShardMapWatcher* watcher,
                                                      Logger* logger);
  ~ReplicaHost();  // Stop()
  ReplicaHost(const ReplicaHost&) = delete;
  ReplicaHost& operator=(const ReplicaHost&) = delete;

  // Starts replicas on `db` (which must outlive Stop) from now on.
  void Open(Db* db) GROVE_EXCLUDES(mu_);
  void Stop() GROVE_EXCLUDES(mu_);

  // The replica of range `range_id` on this node; null while it is not running.
  std::shared_ptr<raft::ReplicatedRange> Find(uint64_t range_id) const GROVE_EXCLUDES(mu_);
  // Why the replica of `range_id` is not running (empty: it runs, or the host never tried).
  std::string StartProblem(uint64_t range_id) const GROVE_EXCLUDES(mu_);

  // The metrics of every running replica (metrics/raft_metrics.h).
  std::vector<metrics::RaftGroupFigures> Figures() const GROVE_EXCLUDES(mu_);

  // Serves copies of this node's replicas to the others; register it on groved's gRPC server.
  raft::ReplicationService* service() { return &service_; }
  const std::string& node() const { return options_.node; }
  // Where peers reach the transport: what the node registers as its Raft address.
  std::string raft_address() const { return transport_->address(); }

 private:
  ReplicaHost(ReplicaHostOptions options, std::shared_ptr<cluster::EtcdClient> etcd,
              cluster::ShardMapWatcher* watcher, Logger* logger);
  void Run() GROVE_EXCLUDES(mu_);
  struct Hosted {
    std::unique_ptr<raft::GrpcRangeSource> source;  // before the range, which uses it
    std::shared_ptr<raft::ReplicatedRange> range;
    raft::ReplicatedRangeOptions options;  // what it was started with
  };
  // Starts the replicas `map` lists for this node that are not running; stops and drops those
  // it no longer lists (or lists under another replica id).
  void Reconcile(const cluster::ShardMap& map) GROVE_EXCLUDES(mu_);
  Status StartReplica(const cluster::ShardRange& range,
                      const std::map<std::string, std::string>& raft_addresses) GROVE_EXCLUDES(mu_);
  // A replica taken out of the map: closed, then (once the calls holding it let go) its keys,
  // marks and Raft directory removed.
  void StopAndDrop(Hosted hosted) GROVE_EXCLUDES(mu_);
  // At the first map: the replica directories (and engine copies) of replicas this node no
  // longer has, left by a groved stopped before it could drop them.
  void DropLeftovers(const cluster::ShardMap& map) GROVE_EXCLUDES(mu_);
  raft::ReplicatedRangeOptions Options(const cluster::ShardRange& range, uint64_t replica_id) const;
  // The gRPC address of another replica of `range_id` to copy from, a different one each call.
  StatusOr<std::string> CopySource(uint64_t range_id) GROVE_EXCLUDES(mu_);
  void Log(LogLevel level, const std::string& message) { logger_->Log(level, message); }

  const ReplicaHostOptions options_;
  const std::shared_ptr<cluster::EtcdClient> etcd_;
  cluster::ShardMapWatcher* const watcher_;
  Logger* const logger_;
  std::unique_ptr<raft::RaftLoop> loop_;
  std::unique_ptr<raft::GroupTransport> transport_;
  raft::ReplicationService service_;
  std::atomic<uint64_t> source_turn_{0};

  mutable Mutex mu_;
  CondVar wake_{&mu_};
  Db* db_ GROVE_GUARDED_BY(mu_) = nullptr;
  bool stop_ GROVE_GUARDED_BY(mu_) = false;
  std::map<uint64_t, Hosted> replicas_ GROVE_GUARDED_BY(mu_);  // by range id
  std::map<uint64_t, std::string> problems_ GROVE_GUARDED_BY(mu_);
  std::thread starter_;
};

}  // namespace grove::service
