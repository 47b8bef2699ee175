#pragma once

// Bearer-token authorisation of grove.v1.KV and grove.v1.Admin calls ("authorization: Bearer
// <token>" metadata).
// Health checks and reflection are not authorised: probes and tooling must work without secrets.
//
//   no or malformed metadata, unknown token  -> UNAUTHENTICATED
//   a token whose role is below the call's    -> PERMISSION_DENIED (read < write < admin)
//
// gRPC's AuthMetadataProcessor would only run on TLS listeners; checking in the handler works on
// the loopback plaintext listener too.
//
// Thread safety: immutable; Check may run concurrently.

#include <optional>
#include <string_view>

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "service/token_store.h"

namespace grove::service {

class Authorizer {
 public:
  // `tokens` null: authentication is off and every call passes. Must outlive the Authorizer.
  explicit Authorizer(const TokenStore* tokens) : tokens_(tokens) {}

  bool enabled() const { return tokens_ != nullptr; }

  // `authorization` is the value of the call's authorization metadata, if any. `method` names the
  // RPC in the PERMISSION_DENIED message.
  grpc::Status Check(std::optional<std::string_view> authorization, Role needed,
                     std::string_view method) const;

  // Reads the metadata from `context`.
  grpc::Status Check(const grpc::ServerContext& context, Role needed,
                     std::string_view method) const;

 private:
  const TokenStore* tokens_;
};

}  // namespace grove::service
