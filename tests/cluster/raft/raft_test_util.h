#pragma once

// Helpers of the Raft tests: a state machine that keeps the entries it applied, a gRPC server on
// loopback, polling for a condition with a limit, and finding the leader.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "cluster/raft/raft_group.h"
#include "util/coding.h"
#include "util/mutex.h"

namespace grove::raft {

// The entries applied, in order, with their indices. Snapshot and Restore carry them whole.
class EntryLog : public StateMachine {
 public:
  Status Apply(uint64_t index, Slice entry) override {
    MutexLock lock(&mu_);
    EXPECT_GT(index, last_index_) << "indices rise";
    last_index_ = index;
    entries_.emplace_back(entry.data(), entry.size());
    return Status::Ok();
  }
  StatusOr<std::string> Snapshot() override {
    MutexLock lock(&mu_);
    std::string out;
    PutFixed64(&out, last_index_);
    for (const std::string& e : entries_) {
      PutFixed32(&out, static_cast<uint32_t>(e.size()));
      out += e;
    }
    return out;
  }
  Status Restore(Slice s) override {
    MutexLock lock(&mu_);
    if (s.size() < 8) return Status::DataLoss("short snapshot");
    last_index_ = DecodeFixed64(s.data());
    entries_.clear();
    size_t pos = 8;
    while (pos < s.size()) {
      if (pos + 4 > s.size()) return Status::DataLoss("torn snapshot");
      const uint32_t n = DecodeFixed32(s.data() + pos);
      pos += 4;
      if (pos + n > s.size()) return Status::DataLoss("torn snapshot");
      entries_.emplace_back(s.data() + pos, n);
      pos += n;
    }
    ++restores_;
    return Status::Ok();
  }
  std::vector<std::string> entries() {
    MutexLock lock(&mu_);
    return entries_;
  }
  int restores() {
    MutexLock lock(&mu_);
    return restores_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> entries_ GROVE_GUARDED_BY(mu_);
  uint64_t last_index_ GROVE_GUARDED_BY(mu_) = 0;
  int restores_ GROVE_GUARDED_BY(mu_) = 0;
};

// A transport on a free loopback port.
inline GroupTransportOptions LoopbackTransport() {
  GroupTransportOptions o;
  o.bind_address = "127.0.0.1:0";
  return o;
}

// Serves `service` on a free loopback port.
struct TestServer {
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;
  explicit TestServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    server = builder.BuildAndStart();
  }
  ~TestServer() { server->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

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
