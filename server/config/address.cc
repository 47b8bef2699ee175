#include "config/address.h"

#include <algorithm>
#include <charconv>

#include <arpa/inet.h>

namespace grove::config {

std::string HostPort::ToString() const {
  std::string out = ipv6 ? "[" + host + "]" : host;
  out += ":";
  out += std::to_string(port);
  return out;
}

StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view field) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(std::string(field) + ": '" + std::string(text) +
                                   "' is not host:port (" + std::string(why) + ")");
  };
  HostPort hp;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("missing ']'");
    hp.host = std::string(text.substr(1, close - 1));
    hp.ipv6 = true;
    if (close + 1 >= text.size() || text[close + 1] != ':') return bad("missing ':port'");
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("missing ':port'");
    hp.host = std::string(text.substr(0, colon));
    if (hp.host.find(':') != std::string::npos) return bad("write IPv6 addresses as [addr]:port");
    port_text = text.substr(colon + 1);
  }
  if (hp.host.empty()) return bad("empty host; use 0.0.0.0 for every interface");
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad("the port must be 0..65535");
  }
  hp.port = static_cast<uint16_t>(port);
  return hp;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    static constexpr in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoopback.s6_addr));
  }
  return false;
}

}  // namespace grove::config
