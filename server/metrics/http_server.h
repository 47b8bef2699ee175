#pragma once

// The metrics port: a small HTTP server answering
//
//   GET /metrics   Prometheus text format (0.0.4) of every registered Collectable
//   GET /livez     200 "ok" while the process runs (restart me when this fails)
//   GET /readyz    200 "ready" while `ready()` is true, else 503 "not ready" (send me traffic)
//
// prometheus-cpp 1.0.1's Exposer serves only Collectables (always 200, metrics text), so it cannot
// answer /readyz with 503. This class therefore runs civetweb (the HTTP server the Exposer is
// built on) directly and serialises the Collectables with prometheus-cpp's TextSerializer.
//
// Thread safety: handlers run on civetweb's threads; Collectables and `ready` must be thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>

#include "grove/status.h"

class CivetServer;

namespace grove::metrics {

class HttpServer {
 public:
  using ReadyFn = std::function<bool()>;

  // Binds `listen` ("host:port", port 0 = any free port) and starts serving. Collectables are
  // held weakly: one that has been destroyed is skipped.
  static StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
      ReadyFn ready);

  ~HttpServer();  // stops serving; waits for running handlers
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the chosen one when the address said 0).
  int port() const { return port_; }

  // The /metrics body: every Collectable serialised in text format.
  std::string RenderMetrics() const;

 private:
  class Handler;
  HttpServer() = default;

  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  ReadyFn ready_;
  std::vector<std::unique_ptr<Handler>> handlers_;  // outlive server_ (declared first)
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
  std::string wake_host_;  // where a connection wakes civetweb's listener (loopback for wildcards)
};

}  // namespace grove::metrics
