#pragma once

// Per-group figures of the replicated ranges a node holds (docs/cluster.md, "Serving replicated
// ranges"), read on each scrape; each series carries range="<range id>":
//
//   grove_raft_leader                        gauge, 1 while this node's replica leads the group
//   grove_raft_term                          gauge, the group's term (elections: its increase)
//   grove_raft_commit_index                  gauge, the last entry known committed
//   grove_raft_applied_index                 gauge, the last entry this replica applied (its
//                                            engine's writes, and the barriers between them)
//   grove_raft_last_index                    gauge, the last entry of this replica's log
//   grove_raft_follower_lag_entries{replica} gauge, on the leader: its last index minus what
//                                            each replica holds (its own series reads 0)
//   grove_raft_proposals_total{result}       counter, writes this replica proposed:
//                                            committed | failed
//   grove_raft_read_barriers_total{kind}     counter, linearizable reads at this replica that
//                                            waited for a barrier (kind="reads"), and the
//                                            barriers run for them (kind="barriers"; fewer:
//                                            reads arriving together share one)
//   grove_raft_replica_failed                gauge, 1 when the replica stopped applying or
//                                            refused a snapshot (its log says why)
//
// Thread safety: Collect may run concurrently with anything; `source` must be thread-safe.

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace grove::metrics {

struct RaftGroupFigures {
  uint64_t range = 0;
  bool leader = false;
  uint64_t term = 0, commit_index = 0, applied_index = 0, last_index = 0;
  std::vector<std::pair<uint64_t, uint64_t>> follower_lag;  // (replica id, entries behind)
  uint64_t proposals_committed = 0, proposals_failed = 0;
  uint64_t barrier_reads = 0, barriers = 0;
  bool failed = false;
};

class RaftCollector final : public prometheus::Collectable {
 public:
  explicit RaftCollector(std::function<std::vector<RaftGroupFigures>()> source)
      : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<std::vector<RaftGroupFigures>()> source_;
};

}  // namespace grove::metrics
