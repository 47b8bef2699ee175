#include "cluster/raft/group_transport.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <netdb.h>

#include "util/coding.h"

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}

namespace grove::raft {

namespace {

// The greeting (docs/formats/raft_transport.md): "GRFT", version (fixed32), group (fixed64),
// sender id (fixed64), address length (fixed32), the sender's address.
constexpr char kMagic[4] = {'G', 'R', 'F', 'T'};
constexpr uint32_t kGreetingVersion = 1;
constexpr size_t kGreetingFixed = 28;
constexpr size_t kMaxAddress = 255;
constexpr uint64_t kSweepMs = 500;  // how often late greetings are looked for

std::string EncodeGreeting(uint64_t group, uint64_t sender, const std::string& address) {
  std::string out(kMagic, sizeof(kMagic));
  PutFixed32(&out, kGreetingVersion);
  PutFixed64(&out, group);
  PutFixed64(&out, sender);
  PutFixed32(&out, static_cast<uint32_t>(address.size()));
  out += address;
  return out;
}

// "host:port" or "[v6 host]:port".
bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  for (char c : *port) {
    if (c < '0' || c > '9') return false;
  }
  return !host->empty() && port->size() <= 5 && std::stoul(*port) <= 65535;
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

// One group's side of the transport. Lives from Init until libraft closes the transport (or
// Release, when it never did).
struct GroupTransport::Endpoint {
  GroupTransport* hub = nullptr;
  raft_uv_transport* t = nullptr;
  uint64_t group = 0;
  raft_id id = 0;  // this replica, as libraft's init says
  raft_uv_accept_cb accept = nullptr;
  std::set<Dial*> dials;
  raft_uv_transport_close_cb close_cb = nullptr;
  bool closing = false;

  static Endpoint* Of(raft_uv_transport* t) { return static_cast<Endpoint*>(t->impl); }
  static int Init(raft_uv_transport* t, raft_id id, const char* address);
  static int Listen(raft_uv_transport* t, raft_uv_accept_cb cb);
  static int Connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id, const char* address,
                     raft_uv_connect_cb cb);
  static void Close(raft_uv_transport* t, raft_uv_transport_close_cb cb);
  // Fires the close callback once the dials are gone, and frees the endpoint.
  void MaybeClosed();
};

// An outgoing connection: resolve, connect, write the greeting, then hand the stream to libraft;
// or fail (a timeout, an error, the group closing) and tell libraft so. The callback runs exactly
// once, never inside Connect (libraft marks the attempt under way only after Connect returns).
struct GroupTransport::Dial {
  Endpoint* ep = nullptr;
  raft_uv_connect* req = nullptr;
  raft_uv_connect_cb cb = nullptr;
  std::string greeting;
  uv_getaddrinfo_t resolve{};
  uv_connect_t connect{};
  uv_write_t write{};
  uv_timer_t timer{};
  uv_tcp_t* tcp = nullptr;  // raft_malloc'd: libraft frees the stream it is handed
  bool resolving = false;
  bool failed = false;  // no further progress: failed, cancelled or handed over
  int result = 0;

  void Fail(int code);
  void Finish();  // reports `result` and closes the timer, the last handle
  static void OnResolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  static void OnConnected(uv_connect_t* req, int status);
  static void OnWritten(uv_write_t* req, int status);
  static void OnTimeout(uv_timer_t* timer);
  static void OnTcpClosed(uv_handle_t* handle);
  static void OnTimerClosed(uv_handle_t* handle);
};

// An accepted connection until its greeting is read.
struct GroupTransport::Greeting {
  GroupTransport* hub = nullptr;
  uv_tcp_t* tcp = nullptr;  // raft_malloc'd, as the stream handed to libraft must be
  char buf[kGreetingFixed + kMaxAddress] = {};
  size_t have = 0;
  size_t need = kGreetingFixed;
  uint64_t started_ms = 0;

  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
};

// --- the transport -----------------------------------------------------------------------------

GroupTransport::GroupTransport(RaftLoop* loop, const GroupTransportOptions& options)
    : loop_(loop), options_(options) {}

StatusOr<std::unique_ptr<GroupTransport>> GroupTransport::Start(
    RaftLoop* loop, const GroupTransportOptions& options) {
  std::string host, port;
  if (!SplitHostPort(options.bind_address, &host, &port)) {
    return Status::InvalidArgument(
        fmt::format("raft transport: bind_address '{}' is not host:port", options.bind_address));
  }
  if (!options.advertise_address.empty() &&
      (!SplitHostPort(options.advertise_address, &host, &port) ||
       options.advertise_address.size() > kMaxAddress)) {
    return Status::InvalidArgument(
        fmt::format("raft transport: advertise_address '{}' is not host:port of at most {} bytes",
                    options.advertise_address, kMaxAddress));
  }
  if (options.connect_timeout_ms == 0 || options.greeting_timeout_ms == 0) {
    return Status::InvalidArgument(
        "raft transport: connect_timeout_ms and greeting_timeout_ms must be positive");
  }
  std::unique_ptr<GroupTransport> t(new GroupTransport(loop, options));
  Status started = Status::Unavailable("raft transport: the loop is stopping");
  loop->RunAndWait([&] { started = t->StartOnLoop(); });
  if (!started.ok()) {
    t->Stop().IgnoreError();  // closes what StartOnLoop opened
    return started;
  }
  return t;
}

Status GroupTransport::StartOnLoop() {
  std::string host, port;
  SplitHostPort(options_.bind_address, &host, &port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rv = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rv != 0 || res == nullptr) {
    return Status::InvalidArgument(fmt::format("raft transport: bind_address '{}': {}",
                                               options_.bind_address, gai_strerror(rv)));
  }
  uv_tcp_init(loop_->loop(), &server_);
  server_.data = this;
  server_open_ = true;
  ++open_handles_;
  int rv = uv_tcp_bind(&server_, res->ai_addr, 0);
  freeaddrinfo(res);
  if (rv == 0) rv = uv_listen(reinterpret_cast<uv_stream_t*>(&server_), 128, &OnConnection);
  if (rv != 0) {
    return Status::Unavailable(
        fmt::format("raft transport: listen on {}: {}", options_.bind_address, uv_strerror(rv)));
  }
  uv_timer_init(loop_->loop(), &sweep_);
  sweep_.data = this;
  sweep_open_ = true;
  ++open_handles_;
  uv_timer_start(&sweep_, &OnSweep, kSweepMs, kSweepMs);
  address_ = options_.advertise_address;
  if (address_.empty()) {
    sockaddr_storage bound{};
    int len = sizeof(bound);
    uv_tcp_getsockname(&server_, reinterpret_cast<sockaddr*>(&bound), &len);
    char ip[INET6_ADDRSTRLEN] = {};
    int bound_port = 0;
    if (bound.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&bound);
      uv_ip6_name(a, ip, sizeof(ip));
      bound_port = ntohs(a->sin6_port);
      address_ = fmt::format("[{}]:{}", ip, bound_port);
    } else {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&bound);
      uv_ip4_name(a, ip, sizeof(ip));
      bound_port = ntohs(a->sin_port);
      address_ = fmt::format("{}:{}", ip, bound_port);
    }
  }
  return Status::Ok();
}

GroupTransport::~GroupTransport() {
  if (!stopped_) {
    Stop().IgnoreError();
  }
}

GroupTransportStats GroupTransport::stats() const {
  GroupTransportStats s;
  s.accepted = accepted_.load();
  s.unknown_group = unknown_group_.load();
  s.bad_greeting = bad_greeting_.load();
  s.dials = dials_.load();
  s.dial_failures = dial_failures_.load();
  return s;
}

Status GroupTransport::Stop() {
  if (stopped_) return Status::Ok();
  size_t groups = 0;
  loop_->RunAndWait([&] { groups = listening_.size(); });
  if (groups > 0) {
    return Status::FailedPrecondition(
        fmt::format("raft transport at {}: groups still listen on it ({}); close them first",
                    address_, groups));
  }
  stopped_ = true;
  auto stopped = std::make_shared<std::promise<void>>();
  std::future<void> done = stopped->get_future();
  const bool ran = loop_->RunAndWait([&] {
    stopped_promise_ = stopped;
    StopOnLoop();
  });
  if (!ran) return Status::FailedPrecondition("raft transport: stopped after its loop stopped");
  done.wait();
  return Status::Ok();
}

void GroupTransport::StopOnLoop() {
  stopping_ = true;
  while (!greetings_.empty()) Drop(*greetings_.begin(), /*bad=*/false);
  if (sweep_open_) {
    sweep_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&sweep_), &OnHandleClosed);
  }
  if (server_open_) {
    server_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&server_), &OnHandleClosed);
  }
  MaybeStopped();
}

void GroupTransport::OnHandleClosed(uv_handle_t* handle) {
  auto* self = static_cast<GroupTransport*>(handle->data);
  --self->open_handles_;
  self->MaybeStopped();
}

void GroupTransport::MaybeStopped() {
  if (stopping_ && open_handles_ == 0 && stopped_promise_) {
    auto p = std::move(stopped_promise_);
    p->set_value();
  }
}

void GroupTransport::OnSweep(uv_timer_t* timer) {
  auto* self = static_cast<GroupTransport*>(timer->data);
  const uint64_t now = NowMs();
  std::vector<Greeting*> late;
  for (Greeting* g : self->greetings_) {
    if (now - g->started_ms >= self->options_.greeting_timeout_ms) late.push_back(g);
  }
  for (Greeting* g : late) self->Drop(g, /*bad=*/true);
}

// --- accepting ---------------------------------------------------------------------------------

void GroupTransport::OnConnection(uv_stream_t* server, int status) {
  auto* self = static_cast<GroupTransport*>(server->data);
  if (status != 0 || self->stopping_) return;
  auto* tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  if (tcp == nullptr) return;
  uv_tcp_init(self->loop_->loop(), tcp);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(tcp)) != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(tcp), [](uv_handle_t* h) { raft_free(h); });
    return;
  }
  auto* g = new Greeting();
  g->hub = self;
  g->tcp = tcp;
  g->started_ms = NowMs();
  tcp->data = g;
  self->greetings_.insert(g);
  if (uv_read_start(reinterpret_cast<uv_stream_t*>(tcp), &Greeting::OnAlloc, &Greeting::OnRead) !=
      0) {
    self->Drop(g, /*bad=*/false);
  }
}

// Offers exactly what the greeting still lacks, so that not a byte of libraft's first message is
// read here.
void GroupTransport::Greeting::OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  auto* g = static_cast<Greeting*>(handle->data);
  buf->base = g->buf + g->have;
  buf->len = g->need - g->have;
}

void GroupTransport::Greeting::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t*) {
  auto* g = static_cast<Greeting*>(stream->data);
  GroupTransport* hub = g->hub;
  if (nread == 0) return;
  if (nread < 0) {  // closed or failed before greeting
    hub->Drop(g, /*bad=*/nread != UV_EOF);
    return;
  }
  g->have += static_cast<size_t>(nread);
  if (g->have < g->need) return;
  if (g->need == kGreetingFixed) {
    const uint32_t length = DecodeFixed32(g->buf + 24);
    if (std::memcmp(g->buf, kMagic, sizeof(kMagic)) != 0 ||
        DecodeFixed32(g->buf + 4) != kGreetingVersion || length == 0 || length > kMaxAddress) {
      hub->Drop(g, /*bad=*/true);
      return;
    }
    g->need += length;
    return;  // libuv asks OnAlloc again for the address
  }
  hub->Deliver(g);
}

void GroupTransport::Deliver(Greeting* g) {
  uv_read_stop(reinterpret_cast<uv_stream_t*>(g->tcp));
  const uint64_t group = DecodeFixed64(g->buf + 8);
  const uint64_t sender = DecodeFixed64(g->buf + 16);
  auto it = listening_.find(group);
  if (sender == 0 || it == listening_.end() || it->second->accept == nullptr ||
      it->second->closing) {
    if (sender == 0) {
      Drop(g, /*bad=*/true);
    } else {
      ++unknown_group_;
      Drop(g, /*bad=*/false);
    }
    return;
  }
  Endpoint* ep = it->second;
  const std::string address(g->buf + kGreetingFixed, g->need - kGreetingFixed);
  uv_stream_t* stream = reinterpret_cast<uv_stream_t*>(g->tcp);
  greetings_.erase(g);
  delete g;
  stream->data = nullptr;
  ++accepted_;
  ep->accept(ep->t, sender, address.c_str(), stream);  // the stream is libraft's now
}

void GroupTransport::Drop(Greeting* g, bool bad) {
  if (bad) ++bad_greeting_;
  greetings_.erase(g);
  uv_read_stop(reinterpret_cast<uv_stream_t*>(g->tcp));
  uv_close(reinterpret_cast<uv_handle_t*>(g->tcp), [](uv_handle_t* h) { raft_free(h); });
  delete g;
}

// --- a group's endpoint ------------------------------------------------------------------------

void GroupTransport::Init(uint64_t group, raft_uv_transport* t) {
  auto* ep = new Endpoint();
  ep->hub = this;
  ep->t = t;
  ep->group = group;
  t->impl = ep;
  t->errmsg[0] = '\0';
  t->init = &Endpoint::Init;
  t->listen = &Endpoint::Listen;
  t->connect = &Endpoint::Connect;
  t->close = &Endpoint::Close;
}

void GroupTransport::Release(raft_uv_transport* t) {
  Endpoint* ep = Endpoint::Of(t);
  if (ep == nullptr) return;
  if (ep->accept != nullptr && !ep->closing) ep->hub->listening_.erase(ep->group);
  t->impl = nullptr;
  delete ep;
}

int GroupTransport::Endpoint::Init(raft_uv_transport* t, raft_id id, const char*) {
  Of(t)->id = id;
  return 0;
}

int GroupTransport::Endpoint::Listen(raft_uv_transport* t, raft_uv_accept_cb cb) {
  Endpoint* ep = Of(t);
  auto [it, inserted] = ep->hub->listening_.emplace(ep->group, ep);
  if (!inserted) {
    snprintf(t->errmsg, sizeof(t->errmsg), "group %llu already listens on %s",
             static_cast<unsigned long long>(ep->group), ep->hub->address_.c_str());
    return RAFT_DUPLICATEID;
  }
  ep->accept = cb;
  return 0;
}

int GroupTransport::Endpoint::Connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id,
                                      const char* address, raft_uv_connect_cb cb) {
  (void)id;
  Endpoint* ep = Of(t);
  GroupTransport* hub = ep->hub;
  if (ep->closing) return RAFT_CANCELED;
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) {
    snprintf(t->errmsg, sizeof(t->errmsg), "address '%s' is not host:port", address);
    return RAFT_NOCONNECTION;
  }
  auto* d = new Dial();
  d->ep = ep;
  d->req = req;
  d->cb = cb;
  d->greeting = EncodeGreeting(ep->group, ep->id, hub->address_);
  d->resolve.data = d;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (uv_getaddrinfo(hub->loop_->loop(), &d->resolve, &Dial::OnResolved, host.c_str(), port.c_str(),
                     &hints) != 0) {
    delete d;
    ++hub->dial_failures_;
    return RAFT_NOCONNECTION;
  }
  d->resolving = true;
  uv_timer_init(hub->loop_->loop(), &d->timer);
  d->timer.data = d;
  uv_timer_start(&d->timer, &Dial::OnTimeout, hub->options_.connect_timeout_ms, 0);
  ep->dials.insert(d);
  return 0;
}

void GroupTransport::Endpoint::Close(raft_uv_transport* t, raft_uv_transport_close_cb cb) {
  Endpoint* ep = Of(t);
  ep->closing = true;
  ep->close_cb = cb;
  auto it = ep->hub->listening_.find(ep->group);
  if (it != ep->hub->listening_.end() && it->second == ep) ep->hub->listening_.erase(it);
  const std::vector<Dial*> dials(ep->dials.begin(), ep->dials.end());
  for (Dial* d : dials) d->Fail(RAFT_CANCELED);
  ep->MaybeClosed();
}

void GroupTransport::Endpoint::MaybeClosed() {
  if (!closing || !dials.empty() || close_cb == nullptr) return;
  raft_uv_transport_close_cb cb = close_cb;
  raft_uv_transport* transport = t;
  transport->impl = nullptr;
  delete this;
  cb(transport);
}

// --- dialing -----------------------------------------------------------------------------------

void GroupTransport::Dial::Fail(int code) {
  if (failed) return;
  failed = true;
  result = code;
  if (code != RAFT_CANCELED) ++ep->hub->dial_failures_;
  uv_timer_stop(&timer);
  if (resolving) {
    uv_cancel(reinterpret_cast<uv_req_t*>(&resolve));  // OnResolved finishes
    return;
  }
  if (tcp != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(tcp), &OnTcpClosed);  // OnTcpClosed finishes
    return;
  }
  Finish();
}

void GroupTransport::Dial::Finish() {
  cb(req, nullptr, result);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer), &OnTimerClosed);
}

void GroupTransport::Dial::OnResolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  auto* d = static_cast<Dial*>(req->data);
  d->resolving = false;
  if (d->failed) {
    if (res != nullptr) uv_freeaddrinfo(res);
    d->Finish();
    return;
  }
  if (status != 0 || res == nullptr) {
    if (res != nullptr) uv_freeaddrinfo(res);
    d->Fail(RAFT_NOCONNECTION);
    return;
  }
  d->tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  if (d->tcp == nullptr) {
    uv_freeaddrinfo(res);
    d->Fail(RAFT_NOMEM);
    return;
  }
  uv_tcp_init(d->ep->hub->loop_->loop(), d->tcp);
  d->tcp->data = d;
  uv_tcp_nodelay(d->tcp, 1);
  d->connect.data = d;
  const int rv = uv_tcp_connect(&d->connect, d->tcp, res->ai_addr, &OnConnected);
  uv_freeaddrinfo(res);
  if (rv != 0) d->Fail(RAFT_NOCONNECTION);
}

void GroupTransport::Dial::OnConnected(uv_connect_t* req, int status) {
  auto* d = static_cast<Dial*>(req->data);
  if (d->failed) return;  // closing the stream: OnTcpClosed finishes
  if (status != 0) {
    d->Fail(RAFT_NOCONNECTION);
    return;
  }
  d->write.data = d;
  uv_buf_t buf = uv_buf_init(d->greeting.data(), static_cast<unsigned>(d->greeting.size()));
  if (uv_write(&d->write, reinterpret_cast<uv_stream_t*>(d->tcp), &buf, 1, &OnWritten) != 0) {
    d->Fail(RAFT_NOCONNECTION);
  }
}

void GroupTransport::Dial::OnWritten(uv_write_t* req, int status) {
  auto* d = static_cast<Dial*>(req->data);
  if (d->failed) return;
  if (status != 0) {
    d->Fail(RAFT_NOCONNECTION);
    return;
  }
  d->failed = true;  // handed over: the timer must not fail it now
  uv_timer_stop(&d->timer);
  uv_stream_t* stream = reinterpret_cast<uv_stream_t*>(d->tcp);
  d->tcp = nullptr;
  stream->data = nullptr;
  ++d->ep->hub->dials_;
  d->cb(d->req, stream, 0);
  uv_close(reinterpret_cast<uv_handle_t*>(&d->timer), &OnTimerClosed);
}

void GroupTransport::Dial::OnTimeout(uv_timer_t* timer) {
  static_cast<Dial*>(timer->data)->Fail(RAFT_NOCONNECTION);
}

void GroupTransport::Dial::OnTcpClosed(uv_handle_t* handle) {
  auto* d = static_cast<Dial*>(handle->data);
  raft_free(handle);
  d->tcp = nullptr;
  d->Finish();
}

void GroupTransport::Dial::OnTimerClosed(uv_handle_t* handle) {
  auto* d = static_cast<Dial*>(handle->data);
  Endpoint* ep = d->ep;
  ep->dials.erase(d);
  delete d;
  ep->MaybeClosed();
}

}  // namespace grove::raft
