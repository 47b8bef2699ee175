#pragma once

// Helpers of the Raft tests: a free loopback port, polling for a condition with a limit, and
// finding the leader.

#include <chrono>
#include <functional>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/raft/raft_group.h"

namespace grove::raft {

// A TCP port on 127.0.0.1 nobody listens on now, or -1.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

// Polls `done` every 10 ms for up to `limit`.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds limit = std::chrono::milliseconds(15000)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The index of the replica that leads among `replicas` (pointers to RaftGroup or
// ReplicatedRange; null ones are stopped), polling up to 15 s; -1 (and a test failure) when none
// does.
template <typename Replicas>
int WaitForLeaderOf(const Replicas& replicas) {
  int leader = -1;
  const bool found = WaitFor([&] {
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i] && replicas[i]->GetStatus().role == RaftRole::kLeader) {
        leader = static_cast<int>(i);
        return true;
      }
    }
    return false;
  });
  EXPECT_TRUE(found) << "no leader within 15 s";
  return leader;
}

}  // namespace grove::raft
