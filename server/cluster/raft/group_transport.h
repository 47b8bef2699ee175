#pragma once

// GroupTransport: one TCP port for every Raft group of a node. libraft's own TCP transport
// listens on an address per group (a second group on the same address fails with EADDRINUSE), so
// a node with many ranges would need a port per range, written into each group's configuration.
// This transport listens once per node and tells the groups apart by a greeting each connection
// opens with (docs/formats/raft_transport.md): the group, the sending replica's id and its
// address. A replica's address in every group's configuration is its node's address.
//
//   dialing replica                          listening node
//   connect(host:port) ---- TCP ---->        accept
//   write greeting                           read the greeting, exactly its length
//   (hand the stream to libraft)             group known and listening: hand the stream to it
//                                            otherwise (or bad or late greeting): close it
//
// Connections carry one direction, as libraft's own: a replica dials each peer it sends to and
// reads what peers send over the connections they dialed. After the greeting the bytes are
// libraft's messages; the transport no longer touches the stream.
//
// A connection to a group that is not listening (not started yet, or closed) is closed; the
// sender's libraft dials again after its retry delay, so groups may start in any order.
//
// Lifecycle:   Start --> listening --Stop (or destructor)--> stopped
// Every group using the transport must be closed before Stop (Stop refuses otherwise).
//
// Thread safety: Start, Stop, address and stats from any thread but the loop's; the
// raft_uv_transport functions (what Init installs) run on the loop thread, where libraft calls
// them. The groups on a transport must run on its loop: accepted streams belong to it.

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <uv.h>

#include "grove/status.h"

#include "cluster/raft/raft_loop.h"

struct raft_uv_transport;

namespace grove::raft {

struct GroupTransportOptions {
  // host:port to listen on; port 0 picks a free one.
  std::string bind_address;
  // host:port peers dial to reach this node (what groups put in their configuration). Empty:
  // the bound address (with the port picked, when it was 0).
  std::string advertise_address;
  // A dial that has not connected and sent its greeting by then fails (libraft dials again).
  uint32_t connect_timeout_ms = 2000;
  // An accepted connection whose greeting has not arrived by then is closed.
  uint32_t greeting_timeout_ms = 5000;
};

struct GroupTransportStats {
  uint64_t accepted = 0;       // connections handed to a group
  uint64_t unknown_group = 0;  // closed: no group of that id listening
  uint64_t bad_greeting = 0;   // closed: not a greeting of this format, or too late
  uint64_t dials = 0;          // connections handed to a group's libraft to send on
  uint64_t dial_failures = 0;  // dials that failed (resolve, connect, greeting, timeout)
};

class GroupTransport {
 public:
  // Listens on `options.bind_address` on `loop`, which must outlive the transport.
  static StatusOr<std::unique_ptr<GroupTransport>> Start(RaftLoop* loop,
                                                         const GroupTransportOptions& options);
  ~GroupTransport();
  GroupTransport(const GroupTransport&) = delete;
  GroupTransport& operator=(const GroupTransport&) = delete;

  // The address peers reach this node at.
  const std::string& address() const { return address_; }
  RaftLoop* loop() const { return loop_; }
  GroupTransportStats stats() const;

  // Makes `t` the transport of group `group` (nonzero): libraft's raft_uv calls it to listen and
  // dial. On the loop thread. Release(t) frees what Init set up when libraft never closed `t`
  // (a group that failed before raft_uv_init took it); after libraft closed it, Release does
  // nothing.
  void Init(uint64_t group, raft_uv_transport* t);
  static void Release(raft_uv_transport* t);
  // Whether group `group` listens here now. On the loop thread.
  bool Listening(uint64_t group) const { return listening_.count(group) > 0; }

  // Stops listening and closes the connections still greeting. FAILED_PRECONDITION while a group
  // is still listening on the transport.
  Status Stop();

 private:
  struct Endpoint;  // one group's side, what raft_uv_transport::impl points to: the functions
                    // libraft calls
  struct Dial;      // an outgoing connection being set up
  struct Greeting;  // an accepted connection whose greeting is being read

  GroupTransport(RaftLoop* loop, const GroupTransportOptions& options);
  Status StartOnLoop();
  void StopOnLoop();
  void MaybeStopped();
  void Drop(Greeting* g, bool bad);
  void Deliver(Greeting* g);

  static void OnConnection(uv_stream_t* server, int status);
  static void OnSweep(uv_timer_t* timer);
  static void OnHandleClosed(uv_handle_t* handle);

  RaftLoop* const loop_;
  const GroupTransportOptions options_;
  std::string address_;  // set by Start, then constant
  // Loop thread only, from here on.
  uv_tcp_t server_{};
  uv_timer_t sweep_{};
  bool server_open_ = false;
  bool sweep_open_ = false;
  int open_handles_ = 0;                     // handles whose close has not completed
  std::map<uint64_t, Endpoint*> listening_;  // group id -> its endpoint
  std::set<Greeting*> greetings_;
  bool stopping_ = false;
  bool stopped_ = false;  // touched only by the thread calling Stop
  std::shared_ptr<std::promise<void>> stopped_promise_;

  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> unknown_group_{0};
  std::atomic<uint64_t> bad_greeting_{0};
  std::atomic<uint64_t> dials_{0};
  std::atomic<uint64_t> dial_failures_{0};
};

}  // namespace grove::raft
