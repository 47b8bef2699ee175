// grovectl cluster ...: commands that read the cluster's metadata in etcd (docs/cluster.md),
// without going through a groved.

#include <ctime>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cluster/membership.h"
#include "grovectl/commands.h"

namespace grove::grovectl {
namespace {

std::string Utc(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

int RunClusterStatus(const ClusterArgs& args, Output output, std::ostream& out,
                     std::ostream& err) {
  cluster::EtcdOptions eo;
  eo.endpoints = args.etcd_endpoints;
  eo.ca_file = args.etcd_ca_file;
  eo.cert_file = args.etcd_cert_file;
  eo.key_file = args.etcd_key_file;
  eo.call_timeout_seconds = args.timeout_seconds;
  auto etcd = cluster::EtcdClient::Create(eo);
  if (!etcd.ok()) {
    err << "grovectl: cluster: " << etcd.status().ToString() << "\n";
    return kExitUsage;
  }
  if (Status s = cluster::CheckNames(args.cluster, "x"); !s.ok()) {
    err << "grovectl: cluster: --cluster: " << s.ToString() << "\n";
    return kExitUsage;
  }
  auto nodes = cluster::ListNodes(etcd->get(), args.cluster);
  if (!nodes.ok()) {
    err << "grovectl: cluster status: " << nodes.status().ToString() << "\n";
    return kExitFailed;
  }
  if (output == Output::kJson) {
    for (const cluster::NodeStatus& n : *nodes) {
      nlohmann::json j = {{"cluster", args.cluster},
                          {"node", n.name},
                          {"state", n.alive ? "up" : "down"},
                          {"address", n.address},
                          {"version", n.version},
                          {"started_unix_ms", n.started_unix_ms}};
      out << j.dump() << "\n";
    }
    return kExitOk;
  }
  size_t up = 0;
  for (const cluster::NodeStatus& n : *nodes) up += n.alive ? 1 : 0;
  out << "cluster " << args.cluster << ": " << nodes->size() << " nodes, " << up << " up\n";
  if (nodes->empty()) return kExitOk;
  size_t w = 4;
  for (const cluster::NodeStatus& n : *nodes) w = std::max(w, n.name.size());
  auto pad = [](const std::string& s, size_t width) {
    return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
  };
  out << pad("NODE", w + 2) << "STATE  " << pad("ADDRESS", 24) << pad("VERSION", 10)
      << "STARTED\n";
  for (const cluster::NodeStatus& n : *nodes) {
    out << pad(n.name, w + 2) << pad(n.alive ? "up" : "down", 7) << pad(n.address, 24)
        << pad(n.version, 10) << Utc(n.started_unix_ms) << "\n";
  }
  return kExitOk;
}

}  // namespace grove::grovectl
