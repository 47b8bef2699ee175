#pragma once

// Runs a single-member etcd (Debian's etcd-server) as a child process for the cluster tests: its
// own data directory, free loopback ports for clients and peers, ready once a read answers. The
// destructor kills it (SIGKILL). Kill() and Restart() let tests take etcd away and bring it back
// with its data.

#include <chrono>
#include <memory>
#include <string>

#include <sys/types.h>

namespace grove::testing {

class EtcdProcess {
 public:
  // Starts etcd with its data under `dir`; null (and a test failure) when it does not answer
  // within `timeout`.
  static std::unique_ptr<EtcdProcess> Start(
      const std::string& dir, std::chrono::seconds timeout = std::chrono::seconds(30));
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  int client_port() const { return client_port_; }
  // SIGKILL, and wait for the exit.
  void Kill();
  // Starts it again on the same ports and data; false when it does not answer in time.
  bool Restart(std::chrono::seconds timeout = std::chrono::seconds(30));
  std::string Log() const;

 private:
  EtcdProcess() = default;
  bool Launch(std::chrono::seconds timeout);

  std::string dir_, log_path_;
  int client_port_ = 0, peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace grove::testing
