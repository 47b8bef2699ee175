#include "service/admin_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "grove/v1/metadata.h"

#include "service/status_mapping.h"
#include "trace/key_sketch.h"

namespace grove::service {

std::string BackupNameProblem(const std::string& name) {
  if (name.empty()) return "";
  if (name.size() > 128) return fmt::format("{} characters; at most 128", name.size());
  if (name[0] == '.') return "must not start with '.'";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      return fmt::format(
          "'{}' is not allowed (letters, digits, '-', '_' and '.'): a backup is a "
          "directory directly under backup.dir",
          c == '\0' ? std::string("\\0") : std::string(1, c));
    }
  }
  return "";
}

grpc::Status AdminService::Backup(grpc::ServerContext* context, const v1::BackupRequest* request,
                                  v1::BackupResponse* response) {
  if (grpc::Status a = auth_->Check(*context, Role::kAdmin, "Backup"); !a.ok()) return a;
  if (backup_dir_.empty()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "backup.dir is not set in the server's config: backups go under it");
  }
  if (std::string why = BackupNameProblem(request->name()); !why.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "name: " + why);
  }
  std::string name = request->name();
  if (name.empty()) {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "backup-%Y%m%dT%H%M%SZ", &utc);
    name = buf;
  }
  std::error_code ec;
  std::filesystem::create_directories(backup_dir_, ec);
  if (ec) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "backup.dir: cannot create '" + backup_dir_ + "': " + ec.message());
  }
  std::string path = backup_dir_ + "/" + name;
  // A generated name taken already (two backups in one second): the next free "-2", "-3", ...
  for (int n = 2; request->name().empty() && std::filesystem::exists(path, ec) && n < 1000; ++n) {
    path = backup_dir_ + "/" + name + "-" + std::to_string(n);
  }
  if (std::filesystem::exists(path, ec)) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "name: '" + path + "' already exists; choose another name");
  }
  EngineHandle::Lease lease(engine_);
  if (lease.db() == nullptr) {
    context->AddTrailingMetadata(v1::kNotAppliedMetadata, "1");
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the engine is not open (starting, recovering or shutting down)");
  }
  BackupOptions options;
  options.max_bytes_per_second = request->max_bytes_per_second();
  options.cancelled = [context] { return context->IsCancelled(); };
  BackupInfo info;
  log_->info("backup to {} started", path);
  Status s = lease.db()->Backup(path, options, &info);
  if (!s.ok()) {
    if (s.code() == StatusCode::kAborted && context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the backup was cancelled and removed");
    }
    return ToGrpcStatus(s, "backup");
  }
  response->set_path(path);
  response->set_checkpoint_epoch(info.checkpoint_epoch);
  response->set_last_lsn(info.last_lsn);
  response->set_data_bytes(info.data_bytes);
  response->set_wal_bytes(info.wal_bytes);
  response->set_pages_preserved(info.pages_preserved);
  response->set_seconds(info.seconds);
  return grpc::Status::OK;
}

grpc::Status AdminService::Verify(grpc::ServerContext* context, const v1::VerifyRequest* request,
                                  v1::VerifyResponse* response) {
  if (grpc::Status a = auth_->Check(*context, Role::kAdmin, "Verify"); !a.ok()) return a;
  EngineHandle::Lease lease(engine_);
  if (lease.db() == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the engine is not open (starting, recovering or shutting down)");
  }
  VerifyReport report;
  Status s;
  log_->info("verify started ({})", request->pause_writers() ? "writers paused" : "online");
  if (request->pause_writers()) {
    const auto t0 = std::chrono::steady_clock::now();
    s = lease.db()->Verify(&report);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else {
    VerifyOnlineOptions options;
    options.cache_bytes = request->cache_bytes();
    options.cancelled = [context] { return context->IsCancelled(); };
    s = lease.db()->VerifyOnline(options, &report);
  }
  if (!s.ok()) {
    if (s.code() == StatusCode::kAborted && context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the verify was cancelled");
    }
    return ToGrpcStatus(s, "verify");
  }
  response->set_pages_checked(report.pages_checked);
  response->set_entries_checked(report.entries_checked);
  response->set_blob_values_checked(report.blob_values_checked);
  for (const std::string& p : report.problems) response->add_problems(p);
  response->set_checkpoint_epoch(report.checkpoint_epoch);
  response->set_pages_preserved(report.pages_preserved);
  response->set_seconds(report.seconds);
  response->set_writers_paused(request->pause_writers());
  log_->info("verify done: {} pages, {} entries, {} problems, {:.1f} s", report.pages_checked,
             report.entries_checked, report.problems.size(), report.seconds);
  return grpc::Status::OK;
}

grpc::Status AdminService::MoveChanges(grpc::ServerContext* context,
                                       const v1::MoveChangesRequest* request,
                                       v1::MoveChangesResponse* response) {
  if (grpc::Status a = auth_->Check(*context, Role::kAdmin, "MoveChanges"); !a.ok()) return a;
  if (ownership_ == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "MoveChanges: this groved is not in cluster mode (no cluster: section)");
  }
  if (request->move_id() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "move_id: must not be 0");
  }
  ContextMetadata md(context);
  return ownership_->TakeChanges(&md, request->move_id(), request->token(),
                                 std::min<uint32_t>(request->max_keys(), 100000), response);
}

namespace {

void FillTraceStatus(const trace::TraceStatus& st, v1::TraceStatusResponse* response) {
  response->set_active(st.active);
  response->set_path(st.path);
  response->set_sample(st.sample);
  response->set_keys_hashed(st.keys_hashed);
  response->set_records_written(st.records_written);
  response->set_records_dropped(st.records_dropped);
  response->set_bytes(st.bytes);
  response->set_ended_because(st.ended_because);
}

// The tracer's refusals keep their message as is: it names the field at fault.
grpc::Status FromTracer(const Status& s) {
  switch (s.code()) {
    case StatusCode::kAlreadyExists:
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, std::string(s.message()));
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnavailable:
      return ToGrpcStatus(s);
    default:
      return ToGrpcStatus(s, "trace");
  }
}

grpc::Status NoTraceDir() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "trace.dir is not set in the server's config: traces go under it");
}

}  // namespace

grpc::Status AdminService::StartTrace(grpc::ServerContext* context,
                                      const v1::StartTraceRequest* request,
                                      v1::TraceStatusResponse* response) {
  if (grpc::Status a = auth_->Check(*context, Role::kAdmin, "StartTrace"); !a.ok()) return a;
  if (tracer_ == nullptr) return NoTraceDir();
  if (!std::isfinite(request->duration_seconds()) || request->duration_seconds() < 0 ||
      request->duration_seconds() > 366.0 * 24 * 3600) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "duration_seconds: must be 0 (until stopped) or up to a year");
  }
  trace::TraceRequest r;
  r.sample = request->sample() == 0 ? 0.01 : request->sample();
  // Rounded up: a duration under a millisecond must not become 0, "until stopped".
  r.duration = std::chrono::milliseconds(
      static_cast<int64_t>(std::ceil(request->duration_seconds() * 1000)));
  r.name = request->name();
  r.hash_keys = request->hash_keys();
  if (r.name.empty()) {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "trace-%Y%m%dT%H%M%SZ", &utc);
    r.name = buf;
  }
  // The shape of the key space goes first, so that a replay on less data can place the keys the
  // trace will never name (key_sketch.h). A trace without it is still a trace.
  const auto sketch_start = std::chrono::steady_clock::now();
  if (!tracer_->GetStatus().active) {  // else Start refuses: no sketch to take
    EngineHandle::Lease lease(engine_);
    if (lease.db() != nullptr) {
      Db* db = lease.db();
      StatusOr<trace::KeySketch> sketch =
          trace::SketchKeys([db](const ScanOptions& o) { return db->NewIterator(o); });
      std::string encoded;
      if (sketch.ok()) trace::EncodeKeySketch(*sketch, &encoded);
      if (sketch.ok() && encoded.size() > tracer_->max_bytes() / 4) {
        log_->warn(
            "trace: the key sketch ({} bytes) would take over a quarter of trace.max_bytes "
            "({}); the trace goes on without it",
            encoded.size(), tracer_->max_bytes());
      } else if (sketch.ok()) {
        r.sketch = std::move(*sketch);
      } else {
        log_->warn("trace: no key sketch ({}); the trace goes on without it",
                   sketch.status().ToString());
      }
    }
  }
  const double sketch_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sketch_start)
          .count();
  if (Status s = tracer_->Start(r); !s.ok()) return FromTracer(s);
  const trace::TraceStatus st = tracer_->GetStatus();
  log_->info("trace started: {} (sample {}, {}; key sketch of {} keys in {:.1f} ms)", st.path,
             st.sample,
             r.duration.count() == 0 ? std::string("until stopped")
                                     : fmt::format("{:.3f} s", request->duration_seconds()),
             st.sketch_keys, sketch_ms);
  FillTraceStatus(st, response);
  return grpc::Status::OK;
}

grpc::Status AdminService::StopTrace(grpc::ServerContext* context, const v1::StopTraceRequest*,
                                     v1::TraceStatusResponse* response) {
  if (grpc::Status a = auth_->Check(*context, Role::kAdmin, "StopTrace"); !a.ok()) return a;
  if (tracer_ == nullptr) return NoTraceDir();
  const Status s = tracer_->Stop();
  const trace::TraceStatus st = tracer_->GetStatus();
  if (s.code() == StatusCode::kFailedPrecondition) return FromTracer(s);
  log_->info("trace stopped: {} ({} records, {} dropped, {} bytes{})", st.path, st.records_written,
             st.records_dropped, st.bytes, s.ok() ? "" : "; " + st.ended_because);
  if (!s.ok()) return FromTracer(s);
  FillTraceStatus(st, response);
  return grpc::Status::OK;
}

grpc::Status AdminService::GetTraceStatus(grpc::ServerContext* context,
                                          const v1::TraceStatusRequest*,
                                          v1::TraceStatusResponse* response) {
  if (grpc::Status a = auth_->Check(*context, Role::kAdmin, "GetTraceStatus"); !a.ok()) return a;
  if (tracer_ == nullptr) return NoTraceDir();
  FillTraceStatus(tracer_->GetStatus(), response);
  return grpc::Status::OK;
}

}  // namespace grove::service
