// grovectl's command line without a server: help, usage errors, and argument decoding, all of
// which must be decided before any RPC.

#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grovectl/app.h"
#include "grovectl/commands.h"
#include "testutil/temp_dir.h"
#include "trace/trace_file.h"
#include <nlohmann/json.hpp>

namespace grove::grovectl {
namespace {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun Grovectl(std::vector<std::string> args, const std::string& stdin_text = "") {
  args.insert(args.begin(), "grovectl");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  CliRun r;
  r.code = RunGrovectl(static_cast<int>(argv.size()), argv.data(), in, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A loopback port with nothing listening: bound by the OS, then released.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(GrovectlArgsTest, HelpListsEveryCommand) {
  CliRun r = Grovectl({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* cmd : {"get", "put", "delete", "scan", "load", "stats", "health", "--addr",
                          "--token", "--tls", "--ca", "--cert", "--key-format", "u64"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd << "\n" << r.out;
  }
}

TEST(GrovectlArgsTest, EveryCommandHasHelp) {
  for (const char* cmd : {"get", "put", "delete", "scan", "load", "stats", "health"}) {
    CliRun r = Grovectl({cmd, "--help"});
    EXPECT_EQ(r.code, kExitOk) << cmd << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd << "\n" << r.out;
  }
  CliRun scan = Grovectl({"scan", "--help"});
  for (const char* opt : {"--start", "--end", "--limit", "--reverse", "--keys-only"}) {
    EXPECT_NE(scan.out.find(opt), std::string::npos) << opt;
  }
}

TEST(GrovectlArgsTest, UsageErrorsExitTwo) {
  // Point at a closed port, so that a check that wrongly lets a call through cannot reach a server.
  setenv("GROVE_ADDR", ("127.0.0.1:" + std::to_string(ClosedPort())).c_str(), 1);
  EXPECT_EQ(Grovectl({}).code, kExitUsage) << "a command is required";
  EXPECT_EQ(Grovectl({"frobnicate"}).code, kExitUsage);
  EXPECT_EQ(Grovectl({"get"}).code, kExitUsage) << "KEY is required";
  EXPECT_EQ(Grovectl({"--key-format", "binary", "get", "k"}).code, kExitUsage);
  EXPECT_EQ(Grovectl({"-o", "yaml", "stats"}).code, kExitUsage);
  EXPECT_EQ(Grovectl({"scan", "--limit", "-3"}).code, kExitUsage);
  EXPECT_EQ(Grovectl({"--timeout", "0", "stats"}).code, kExitUsage);
  EXPECT_EQ(Grovectl({"--ca", "/nonexistent.pem", "stats"}).code, kExitUsage);
  CliRun put = Grovectl({"put", "k"});
  EXPECT_EQ(put.code, kExitUsage);
  EXPECT_NE(put.err.find("give VALUE or --value-file"), std::string::npos) << put.err;
  EXPECT_EQ(Grovectl({"put", "k", "v", "--value-file", "f"}).code, kExitUsage);
  unsetenv("GROVE_ADDR");
}

TEST(GrovectlArgsTest, BadKeysAreRejectedBeforeAnyCall) {
  const std::string addr = "127.0.0.1:" + std::to_string(ClosedPort());
  CliRun r = Grovectl({"--addr", addr, "--key-format", "hex", "get", "zz"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "grovectl: KEY: 'zz' is not hex (two hex digits per byte)\n");
  r = Grovectl({"--addr", addr, "--key-format", "u64", "scan", "--start", "x"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--start: 'x' is not a u64"), std::string::npos) << r.err;
  r = Grovectl({"--addr", addr, "--value-format", "base64", "put", "k", "!!"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("VALUE: '!!' is not base64"), std::string::npos) << r.err;
}

TEST(GrovectlArgsTest, LoadFileProblems) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("data.txt")) << "a,1\n";
  const std::string addr = "127.0.0.1:" + std::to_string(ClosedPort());
  CliRun r = Grovectl({"--addr", addr, "load", dir.Sub("data.txt")});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("cannot tell the format from the file name"), std::string::npos) << r.err;
  r = Grovectl({"--addr", addr, "load", dir.Sub("missing.csv")});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
  // A malformed first record stops the load before anything is sent.
  r = Grovectl({"--addr", addr, "load", "--format", "csv", "-"}, "only-a-key\n");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("stopped at <stdin>:1: expected 2 fields"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("loaded 0 records"), std::string::npos) << r.err;
}

TEST(GrovectlArgsTest, TokenFile) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("empty"));
  CliRun r = Grovectl({"--token-file", dir.Sub("empty"), "stats"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--token-file: cannot read a token"), std::string::npos) << r.err;
}

TEST(GrovectlArgsTest, UnreachableServerIsUnavailable) {
  const std::string addr = "127.0.0.1:" + std::to_string(ClosedPort());
  CliRun r = Grovectl({"--addr", addr, "--retries", "2", "--timeout", "2", "get", "k"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("grovectl: UNAVAILABLE: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is groved running and reachable at " + addr), std::string::npos) << r.err;
}

TEST(GrovectlArgsTest, GlobalOptionsMayFollowTheCommand) {
  const std::string addr = "127.0.0.1:" + std::to_string(ClosedPort());
  CliRun r = Grovectl({"health", "--addr", addr, "--retries", "1", "--timeout", "2"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find(addr), std::string::npos) << r.err;
}

TEST(GrovectlArgsTest, AdviseNamesBadArguments) {
  testing::TempDir dir;
  CliRun r = Grovectl({"advise", "--memory", "64MiB"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  r = Grovectl({"advise", "--trace", dir.Sub("missing.trace"), "--memory", "64MiB"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  std::ofstream(dir.Sub("t.trace")) << "not a trace";
  r = Grovectl({"advise", "--trace", dir.Sub("t.trace"), "--memory", "lots"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--memory"), std::string::npos) << r.err;
  r = Grovectl({"advise", "--trace", dir.Sub("t.trace"), "--memory", "64MiB", "--records", "0"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--records"), std::string::npos) << r.err;
  for (const char* flag : {"--min-seconds", "--warmup-seconds"}) {
    r = Grovectl({"advise", "--trace", dir.Sub("t.trace"), "--memory", "64MiB", flag, "-1"});
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  }
  r = Grovectl(
      {"advise", "--trace", dir.Sub("t.trace"), "--memory", "64MiB", "--scratch", dir.Sub("s")});
  EXPECT_EQ(r.code, kExitUsage);  // not a trace: the file is named
  EXPECT_NE(r.err.find(dir.Sub("t.trace")), std::string::npos) << r.err;
}

// A whole advice on a small synthesised trace, as JSON.
TEST(GrovectlArgsTest, AdviseRanksTheCandidates) {
  testing::TempDir dir;
  {
    auto w = trace::TraceWriter::Create(dir.Sub("w.trace"), trace::Header(), 1 << 30);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 300; ++i) {
      trace::Record r;
      r.micros = static_cast<uint64_t>(i);
      r.op = i % 3 == 0 ? trace::Op::kPut : trace::Op::kGet;
      r.entries.push_back(
          {"k" + std::to_string(1000 + (i * 37) % 500), r.op == trace::Op::kPut, 40});
      r.result = 1;
      ASSERT_TRUE((*w)->Add(r).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  CliRun r = Grovectl({"-o",
                       "json",
                       "advise",
                       "--trace",
                       dir.Sub("w.trace"),
                       "--memory",
                       "4MiB",
                       "--records",
                       "3000",
                       "--candidates",
                       "embedded:btree,embedded:aha",
                       "--scratch",
                       dir.Sub("s"),
                       "--no-direct-io",
                       "--wal-sync",
                       "none",
                       "--threads",
                       "2",
                       "--no-progress",
                       "--min-seconds",
                       "0.1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["candidates"].size(), 2u);
  EXPECT_EQ(j["records"], 3000);
  EXPECT_EQ(j["trace"]["calls"], 300);
  EXPECT_EQ(j["recommended"], j["candidates"][0]["target"]);
  // Warmed up, then whole passes of the trace.
  EXPECT_GT(j["candidates"][0]["warmup_seconds"].get<double>(), 0);
  EXPECT_EQ(j["candidates"][0]["calls"].get<uint64_t>(),
            300 * j["candidates"][0]["loops"].get<uint64_t>());
  EXPECT_GE(j["candidates"][0]["calls_per_sec"].get<double>(),
            j["candidates"][1]["calls_per_sec"].get<double>());
  EXPECT_NE(j["config"].get<std::string>().find("variant:"), std::string::npos);
  // The text form: the table, the bars and the block.
  r = Grovectl({"advise", "--trace", dir.Sub("w.trace"), "--memory", "4MiB", "--records", "3000",
                "--candidates", "embedded:btree", "--scratch", dir.Sub("s"), "--no-direct-io",
                "--wal-sync", "none", "--no-progress", "--min-seconds", "0.1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* part : {"calls/s", "embedded:btree", "why:", "index:\n  variant: btree"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
}

}  // namespace
}  // namespace grove::grovectl
