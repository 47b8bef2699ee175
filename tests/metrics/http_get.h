#pragma once

// A minimal blocking HTTP/1.0 GET for tests of the metrics port (no HTTP client library needed).

#include <string>

namespace grove::testing {

struct HttpResponse {
  int status = 0;  // 0 when the request failed
  std::string body;
};

inline HttpResponse HttpGet(int port, const std::string& path);

}  // namespace grove::testing

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace grove::testing {

inline HttpResponse HttpGet(int port, const std::string& path) {
  HttpResponse r;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return r;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return r;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return r;
  }
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) all.append(buf, static_cast<size_t>(n));
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  if (all.size() < 12 || all.compare(0, 5, "HTTP/") != 0) return r;
  r.status = std::stoi(all.substr(9, 3));
  const size_t body = all.find("\r\n\r\n");
  if (body != std::string::npos) r.body = all.substr(body + 4);
  return r;
}

}  // namespace grove::testing
