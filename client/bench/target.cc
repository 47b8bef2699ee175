#include "bench/target.h"

#include <cmath>

namespace grove::bench {

double CounterDelta(const TargetStats& before, const TargetStats& after, const std::string& name) {
  auto a = after.counters.find(name);
  if (a == after.counters.end()) return NAN;
  auto b = before.counters.find(name);
  return a->second - (b == before.counters.end() ? 0 : b->second);
}

double GaugeValue(const TargetStats& s, const std::string& name) {
  auto it = s.gauges.find(name);
  return it == s.gauges.end() ? NAN : it->second;
}

Status Session::WriteBatch(const std::vector<std::pair<std::string, std::string>>& entries) {
  for (const auto& [k, v] : entries) GROVE_RETURN_IF_ERROR(Write(k, v));
  return Status::Ok();
}

Status Session::Delete(Slice) { return Status::Unimplemented("this target has no delete"); }

Status Session::BatchRead(const std::vector<std::string>&, uint64_t*) {
  return Status::Unimplemented("this target has no batch read");
}

Status Session::WriteMutations(const std::vector<Mutation>&) {
  return Status::Unimplemented("this target has no batch of puts and deletes");
}

Status Session::DeleteRange(Slice, Slice, uint64_t, uint64_t*) {
  return Status::Unimplemented("this target has no range delete");
}

Status Session::ReverseScan(Slice, Slice, uint32_t, uint64_t*) {
  return Status::Unimplemented("this target has no reverse scan");
}

Status Target::BulkLoad(const BulkSource&) {
  return Status::Unimplemented(Uri() + " has no bulk load; use --load-method put or batch");
}

StatusOr<TargetUri> ParseTargetUri(const std::string& uri) {
  TargetUri t;
  std::string rest;
  const size_t sep = uri.find_first_of(":?");
  t.scheme = uri.substr(0, sep);
  if (sep != std::string::npos) {
    rest = uri.substr(sep);
    if (rest.rfind("://", 0) == 0) {
      rest = rest.substr(3);
    } else if (rest[0] == ':') {
      rest = rest.substr(1);
    }
  }
  const size_t q = rest.find('?');
  t.body = rest.substr(0, q);
  if (q != std::string::npos) {
    std::string query = rest.substr(q + 1);
    size_t pos = 0;
    while (pos <= query.size()) {
      const size_t amp = std::min(query.find('&', pos), query.size());
      const std::string kv = query.substr(pos, amp - pos);
      if (!kv.empty()) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
          return Status::InvalidArgument("--target " + uri + ": parameter '" + kv +
                                         "' is not name=value");
        }
        t.params[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      pos = amp + 1;
    }
  }
  return t;
}

StatusOr<std::unique_ptr<Target>> OpenTarget(const std::string& uri, const TargetOptions& options) {
  GROVE_ASSIGN_OR_RETURN(TargetUri t, ParseTargetUri(uri));
  if (t.scheme == "embedded") {
    if (t.body.empty()) return Status::InvalidArgument("--target embedded:<variant>: no variant");
    return OpenEmbeddedTarget(t, options);
  }
  if (t.scheme == "rocksdb") return OpenRocksDbTarget(t, options);
  if (t.scheme == "device") return OpenDeviceTarget(t, options);
  if (t.scheme == "grpc" || t.scheme == "grpc-noop" || t.scheme == "etcd") {
    if (t.body.empty()) return Status::InvalidArgument("--target " + uri + ": no host:port");
    return OpenGrpcTarget(t, options, t.scheme == "grpc-noop");
  }
  return Status::InvalidArgument("--target '" + uri +
                                 "': expected embedded:<variant>, rocksdb, device, "
                                 "grpc://host:port, grpc-noop://host:port or "
                                 "etcd://host:port[,...]/cluster");
}

}  // namespace grove::bench
