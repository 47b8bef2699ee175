#include "service/auth.h"

#include <string>

namespace grove::service {

grpc::Status Authorizer::Check(std::optional<std::string_view> authorization, Role needed,
                               std::string_view method) const {
  if (tokens_ == nullptr) return grpc::Status::OK;
  if (!authorization) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing 'authorization: Bearer <token>' metadata");
  }
  std::string_view value = *authorization;
  constexpr std::string_view kScheme = "Bearer ";
  if (value.size() <= kScheme.size() || value.substr(0, kScheme.size()) != kScheme) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "authorization metadata must be 'Bearer <token>'");
  }
  const std::optional<Role> role = tokens_->Lookup(value.substr(kScheme.size()));
  if (!role) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown token");
  if (*role < needed) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "the token's role '" + std::string(RoleName(*role)) + "' does not allow " +
                            std::string(method) + " (needs '" + std::string(RoleName(needed)) +
                            "')");
  }
  return grpc::Status::OK;
}

grpc::Status Authorizer::Check(const grpc::ServerContext& context, Role needed,
                               std::string_view method) const {
  if (tokens_ == nullptr) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  const auto it = md.find("authorization");
  if (it == md.end()) return Check(std::nullopt, needed, method);
  return Check(std::string_view(it->second.data(), it->second.size()), needed, method);
}

}  // namespace grove::service
