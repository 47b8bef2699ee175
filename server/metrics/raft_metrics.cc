#include "metrics/raft_metrics.h"

#include <string>

namespace grove::metrics {
namespace {

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  return prometheus::MetricFamily{name, help, type, {}};
}

prometheus::ClientMetric Gauge(uint64_t range, double value) {
  prometheus::ClientMetric m;
  m.label.push_back({"range", std::to_string(range)});
  m.gauge.value = value;
  return m;
}

}  // namespace

std::vector<prometheus::MetricFamily> RaftCollector::Collect() const {
  using prometheus::MetricType;
  auto leader = Family("grove_raft_leader", "1 while this node's replica leads the range's group.",
                       MetricType::Gauge);
  auto term = Family("grove_raft_term",
                     "The Raft term of the range's group (each election "
                     "raises it).",
                     MetricType::Gauge);
  auto commit =
      Family("grove_raft_commit_index",
             "The last entry of the range's log this replica knows committed.", MetricType::Gauge);
  auto applied =
      Family("grove_raft_applied_index", "The last entry of the range's log this replica applied.",
             MetricType::Gauge);
  auto last =
      Family("grove_raft_last_index", "The last entry of this replica's log.", MetricType::Gauge);
  auto lag = Family("grove_raft_follower_lag_entries",
                    "On the leader: entries of its log each replica does not hold yet.",
                    MetricType::Gauge);
  auto proposals =
      Family("grove_raft_proposals_total",
             "Writes this replica proposed to the range's group, by outcome.", MetricType::Counter);
  auto barriers = Family("grove_raft_read_barriers_total",
                         "Linearizable reads that waited for a barrier (kind reads), and the "
                         "barriers run for them (kind barriers).",
                         MetricType::Counter);
  auto failed =
      Family("grove_raft_replica_failed",
             "1 when this replica stopped applying or refused a snapshot.", MetricType::Gauge);
  for (const RaftGroupFigures& g : source_()) {
    leader.metric.push_back(Gauge(g.range, g.leader ? 1 : 0));
    term.metric.push_back(Gauge(g.range, static_cast<double>(g.term)));
    commit.metric.push_back(Gauge(g.range, static_cast<double>(g.commit_index)));
    applied.metric.push_back(Gauge(g.range, static_cast<double>(g.applied_index)));
    last.metric.push_back(Gauge(g.range, static_cast<double>(g.last_index)));
    failed.metric.push_back(Gauge(g.range, g.failed ? 1 : 0));
    for (const auto& [replica, behind] : g.follower_lag) {
      prometheus::ClientMetric m = Gauge(g.range, static_cast<double>(behind));
      m.label.push_back({"replica", std::to_string(replica)});
      lag.metric.push_back(std::move(m));
    }
    auto counter = [&](prometheus::MetricFamily* family, const char* label, const char* value,
                       uint64_t count) {
      prometheus::ClientMetric m;
      m.label.push_back({"range", std::to_string(g.range)});
      m.label.push_back({label, value});
      m.counter.value = static_cast<double>(count);
      family->metric.push_back(std::move(m));
    };
    counter(&proposals, "result", "committed", g.proposals_committed);
    counter(&proposals, "result", "failed", g.proposals_failed);
    counter(&barriers, "kind", "reads", g.barrier_reads);
    counter(&barriers, "kind", "barriers", g.barriers);
  }
  return {std::move(leader),    std::move(term),     std::move(commit),
          std::move(applied),   std::move(last),     std::move(lag),
          std::move(proposals), std::move(barriers), std::move(failed)};
}

}  // namespace grove::metrics
