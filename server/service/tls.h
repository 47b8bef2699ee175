#pragma once

// Server credentials for the gRPC listener from the tls: section: plaintext when no certificate is
// configured, TLS with cert_file/key_file, and mutual TLS (client certificates required and
// verified against client_ca_file) when client_ca_file is set.

#include <memory>

#include <grpcpp/security/server_credentials.h>

#include "grove/status.h"

#include "config/config.h"

namespace grove::service {

// InvalidArgument naming the tls.* field whose file cannot be read or is not PEM.
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const config::TlsConfig& tls);

}  // namespace grove::service
