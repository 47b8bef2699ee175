#include "service/groved_process.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "metrics/http_get.h"

extern char** environ;

namespace grove::testing {

namespace {

// Whether a loopback TCP socket can bind `port` now (0: any port; the bound one is returned).
int TryBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int bound = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  close(fd);
  return bound;
}

// The lowest port the kernel hands out for outgoing connections and port-0 binds.
int EphemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return in >> low && low > 1024 ? low : 32768;
}

}  // namespace

int PickFreePort() {
  // Ports below the ephemeral range: a port the kernel chose would be free only until an
  // outgoing connection of another test took it as its source port, before the server binds it.
  const int low = EphemeralLow();
  const int first = std::max(10000, low / 2);
  if (low - first > 1000) {
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> port(first, low - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int p = port(pick);
      if (TryBind(p) == p) return p;
    }
  }
  return TryBind(0);
}

std::string GrovedYaml(const GrovedConfig& c, int grpc_port, int metrics_port) {
  const std::string listen = "  listen: " + c.listen_host + ":" + std::to_string(grpc_port) +
                             "\n  metrics_listen: 127.0.0.1:" + std::to_string(metrics_port) + "\n";
  std::string extra = c.yaml;
  // The test's own server: section (if any) gets the listen lines; YAML allows a key only once.
  const size_t server = extra.find("server:\n");
  if (server != std::string::npos && (server == 0 || extra[server - 1] == '\n')) {
    extra.insert(server + 8, listen);
  } else {
    extra = "server:\n" + listen + extra;
  }
  return "data_dir: " + c.data_dir + "\ncache_bytes: 16MiB\n" + extra;
}

std::unique_ptr<GrovedProcess> GrovedProcess::Start(const std::string& dir,
                                                    const GrovedConfig& config,
                                                    std::chrono::seconds timeout) {
  // Ports chosen here may be taken by someone else before groved binds them; then groved exits
  // at once and we try again with new ones.
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::unique_ptr<GrovedProcess> p(new GrovedProcess());
    if (!p->Launch(dir, config)) return nullptr;
    if (!config.wait_ready) return p;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (HttpGet(p->metrics_port_, "/readyz").status == 200) return p;
      if (!p->running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const std::string log = p->Log();
    const bool bind_failed = log.find("cannot listen on") != std::string::npos ||
                             log.find("cannot serve HTTP on") != std::string::npos;
    const bool fixed_ports = config.grpc_port != 0 || config.metrics_port != 0;
    if (!p->running() && bind_failed && !fixed_ports) continue;
    ADD_FAILURE() << "groved did not become ready; log:\n" << log;
    return nullptr;
  }
  ADD_FAILURE() << "groved could not bind free ports in 5 attempts";
  return nullptr;
}

bool GrovedProcess::Launch(const std::string& dir, const GrovedConfig& config) {
  grpc_port_ = config.grpc_port != 0 ? config.grpc_port : PickFreePort();
  metrics_port_ = config.metrics_port != 0 ? config.metrics_port : PickFreePort();
  while (metrics_port_ == grpc_port_) metrics_port_ = PickFreePort();
  // Named after the port, so that restarts within one test keep every log.
  const std::string n = std::to_string(grpc_port_);
  config_path_ = dir + "/groved-" + n + ".yaml";
  log_path_ = dir + "/groved-" + n + ".log";
  std::ofstream(config_path_) << GrovedYaml(config, grpc_port_, metrics_port_);

  std::vector<std::string> args = {GROVED_PATH, "--config", config_path_};
  args.insert(args.end(), config.extra_args.begin(), config.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // fork + exec rather than posix_spawn, for PR_SET_PDEATHSIG: a test that aborts or is killed
  // takes its groved with it instead of leaving it running. (The signal follows the thread that
  // forked; every caller launches from the test's main thread.) Between fork and exec only
  // async-signal-safe calls.
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "cannot start " << GROVED_PATH << ": fork: " << strerror(errno);
    return false;
  }
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(126);
    const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log < 0 || null < 0 || dup2(log, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0 ||
        dup2(null, STDIN_FILENO) < 0) {
      _exit(126);
    }
    execve(GROVED_PATH, argv.data(), environ);
    constexpr char kMsg[] = "groved_process: execve of groved failed\n";
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
    _exit(127);
  }
  pid_ = pid;
  return true;
}

GrovedProcess::~GrovedProcess() {
  if (running()) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(30));
  }
}

void GrovedProcess::Signal(int sig) {
  if (pid_ > 0 && !exit_status_) kill(pid_, sig);
}

bool GrovedProcess::running() {
  if (pid_ <= 0 || exit_status_) return false;
  return !Wait(std::chrono::milliseconds(0)).has_value();
}

std::optional<int> GrovedProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_status_) return exit_status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_status_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool GrovedProcess::WaitReadyz(int status, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (HttpGet(metrics_port_, "/readyz").status == status) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string GrovedProcess::Log() const {
  std::ifstream in(log_path_);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace grove::testing
