#pragma once

// Runs a single-member etcd (Debian's etcd-server) as a child process for the cluster tests: its
// own data directory, free loopback ports for clients and peers, ready once a read answers. The
// destructor kills it (SIGKILL). Kill() and Restart() let tests take etcd away and bring it back
// with its data. With EtcdTls it serves only TLS and requires client certificates signed by the
// given CA (etcd's --client-cert-auth).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <sys/types.h>

namespace grove::testing {

// PEM files (tests/service/gen_certs.sh makes a set): etcd's own certificate and key, and the CA
// its clients' certificates must be signed by.
struct EtcdTls {
  std::string ca_file, cert_file, key_file;
};

class EtcdProcess {
 public:
  // Starts etcd with its data under `dir`; null (and a test failure) when it does not answer
  // within `timeout`. `client_tls` (with `tls`) is the certificate the readiness check uses.
  static std::unique_ptr<EtcdProcess> Start(const std::string& dir,
                                            std::chrono::seconds timeout = std::chrono::seconds(30),
                                            std::optional<EtcdTls> tls = std::nullopt,
                                            EtcdTls client_tls = {});
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
  // Whether the child has exited (reaped; pid_ becomes -1).
  bool Exited();

  std::optional<EtcdTls> tls_;
  EtcdTls client_tls_;
  std::string dir_, log_path_;
  int client_port_ = 0, peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace grove::testing
