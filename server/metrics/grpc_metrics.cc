#include "metrics/grpc_metrics.h"

namespace grove::metrics {

std::string_view GrpcCodeName(int code) {
  static constexpr std::array<std::string_view, kNumGrpcCodes> kNames = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  if (code < 0 || code >= kNumGrpcCodes) return "Unknown";
  return kNames[code];
}

std::vector<double> LatencyBuckets() {
  std::vector<double> bounds;
  double b = 1e-5;
  for (int i = 0; i < 24; ++i, b *= 2) bounds.push_back(b);
  return bounds;
}

void MethodMetrics::Handled(int code, double seconds) {
  if (code < 0 || code >= kNumGrpcCodes) code = 2;  // Unknown
  prometheus::Counter* c = handled_[code].load(std::memory_order_acquire);
  if (c == nullptr) {
    // Family::Add is idempotent and thread-safe; racing threads get the same counter.
    std::map<std::string, std::string> labels = labels_;
    labels["grpc_code"] = std::string(GrpcCodeName(code));
    c = &handled_family_->Add(labels);
    handled_[code].store(c, std::memory_order_release);
  }
  c->Increment();
  seconds_->Observe(seconds);
}

GrpcMetrics::GrpcMetrics(prometheus::Registry& registry)
    : started_(prometheus::BuildCounter()
                   .Name("grpc_server_started_total")
                   .Help("Total number of RPCs started on the server.")
                   .Register(registry)),
      handled_(prometheus::BuildCounter()
                   .Name("grpc_server_handled_total")
                   .Help("Total number of RPCs completed on the server, regardless of success "
                         "or failure.")
                   .Register(registry)),
      seconds_(prometheus::BuildHistogram()
                   .Name("grpc_server_handling_seconds")
                   .Help("Histogram of response latency (seconds) of gRPC that had been "
                         "application-level handled by the server.")
                   .Register(registry)) {}

namespace {

size_t SlotOf(std::string_view name, size_t slots) {
  return std::hash<std::string_view>()(name) & (slots - 1);
}

}  // namespace

MethodMetrics* GrpcMetrics::Find(std::string_view full_method, std::string_view type) const {
  for (size_t i = 0, s = SlotOf(full_method, kSlots); i < kSlots; ++i, s = (s + 1) & (kSlots - 1)) {
    MethodMetrics* m = slots_[s].load(std::memory_order_acquire);
    if (m == nullptr) return nullptr;
    if (m->full_method_ == full_method && m->type_ == type) return m;
  }
  return nullptr;
}

MethodMetrics* GrpcMetrics::ForMethod(std::string_view full_method, std::string_view type) {
  if (MethodMetrics* m = Find(full_method, type)) return m;
  MutexLock lock(&mu_);
  if (MethodMetrics* m = Find(full_method, type)) return m;
  if (methods_.size() >= kMaxMethods) {
    if (unknown_ == nullptr) unknown_ = Create("/unknown/unknown", type);
    return unknown_;
  }
  MethodMetrics* m = Create(full_method, type);
  size_t s = SlotOf(full_method, kSlots);
  while (slots_[s].load(std::memory_order_relaxed) != nullptr) s = (s + 1) & (kSlots - 1);
  slots_[s].store(m, std::memory_order_release);
  return m;
}

MethodMetrics* GrpcMetrics::Create(std::string_view full_method, std::string_view type) {
  // "/package.Service/Method" -> service "package.Service", method "Method".
  std::string_view name = full_method;
  if (!name.empty() && name.front() == '/') name.remove_prefix(1);
  const size_t slash = name.find('/');
  const std::string service(slash == std::string_view::npos ? "unknown" : name.substr(0, slash));
  const std::string method(slash == std::string_view::npos ? name : name.substr(slash + 1));

  auto m = std::make_unique<MethodMetrics>();
  m->full_method_ = std::string(full_method);
  m->type_ = std::string(type);
  m->labels_ = {
      {"grpc_type", std::string(type)}, {"grpc_service", service}, {"grpc_method", method}};
  m->handled_family_ = &handled_;
  m->started_ = &started_.Add(m->labels_);
  m->seconds_ = &seconds_.Add(m->labels_, LatencyBuckets());
  std::map<std::string, std::string> ok = m->labels_;
  ok["grpc_code"] = "OK";
  m->handled_[0].store(&handled_.Add(ok), std::memory_order_release);
  MethodMetrics* raw = m.get();
  methods_.push_back(std::move(m));
  return raw;
}

}  // namespace grove::metrics
