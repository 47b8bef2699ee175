#include "metrics/http_server.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <exception>
#include <sstream>
#include <thread>

#include <CivetServer.h>
#include <civetweb.h>
#include <netdb.h>
#include <poll.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/address.h"

namespace grove::metrics {
namespace {

void Respond(mg_connection* conn, int code, const char* reason, const char* content_type,
             const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n\r\n",
            code, reason, content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

}  // namespace

// One path. `render` fills the status code and body; it runs on a civetweb thread.
class HttpServer::Handler final : public CivetHandler {
 public:
  using Render = std::function<int(std::string* body)>;
  Handler(const char* content_type, Render render)
      : content_type_(content_type), render_(std::move(render)) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    std::string body;
    const int code = render_(&body);
    Respond(conn, code, code == 200 ? "OK" : "Service Unavailable", content_type_, body);
    return true;
  }

 private:
  const char* content_type_;
  Render render_;
};

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
    ReadyFn ready) {
  GROVE_ASSIGN_OR_RETURN(config::HostPort hp, config::ParseHostPort(listen, "metrics_listen"));
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->collectables_ = std::move(collectables);
  s->ready_ = std::move(ready);

  // civetweb writes IPv6 listeners as "[addr]:port" too; a trailing "r"/"s" would change the
  // meaning (redirect/TLS), which a plain host:port never has.
  const std::vector<std::string> options = {
      "listening_ports",
      hp.ToString(),
      "num_threads",
      "2",
      // A scraper that stalls must not hold a thread forever.
      "request_timeout_ms",
      "10000",
      "enable_keep_alive",
      "yes",
  };
  try {
    s->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return Status::Unavailable("server.metrics_listen: cannot serve HTTP on " + listen + ": " +
                               e.what());
  }
  if (s->server_->getContext() == nullptr) {
    return Status::Unavailable("server.metrics_listen: cannot serve HTTP on " + listen);
  }
  const std::vector<int> ports = s->server_->getListeningPorts();
  s->port_ = ports.empty() ? 0 : ports.front();
  if (hp.host.empty() || hp.host == "0.0.0.0") {
    s->wake_host_ = "127.0.0.1";
  } else if (hp.host == "::") {
    s->wake_host_ = "::1";
  } else {
    s->wake_host_ = hp.host;
  }

  HttpServer* self = s.get();
  s->handlers_.push_back(std::make_unique<Handler>("text/plain; version=0.0.4; charset=utf-8",
                                                   [self](std::string* body) {
                                                     *body = self->RenderMetrics();
                                                     return 200;
                                                   }));
  s->handlers_.push_back(std::make_unique<Handler>("text/plain", [](std::string* body) {
    *body = "ok\n";
    return 200;
  }));
  s->handlers_.push_back(std::make_unique<Handler>("text/plain", [self](std::string* body) {
    const bool ready = self->ready_ && self->ready_();
    *body = ready ? "ready\n" : "not ready\n";
    return ready ? 200 : 503;
  }));
  s->server_->addHandler("/metrics", s->handlers_[0].get());
  s->server_->addHandler("/livez", s->handlers_[1].get());
  s->server_->addHandler("/readyz", s->handlers_[2].get());
  return s;
}

namespace {

// Opens and closes one TCP connection to host:port, if it can within a moment.
void Knock(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0) {
    if (connect(fd, found->ai_addr, found->ai_addrlen) != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 200);
    }
    close(fd);
  }
  freeaddrinfo(found);
}

}  // namespace

HttpServer::~HttpServer() {
  // Stop civetweb (joins its threads) before the handlers it calls are destroyed. Its listener
  // polls with a timeout of seconds and looks at the stop flag only when it wakes: a connection
  // made while it stops wakes it at once.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    for (int i = 0; i < 20 && !stopped.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!stopped.load() && port_ > 0) Knock(wake_host_, port_);
    }
  });
  server_.reset();
  stopped = true;
  waker.join();
}

std::string HttpServer::RenderMetrics() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& weak : collectables_) {
    if (auto c = weak.lock()) {
      std::vector<prometheus::MetricFamily> f = c->Collect();
      families.insert(families.end(), std::make_move_iterator(f.begin()),
                      std::make_move_iterator(f.end()));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace grove::metrics
