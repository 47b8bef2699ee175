#pragma once

// Membership: a groved in cluster mode keeps itself on the cluster's member list in etcd.
//
// Keys, under the cluster's prefix P = "/grove/<cluster>/" (docs/cluster.md):
//
//   P nodes/<name>   NodeInfo (proto/grove/v1/cluster.proto): address, version, start time.
//                    Written at every start, never deleted by the node: the list of members,
//                    alive or not.
//   P alive/<name>   the same NodeInfo, written under a lease of lease_ttl_seconds that the node
//                    keeps alive every third of it. A node whose key is gone is down.
//
// Start() claims alive/<name> only if no one holds it (a compare-and-set on "absent"): a second
// process with the same name is refused, and a node restarted after a kill -9 waits until its
// previous lease has expired (at most lease_ttl_seconds) before it claims the name again.
//
// State machine of the keeper thread:
//
//   kRegistered --keep-alive answered with TTL > 0--> kRegistered
//       |  \--etcd unreachable--> kRegistered (until the lease would have expired) --> kLost
//       \--keep-alive says the lease is gone--> kLost
//   kLost --a new lease granted and alive/<name> claimed--> kRegistered
//
// A node that lost its lease keeps serving: membership says who is up, it does not gate
// requests (ownership does, with the shard map).
//
// Thread safety: Start and Stop from one thread; the accessors from any.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "grove/logger.h"
#include "grove/status.h"

#include "cluster/etcd_client.h"
#include "cluster/members.h"
#include "util/mutex.h"

namespace grove::cluster {

struct MembershipOptions {
  std::string cluster = "default";     // names the prefix /grove/<cluster>/
  std::string node_name = "";          // unique in the cluster: [a-z0-9_-]{1,63}
  std::string advertise_address = "";  // where clients reach this node's gRPC port (host:port)
  std::string raft_address = "";       // where peers reach its Raft transport; "": none
  int64_t lease_ttl_seconds = 10;      // a node is down this long after it stopped answering
  std::string version = "";            // groved's version, shown by `grovectl cluster status`
};

class Membership {
 public:
  // Told about registration changes (metrics). May be null.
  struct Listener {
    virtual ~Listener() = default;
    virtual void OnRegistered(bool registered) = 0;
    virtual void OnKeepAlive(bool answered) = 0;
  };

  Membership(std::shared_ptr<EtcdClient> etcd, MembershipOptions options, Logger* logger,
             Listener* listener);
  ~Membership();  // Stop()

  // Registers the node, waiting up to lease_ttl_seconds + 2 s for a previous holder of its name
  // to expire, and starts the keeper thread. FailedPrecondition when the name stays held. When
  // etcd cannot be reached, returns OK unregistered: the keeper registers when etcd is back.
  Status Start() GROVE_EXCLUDES(mu_);
  // Stops the keeper and revokes the lease, so that the node is down at once (best effort: a
  // node that cannot reach etcd is down when its lease expires).
  void Stop() GROVE_EXCLUDES(mu_);

  bool registered() const { return registered_.load(); }
  int64_t lease() const { return lease_.load(); }

 private:
  Status Claim();                   // a new lease and alive/<name> under it
  void Keep() GROVE_EXCLUDES(mu_);  // the keeper thread
  // Sleeps up to `period` or until Stop; true when stopping.
  bool WaitForStop(std::chrono::milliseconds period) GROVE_EXCLUDES(mu_);
  void SetRegistered(bool r);

  const std::shared_ptr<EtcdClient> etcd_;
  const MembershipOptions options_;
  Logger* const logger_;
  Listener* const listener_;
  std::string info_;  // the serialized NodeInfo
  std::atomic<bool> registered_{false};
  std::atomic<int64_t> lease_{0};
  Mutex mu_;
  CondVar cv_{&mu_};
  bool stop_ GROVE_GUARDED_BY(mu_) = false;
  std::thread keeper_;
};

}  // namespace grove::cluster
