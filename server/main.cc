// groved: the Grove key-value server. Wiring only: flags -> config -> logger -> GroveServer, plus
// the signal thread that turns SIGTERM/SIGINT into a graceful drain.
//
//   groved [--config FILE] [--data-dir DIR] [--listen HOST:PORT]
//
// Exit status: 0 after a clean drain; 1 when the configuration is invalid, a listener cannot be
// bound, or the engine fails to open or close; 2 for bad command-line usage.

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include <pthread.h>
#include <signal.h>

#include "config/config_loader.h"
#include "config/validate.h"
#include "index/registry.h"
#include "service/logging.h"
#include "service/server.h"
#include "service/version.h"
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"groved: the Grove key-value server (gRPC API grove.v1.KV)", "groved"};
  std::string config_path;
  grove::config::Overrides overrides;
  app.add_option("--config", config_path,
                 "YAML configuration file (default: the built-in config/grove.yaml)");
  app.add_option("--data-dir", overrides.data_dir, "Overrides data_dir");
  app.add_option("--listen", overrides.listen, "Overrides server.listen (host:port)");
  app.set_version_flag("--version", grove::service::kVersion);
  bool print_default = false;
  app.add_flag("--print-default-config", print_default,
               "Print the built-in configuration (every field, documented) and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (print_default) {
    const std::string_view text = grove::config::EmbeddedDefaultConfig();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }

  grove::StatusOr<grove::config::Config> config = grove::config::LoadConfig(config_path, overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "groved: invalid configuration:\n%s\n",
                 std::string(config.status().message()).c_str());
    return 1;
  }
  std::shared_ptr<spdlog::logger> log = grove::service::MakeLogger(config->server.logging);
  const grove::IndexOptions& index = config->engine.index;
  grove::StatusOr<grove::IndexRegistry> registry = grove::IndexRegistry::Builtins();
  if (!registry.ok()) {
    log->error("cannot start: {}", registry.status().ToString());
    return 1;
  }
  // Unknown variants and parameter names are configuration errors, reported like the others
  // (values are checked by the variant when the engine opens).
  if (grove::StatusOr<grove::ParamMap> p = registry->Resolve(index.variant, index.params);
      !p.ok()) {
    std::fprintf(stderr, "groved: invalid configuration:\n%s: %s\n",
                 config_path.empty() ? "embedded default config" : config_path.c_str(),
                 std::string(p.status().message()).c_str());
    return 1;
  }
  const uint64_t pages_per_op = registry->PagesPerOp(index.variant, index.params);
  // The write room is a share of the buffer pool, which a variant may give part of cache_bytes.
  grove::Options pool_view = config->engine;
  pool_view.cache_bytes =
      registry->BufferPoolBytes(index.variant, index.params, pool_view.cache_bytes);
  if (std::string w = grove::WriteRoomWarning(pool_view, pages_per_op); !w.empty()) {
    log->warn(w);
  }

  // Block the stop signals before any thread starts, so that every thread inherits the mask and
  // only the signal thread below receives them (via sigwait).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  grove::StatusOr<std::unique_ptr<grove::service::GroveServer>> server =
      grove::service::GroveServer::Start(*std::move(config), log);
  if (!server.ok()) {
    log->error("cannot start: {}", server.status().ToString());
    return 1;
  }
  grove::service::GroveServer* s = server->get();

  std::atomic<bool> finished{false};
  std::thread signal_thread([&stop_signals, &finished, s, log] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (finished.load()) return;  // main's wake-up below, not a real signal
    log->info("received {}, draining", sig == SIGINT ? "SIGINT" : "SIGTERM");
    s->RequestStop();
  });

  const grove::Status status = s->Run();
  // Run() can end without a signal (the engine failed to open): wake the signal thread.
  finished.store(true);
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  server->reset();
  return status.ok() ? 0 : 1;
}
