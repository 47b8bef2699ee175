#pragma once

// Runs groved as a child process for integration tests: writes its config into a temp dir,
// chooses free loopback ports (asks the OS for them, and starts over with new ones if groved then
// cannot bind), and synchronises on readiness by polling /readyz with a bounded timeout.
//
// The child's stdout and stderr go to <dir>/groved-<n>.log; Log() returns them. The destructor
// kills a child that is still running (SIGKILL), so a failing test never leaks a server.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace grove::testing {

// A loopback port free a moment ago, chosen at random below the kernel's ephemeral range so that
// no outgoing connection takes it before the server binds it.
int PickFreePort();

struct GrovedConfig {
  std::string data_dir;  // required
  std::string yaml;      // extra YAML appended to the generated config (whole sections)
  std::vector<std::string> extra_args;
  std::string listen_host = "127.0.0.1";
  // Fixed ports (chosen by the test with PickFreePort, e.g. to restart a server where its clients
  // expect it). 0: pick free ones here.
  int grpc_port = 0;
  int metrics_port = 0;
  bool wait_ready = true;  // Start() returns after /readyz answered 200
};

class GrovedProcess {
 public:
  // Starts groved in `dir` (config file, log). Returns null and records a test failure when it
  // cannot be started (or, with wait_ready, does not become ready within `timeout`).
  static std::unique_ptr<GrovedProcess> Start(
      const std::string& dir, const GrovedConfig& config,
      std::chrono::seconds timeout = std::chrono::seconds(60));

  ~GrovedProcess();
  GrovedProcess(const GrovedProcess&) = delete;
  GrovedProcess& operator=(const GrovedProcess&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  pid_t pid() const { return pid_; }
  const std::string& config_path() const { return config_path_; }

  void Signal(int sig);
  // Waits for the child to exit; returns its exit status, 128+signal when killed, or nullopt on
  // timeout (the child keeps running).
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // Polls /readyz until it answers `status` (200 or 503) or the timeout passes.
  bool WaitReadyz(int status, std::chrono::milliseconds timeout);
  bool running();
  std::string Log() const;

 private:
  GrovedProcess() = default;
  bool Launch(const std::string& dir, const GrovedConfig& config);

  pid_t pid_ = -1;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::string config_path_;
  std::string log_path_;
  std::optional<int> exit_status_;
};

// Writes a config file for groved with the given ports and returns its text (exposed for tests
// that run groved with a deliberately bad config).
std::string GrovedYaml(const GrovedConfig& config, int grpc_port, int metrics_port);

}  // namespace grove::testing
