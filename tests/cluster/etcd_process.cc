#include "cluster/etcd_process.h"

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster/etcd_client.h"
#include "service/groved_process.h"

namespace grove::testing {
namespace {

// Whether something accepts TCP connections on the loopback port.
bool Accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::unique_ptr<EtcdProcess> EtcdProcess::Start(const std::string& dir,
                                                std::chrono::seconds timeout,
                                                std::optional<EtcdTls> tls, EtcdTls client_tls) {
  std::unique_ptr<EtcdProcess> p(new EtcdProcess());
  p->tls_ = std::move(tls);
  p->client_tls_ = std::move(client_tls);
  p->dir_ = dir;
  p->log_path_ = dir + "/etcd.log";
  // A port picked free can be taken by another test before etcd binds it; etcd then exits at
  // once, and a fresh pair of ports is tried.
  for (int attempt = 0; attempt < 5; ++attempt) {
    p->client_port_ = PickFreePort();
    p->peer_port_ = PickFreePort();
    if (p->Launch(timeout)) return p;
    if (p->pid_ > 0) break;  // still running but not answering: not a port clash
  }
  ADD_FAILURE() << "etcd did not start (" << ETCD_PATH << "):\n" << p->Log();
  return nullptr;
}

EtcdProcess::~EtcdProcess() { Kill(); }

bool EtcdProcess::Launch(std::chrono::seconds timeout) {
  const std::string client =
      (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(client_port_);
  const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
  std::vector<std::string> args = {ETCD_PATH,
                                   "--name=grove-test",
                                   "--data-dir=" + dir_ + "/etcd-data",
                                   "--listen-client-urls=" + client,
                                   "--advertise-client-urls=" + client,
                                   "--listen-peer-urls=" + peer,
                                   "--initial-advertise-peer-urls=" + peer,
                                   "--initial-cluster=grove-test=" + peer,
                                   "--log-level=warn"};
  if (tls_) {
    args.push_back("--cert-file=" + tls_->cert_file);
    args.push_back("--key-file=" + tls_->key_file);
    args.push_back("--trusted-ca-file=" + tls_->ca_file);
    args.push_back("--client-cert-auth");
  }
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid_ < 0) return false;
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!Accepts(client_port_) && std::chrono::steady_clock::now() < give_up) {
    if (Exited()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  cluster::EtcdOptions eo{.endpoints = {endpoint()}, .call_timeout_seconds = 1};
  if (tls_) {
    eo.ca_file = client_tls_.ca_file;
    eo.cert_file = client_tls_.cert_file;
    eo.key_file = client_tls_.key_file;
  }
  auto etcd = cluster::EtcdClient::Create(eo);
  if (!etcd.ok()) return false;
  while (std::chrono::steady_clock::now() < give_up) {
    // First the port (a client channel that met a refused connection backs off for seconds),
    // then a read.
    if (Accepts(client_port_) && (*etcd)->Get("/grove-test/ready").ok()) return true;
    if (Exited()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool EtcdProcess::Exited() {
  int status;
  if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
  return pid_ <= 0;
}

void EtcdProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool EtcdProcess::Restart(std::chrono::seconds timeout) {
  Kill();
  return Launch(timeout);
}

std::string EtcdProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace grove::testing
