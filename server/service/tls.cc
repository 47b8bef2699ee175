#include "service/tls.h"

#include <fstream>
#include <sstream>
#include <string>

#include <grpcpp/security/server_credentials.h>

namespace grove::service {
namespace {

StatusOr<std::string> ReadPem(const std::string& field, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(field + ": cannot read '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string pem = buf.str();
  if (pem.find("-----BEGIN ") == std::string::npos) {
    return Status::InvalidArgument(field + ": '" + path + "' is not a PEM file");
  }
  return pem;
}

}  // namespace

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const config::TlsConfig& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  GROVE_ASSIGN_OR_RETURN(std::string cert, ReadPem("tls.cert_file", tls.cert_file));
  GROVE_ASSIGN_OR_RETURN(std::string key, ReadPem("tls.key_file", tls.key_file));
  grpc::SslServerCredentialsOptions options(
      tls.mutual() ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (tls.mutual()) {
    GROVE_ASSIGN_OR_RETURN(options.pem_root_certs,
                           ReadPem("tls.client_ca_file", tls.client_ca_file));
  }
  options.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
  return grpc::SslServerCredentials(options);
}

}  // namespace grove::service
