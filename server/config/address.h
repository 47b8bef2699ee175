#pragma once

// Listen addresses: "host:port", "[v6-address]:port". The host is kept as written (gRPC and the
// HTTP server resolve it); port 0 asks the OS for a free port.

#include <cstdint>
#include <string>
#include <string_view>

#include "grove/status.h"

namespace grove::config {

struct HostPort {
  std::string host;  // without brackets
  uint16_t port = 0;
  bool ipv6 = false;  // the host was bracketed

  // "host:port" again, with brackets for IPv6.
  std::string ToString() const;
};

// InvalidArgument naming `field` when `text` is not host:port with a port in 0..65535.
StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view field);

// True for names that only reach this machine: localhost, 127.0.0.0/8 and ::1.
bool IsLoopbackHost(std::string_view host);

}  // namespace grove::config
