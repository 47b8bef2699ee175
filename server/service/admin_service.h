#pragma once

// grove.v1.Admin (proto/grove/v1/admin.proto): operations on the server itself. Backup writes a
// consistent copy of the open database into a new directory under backup.dir (Db::Backup) while
// the KV service keeps serving; the call holds an engine lease for as long as the copy runs, and
// a cancelled call (or the drain's cancellation of in-flight calls) gives the backup up. Verify
// checks the database's structure, online by default (Db::VerifyOnline), under the same rules.
//
// Thread safety: handlers may run concurrently; the engine allows one backup at a time.

#include <string>

#include <grpcpp/grpcpp.h>
#include <spdlog/logger.h>

#include "grove/v1/admin.grpc.pb.h"

#include "service/auth.h"
#include "service/engine_handle.h"
#include "service/ownership.h"
#include "trace/tracer.h"

namespace grove::service {

// Checks a BackupRequest.name: "" (a generated name) or 1..128 of [A-Za-z0-9._-], not starting
// with '.'. Returns the reason it is not, or "".
std::string BackupNameProblem(const std::string& name);

class AdminService final : public v1::Admin::Service {
 public:
  // `backup_dir`: where backups go (backup.dir); empty: Backup is refused. Every pointer must
  // outlive the service.
  // `ownership`: cluster mode (MoveChanges); null otherwise.
  // `tracer`: workload traces (trace.dir set); null: tracing is refused.
  AdminService(std::string backup_dir, EngineHandle* engine, const Authorizer* auth,
               spdlog::logger* log, Ownership* ownership = nullptr, trace::Tracer* tracer = nullptr)
      : backup_dir_(std::move(backup_dir)),
        engine_(engine),
        auth_(auth),
        log_(log),
        ownership_(ownership),
        tracer_(tracer) {}

  grpc::Status Backup(grpc::ServerContext* context, const v1::BackupRequest* request,
                      v1::BackupResponse* response) override;
  grpc::Status Verify(grpc::ServerContext* context, const v1::VerifyRequest* request,
                      v1::VerifyResponse* response) override;
  grpc::Status MoveChanges(grpc::ServerContext* context, const v1::MoveChangesRequest* request,
                           v1::MoveChangesResponse* response) override;
  grpc::Status StartTrace(grpc::ServerContext* context, const v1::StartTraceRequest* request,
                          v1::TraceStatusResponse* response) override;
  grpc::Status StopTrace(grpc::ServerContext* context, const v1::StopTraceRequest* request,
                         v1::TraceStatusResponse* response) override;
  grpc::Status GetTraceStatus(grpc::ServerContext* context, const v1::TraceStatusRequest* request,
                              v1::TraceStatusResponse* response) override;

 private:
  const std::string backup_dir_;
  EngineHandle* const engine_;
  const Authorizer* const auth_;
  spdlog::logger* const log_;
  Ownership* const ownership_;
  trace::Tracer* const tracer_;
};

}  // namespace grove::service
