#pragma once

// Router: the cluster side of grove::client::Client, for addresses
// "etcd://host:port[,host:port...][/CLUSTER]" (CLUSTER defaults to "default").
//
// It caches a view of the cluster (the shard map and the members' advertised addresses, read
// from etcd) and a Client per node, and sends each call to the owner of its keys with the map
// version it routes by (grove-map-version). A node that does not own a key answers OUT_OF_RANGE
// before applying anything; the router then reads the view again (once for all the threads that
// saw the same version refused) and resends, up to kRouteAttempts times. A routed write is so
// retried only on that refusal or on the node's own not-applied UNAVAILABLE, never after a
// write whose outcome is unknown.
//
// A replicated range (docs/cluster.md, "Replicated ranges") is served by whichever of its
// replicas leads its Raft group. The router sends its calls to the replica that last answered
// for it (at first its owner); when that one refuses as not the leader (OUT_OF_RANGE) or cannot be
// reached, the next call goes to the replica after it, so a router finds a new leader within
// the range's replica count of refusals.
//
//   Get, Put, Delete     the owner of the key
//   BatchGet             split per owner, answers put back in the request's order
//   BatchInsert          atomic only within one range: keys of two ranges are INVALID_ARGUMENT
//   Scan                 range after range in key order (either direction): each owner scans
//                        to its range's edge and names the boundary, where the next one starts
//   DeleteRange          range after range, each part sent to its owner; a limit stops it
//
// Thread safety: every method may be called concurrently.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/client/client.h"

#include "cluster/etcd_client.h"
#include "cluster/shard_map.h"
#include "util/mutex.h"

namespace grove::client {

class Router {
 public:
  static constexpr int kRouteAttempts = 5;

  // INVALID_ARGUMENT when the address is not a valid etcd:// address. Reads nothing yet.
  static grpc::Status Create(const ClientOptions& options, std::unique_ptr<Router>* router);

  grpc::Status Get(std::string_view key, std::string* value, bool* found, ValueInfo* info);
  grpc::Status BatchGet(const std::vector<std::string>& keys,
                        std::vector<std::optional<std::string>>* values);
  grpc::Status Put(std::string_view key, std::string_view value, const WriteOptions& options,
                   WriteOutcome* outcome);
  grpc::Status Delete(std::string_view key, const WriteOptions& options, WriteOutcome* outcome);
  grpc::Status BatchInsert(const std::vector<Mutation>& mutations, WriteOutcome* outcome);
  grpc::Status DeleteRange(std::string_view start, std::string_view end, uint32_t limit,
                           DeleteRangeOutcome* outcome);
  grpc::Status Scan(const ScanRange& range, const ScanEntryVisitor& visit);
  grpc::Status NodeStats(std::vector<std::pair<std::string, v1::StatsResponse>>* stats);

 private:
  // What the router knows of the cluster.
  struct View {
    std::shared_ptr<const cluster::ShardMap> map;
    std::map<std::string, std::string> addresses;  // node name -> advertised address
  };

  Router(ClientOptions node_options, std::string cluster,
         std::unique_ptr<cluster::EtcdClient> etcd);
  // The current view, read from etcd the first time.
  grpc::Status Current(std::shared_ptr<const View>* view) GROVE_EXCLUDES(mu_);
  // Reads the view from etcd again unless it has changed since `seen` was current.
  grpc::Status Refresh(const std::shared_ptr<const View>& seen) GROVE_EXCLUDES(mu_, refresh_mu_);
  // The Client of node `owner` in `view`.
  grpc::Status NodeClient(const View& view, const std::string& owner, Client** client)
      GROVE_EXCLUDES(mu_);
  // The node to send a call on `range` to: its owner, or for a replicated range the replica
  // believed to lead it; a `read` of a client that accepts stale reads (the metadata
  // grove-max-staleness-ms in ClientOptions::metadata) goes to each replica in turn.
  std::string Target(const cluster::ShardRange& range, bool read = false) GROVE_EXCLUDES(mu_);
  // After `status` from `tried` for `range`: a replicated range's next call goes to the replica
  // after `tried` when it refused as not the leader or could not be reached. A stale read that
  // succeeded says nothing of the leader.
  void Observe(const cluster::ShardRange& range, const std::string& tried,
               const grpc::Status& status, bool read = false) GROVE_EXCLUDES(mu_);
  // Runs call(client of the owner of `key`), rerouting on OUT_OF_RANGE (see above).
  // `read`: the call may be resent after any UNAVAILABLE (a write only after a not-applied one).
  grpc::Status ForKey(std::string_view key, bool read,
                      const std::function<grpc::Status(Client*)>& call);

  const ClientOptions node_options_;  // options of each node's Client (address set per node)
  const std::string cluster_;
  const std::unique_ptr<cluster::EtcdClient> etcd_;

  Mutex refresh_mu_ GROVE_ACQUIRED_BEFORE(mu_);  // one etcd read at a time
  Mutex mu_;
  std::shared_ptr<const View> view_ GROVE_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Client>> clients_ GROVE_GUARDED_BY(mu_);  // by address
  std::map<uint64_t, std::string> leaders_ GROVE_GUARDED_BY(mu_);                 // by range id
  const bool stale_reads_;  // reads accept staleness: spread over the replicas
  std::atomic<uint64_t> read_turn_{0};
};

}  // namespace grove::client
