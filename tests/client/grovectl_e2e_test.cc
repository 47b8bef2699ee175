// grovectl against a real groved, driven in-process through RunGrovectl.

#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "grovectl/app.h"
#include "grovectl/commands.h"
#include "service/integration.h"
#include <nlohmann/json.hpp>

namespace grove::testing {
namespace {

using grovectl::kExitFailed;
using grovectl::kExitNotFound;
using grovectl::kExitOk;
using grovectl::kExitPrecondition;
using grovectl::kExitUsage;

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

class GrovectlE2eTest : public GrovedTest {
 protected:
  CliResult Cli(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), {"grovectl", "--addr", groved_->address()});
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::istringstream in(stdin_text);
    std::ostringstream out, err;
    CliResult r;
    r.code = grovectl::RunGrovectl(static_cast<int>(argv.size()), argv.data(), in, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  std::string File(const std::string& name, const std::string& text) {
    std::ofstream(dir_.Sub(name)) << text;
    return dir_.Sub(name);
  }
};

TEST_F(GrovectlE2eTest, QuickStart) {
  StartGroved();
  EXPECT_EQ(Cli({"put", "hello", "world"}).code, kExitOk);
  CliResult r = Cli({"get", "hello"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, "world\n");
  r = Cli({"scan"});
  EXPECT_EQ(r.out, "hello\tworld\n");
  r = Cli({"stats"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("variant            btree"), std::string::npos) << r.out;
  r = Cli({"health"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, "SERVING\n");
}

TEST_F(GrovectlE2eTest, GetPutDeleteAndNotFound) {
  StartGroved();
  CliResult r = Cli({"get", "nope"});
  EXPECT_EQ(r.code, kExitNotFound);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "grovectl: not found\n");
  r = Cli({"-o", "json", "get", "nope"});
  EXPECT_EQ(r.code, kExitNotFound);
  EXPECT_EQ(r.out, "{\"found\":false,\"key\":\"nope\"}\n");
  ASSERT_EQ(Cli({"put", "k", "v"}).code, kExitOk);
  r = Cli({"get", "k", "-o", "json"});
  const nlohmann::json got = nlohmann::json::parse(r.out);
  EXPECT_EQ(got["found"], true);
  EXPECT_EQ(got["key"], "k");
  EXPECT_EQ(got["value"], "v");
  EXPECT_GT(got["version"].get<uint64_t>(), 0u);
  EXPECT_EQ(Cli({"delete", "k"}).code, kExitOk);
  EXPECT_EQ(Cli({"get", "k"}).code, kExitNotFound);
  // Server-side refusals are reported with their code and message.
  r = Cli({"put", std::string(200, 'k'), "v"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err,
            "grovectl: RESOURCE_EXHAUSTED: key: 200 bytes is over limits.max_key_bytes (128)\n");
}

TEST_F(GrovectlE2eTest, CompareAndSwap) {
  StartGroved();
  EXPECT_EQ(Cli({"cas", "c", "1"}).code, kExitUsage) << "an expectation is required";
  ASSERT_EQ(Cli({"cas", "c", "1", "--expect-absent"}).code, kExitOk);
  CliResult r = Cli({"-o", "json", "cas", "c", "2", "--expect-absent"});
  EXPECT_EQ(r.code, kExitPrecondition);
  const nlohmann::json refused = nlohmann::json::parse(r.out);
  EXPECT_EQ(refused["swapped"], false);
  EXPECT_EQ(refused["value"], "1");
  const uint64_t version = refused["version"].get<uint64_t>();
  EXPECT_NE(r.err.find("grovectl: not swapped: precondition: the key is present"),
            std::string::npos)
      << r.err;
  r = Cli({"-o", "json", "cas", "c", "2", "--expect-version", std::to_string(version)});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["swapped"], true);
  EXPECT_EQ(Cli({"cas", "c", "3", "--expect", "1"}).code, kExitPrecondition);
  EXPECT_EQ(Cli({"cas", "c", "3", "--expect", "2"}).code, kExitOk);
  EXPECT_EQ(Cli({"get", "c"}).out, "3\n");
  EXPECT_EQ(Cli({"cas", "c", "4", "--expect", "3", "--expect-absent"}).code, kExitUsage);
}

TEST_F(GrovectlE2eTest, DeleteRangeAndTimeToLive) {
  StartGroved();
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(Cli({"--key-format", "u64", "put", std::to_string(i), "v"}).code, kExitOk);
  }
  EXPECT_EQ(Cli({"delete-range"}).code, kExitUsage) << "a range, or --all-keys, is required";
  CliResult r = Cli(
      {"--key-format", "u64", "delete-range", "--start", "5", "--end", "25", "-n", "8", "--once"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "deleted 8 keys in 1 call; stopped at limit, continue with --start 13\n");
  r = Cli({"-o", "json", "--key-format", "u64", "delete-range", "--start", "13", "--end", "25",
           "-n", "5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json done = nlohmann::json::parse(r.out);
  EXPECT_EQ(done["deleted"], 12);
  EXPECT_EQ(done["calls"], 3);
  EXPECT_EQ(done["more"], false);
  EXPECT_EQ(Cli({"--key-format", "u64", "get", "4"}).code, kExitOk);
  EXPECT_EQ(Cli({"--key-format", "u64", "get", "5"}).code, kExitNotFound);
  EXPECT_EQ(Cli({"--key-format", "u64", "get", "25"}).code, kExitOk);

  EXPECT_EQ(Cli({"put", "--ttl", "soon", "t", "v"}).code, kExitUsage);
  EXPECT_EQ(Cli({"put", "--ttl", "5y", "t", "v"}).code, kExitUsage);
  ASSERT_EQ(Cli({"put", "--ttl", "1h", "long", "v"}).code, kExitOk);
  r = Cli({"-o", "json", "get", "long"});
  const nlohmann::json got = nlohmann::json::parse(r.out);
  EXPECT_GT(got["expires_at_ms"].get<uint64_t>(), 0u);
  ASSERT_EQ(Cli({"put", "--ttl", "200ms", "short", "v"}).code, kExitOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(Cli({"get", "short"}).code, kExitNotFound);
  EXPECT_EQ(Cli({"delete-range", "--all-keys"}).out, "deleted 11 keys in 1 call\n");
}

TEST_F(GrovectlE2eTest, BackupRestoreAndVerifyBackup) {
  StartGroved("backup:\n  dir: " + dir_.Sub("backups") + "\n");
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(Cli({"--key-format", "u64", "put", std::to_string(i), "v" + std::to_string(i)}).code,
              kExitOk);
  }
  EXPECT_EQ(Cli({"backup", "../escape"}).code, kExitFailed);
  CliResult r = Cli({"-o", "json", "backup", "nightly", "--max-rate", "64MiB"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json b = nlohmann::json::parse(r.out);
  EXPECT_EQ(b["path"], dir_.Sub("backups") + "/nightly");
  EXPECT_GT(b["last_lsn"].get<uint64_t>(), 0u);
  r = Cli({"backup", "nightly"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION: name: "), std::string::npos) << r.err;
  ASSERT_EQ(Cli({"put", "after", "the backup"}).code, kExitOk);

  r = Cli({"verify-backup", dir_.Sub("backups") + "/nightly", "--checksums-only"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("every file matches its checksum"), std::string::npos) << r.out;
  r = Cli({"-o", "json", "verify-backup", dir_.Sub("backups") + "/nightly"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["entries"], 50);
  r = Cli({"restore", dir_.Sub("backups") + "/nightly", dir_.Sub("restored")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("50 entries"), std::string::npos) << r.out;
  r = Cli({"restore", dir_.Sub("backups") + "/nightly", dir_.Sub("restored")});
  EXPECT_EQ(r.code, kExitFailed) << "a data directory that is not empty";
  EXPECT_NE(r.err.find("data_dir"), std::string::npos) << r.err;
  r = Cli({"verify-backup", dir_.Sub("nowhere")});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("no BACKUP file"), std::string::npos) << r.err;
}

TEST_F(GrovectlE2eTest, VerifyOnlineAndWithWritersPaused) {
  const std::string tokens =
      File("tokens", "write writer-token-0123456789\nadmin admin-token-0123456789\n");
  StartGroved("auth:\n  tokens_file: " + tokens + "\n");
  const std::vector<std::string> admin = {"--token", "admin-token-0123456789"};
  auto as_admin = [&](std::vector<std::string> args) {
    args.insert(args.begin(), admin.begin(), admin.end());
    return Cli(args);
  };
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(
        as_admin({"--key-format", "u64", "put", std::to_string(i), std::string(3000, 'v')}).code,
        kExitOk);
  }
  CliResult r = Cli({"--token", "writer-token-0123456789", "verify"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("does not allow Verify (needs 'admin')"), std::string::npos) << r.err;
  r = as_admin({"-o", "json", "verify"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["entries_checked"], 40);
  EXPECT_EQ(j["blob_values_checked"], 40) << "3000-byte values live in the value store";
  EXPECT_TRUE(j["problems"].empty());
  EXPECT_GT(j["checkpoint_epoch"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["writers_paused"], false);
  r = as_admin({"verify", "--pause-writers"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("verified the live database (writers paused): "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("40 entries"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no problems"), std::string::npos) << r.out;
  EXPECT_EQ(as_admin({"verify", "--cache", "12"}).code, kExitUsage);
  EXPECT_EQ(as_admin({"verify", "--wait", "never"}).code, kExitUsage);
}

TEST_F(GrovectlE2eTest, TraceStartStatusStop) {
  StartGroved("trace:\n  dir: " + dir_.Sub("traces") + "\n");
  EXPECT_EQ(Cli({"trace", "status"}).out, "no trace has run\n");
  EXPECT_EQ(Cli({"trace", "start", "--sample", "2"}).code, kExitUsage);
  EXPECT_EQ(Cli({"trace", "start", "--duration", "soon"}).code, kExitUsage);
  CliResult r = Cli({"trace", "start", "--sample", "1", "--out", "t1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("tracing into " + dir_.Sub("traces") + "/t1.trace"), std::string::npos)
      << r.out;
  r = Cli({"trace", "start", "--out", "t2"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION: a trace is running"), std::string::npos) << r.err;
  ASSERT_EQ(Cli({"put", "k", "v"}).code, kExitOk);
  ASSERT_EQ(Cli({"get", "k"}).code, kExitOk);
  r = Cli({"-o", "json", "trace", "stop"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["active"], false);
  EXPECT_EQ(j["records_written"], 2);
  EXPECT_EQ(j["ended_because"], "stopped");
  r = Cli({"trace", "stop"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("no trace is running"), std::string::npos) << r.err;
}

TEST_F(GrovectlE2eTest, BackupNeedsBackupDirAndTheAdminRole) {
  const std::string tokens =
      File("tokens", "write writer-token-0123456789\nadmin admin-token-0123456789\n");
  StartGroved("backup:\n  dir: " + dir_.Sub("backups") + "\nauth:\n  tokens_file: " + tokens +
              "\n");
  CliResult r = Cli({"--token", "writer-token-0123456789", "backup"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("PERMISSION_DENIED: the token's role 'write' does not allow Backup "
                       "(needs 'admin')"),
            std::string::npos)
      << r.err;
  r = Cli({"--token", "admin-token-0123456789", "backup", "by-admin"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(Cli({"--token", "admin-token-0123456789", "put", "k", "v"}).code, kExitOk)
      << "admin includes write";
  StopGroved();
  StartGroved();
  r = Cli({"backup"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION: backup.dir is not set"), std::string::npos) << r.err;
}

TEST_F(GrovectlE2eTest, KeyAndValueFormats) {
  StartGroved();
  EXPECT_EQ(Cli({"--key-format", "u64", "put", "258", "two-five-eight"}).code, kExitOk);
  EXPECT_EQ(Cli({"--key-format", "hex", "get", "0000000000000102"}).out, "two-five-eight\n");
  EXPECT_EQ(Cli({"--key-format", "u64", "--value-format", "base64", "get", "258"}).out,
            "dHdvLWZpdmUtZWlnaHQ=\n");
  EXPECT_EQ(Cli({"--value-format", "hex", "put", "bin", "00ff10"}).code, kExitOk);
  EXPECT_EQ(Cli({"--value-format", "hex", "get", "bin"}).out, "00ff10\n");
  EXPECT_EQ(Cli({"put", "--value-file", "-", "stdin"}, "from\nstdin").code, kExitOk);
  EXPECT_EQ(Cli({"get", "stdin"}).out, "from\nstdin\n");
}

TEST_F(GrovectlE2eTest, ScanRangesDirectionsLimitsAndJson) {
  StartGroved();
  for (int i = 1; i <= 5; ++i) {
    ASSERT_EQ(
        Cli({"--key-format", "u64", "put", std::to_string(i * 10), "v" + std::to_string(i)}).code,
        kExitOk);
  }
  EXPECT_EQ(Cli({"--key-format", "u64", "scan", "--start", "20", "--end", "50"}).out,
            "20\tv2\n30\tv3\n40\tv4\n");
  EXPECT_EQ(Cli({"--key-format", "u64", "scan", "--reverse", "--limit", "2"}).out,
            "50\tv5\n40\tv4\n");
  EXPECT_EQ(Cli({"--key-format", "u64", "scan", "--keys-only", "-n", "2"}).out, "10\n20\n");
  EXPECT_EQ(Cli({"--key-format", "u64", "-o", "json", "scan", "--start", "40"}).out,
            "{\"key\":\"40\",\"value\":\"v4\"}\n{\"key\":\"50\",\"value\":\"v5\"}\n");
  EXPECT_EQ(Cli({"--key-format", "u64", "scan", "--page-size", "2"}).out,
            "10\tv1\n20\tv2\n30\tv3\n40\tv4\n50\tv5\n");
}

TEST_F(GrovectlE2eTest, LoadCsvTsvJsonlInBatches) {
  StartGroved();
  std::string csv = "key,value\n";
  for (int i = 0; i < 10; ++i)
    csv += "c" + std::to_string(i) + ",\"v," + std::to_string(i) + "\"\n";
  CliResult r =
      Cli({"load", File("data.csv", csv), "--header", "--batch-entries", "3", "--no-progress"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("loaded 10 records (10 puts, 0 deletes; "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" in 4 batches, "), std::string::npos) << r.err;
  EXPECT_EQ(Cli({"get", "c7"}).out, "v,7\n");

  r = Cli({"load", File("data.tsv", "t1\tone\\ttab\nt2\ttwo\n")});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(Cli({"get", "t1"}).out, "one\ttab\n");

  r = Cli({"load", File("data.jsonl",
                        "{\"key\":\"j1\",\"value\":\"x\"}\n{\"key\":\"c0\",\"op\":\"delete\"}\n")});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("loaded 2 records (1 puts, 1 deletes; "), std::string::npos) << r.err;
  EXPECT_EQ(Cli({"get", "c0"}).code, kExitNotFound);

  // Standard input, with the format given; a progress bar when asked for.
  r = Cli({"load", "-", "--format", "csv", "--progress"}, "s1,1\ns2,2\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("records/s"), std::string::npos);
  EXPECT_EQ(Cli({"get", "s2"}).out, "2\n");
}

TEST_F(GrovectlE2eTest, LoadStopsAtABadLineAfterEarlierBatches) {
  StartGroved();
  CliResult r_ = Cli({"load", File("bad.csv", "a,1\nb,2\nc,3\nd\n"), "--batch-entries", "2"});
  EXPECT_EQ(r_.code, kExitUsage);
  EXPECT_NE(r_.err.find("stopped at " + dir_.Sub("bad.csv") + ":4: expected 2 fields"),
            std::string::npos)
      << r_.err;
  EXPECT_NE(r_.err.find("loaded 2 records"), std::string::npos) << r_.err;
  EXPECT_EQ(Cli({"get", "b"}).out, "2\n") << "the first batch was applied";
  EXPECT_EQ(Cli({"get", "c"}).code, kExitNotFound) << "the batch in progress was not";
}

TEST_F(GrovectlE2eTest, LoadReportsServerRefusals) {
  StartGroved("limits:\n  max_value_bytes: 4\n  max_batch_bytes: 64KiB\n");
  CliResult r = Cli({"load", File("big.csv", "a,1\nb,too-long-value\n")});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("RESOURCE_EXHAUSTED: mutations[1].value: 14 bytes is over "
                       "limits.max_value_bytes (4)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(each batch is all or nothing)"), std::string::npos) << r.err;
  EXPECT_EQ(Cli({"get", "a"}).code, kExitNotFound);
}

TEST_F(GrovectlE2eTest, StatsAndHealthAsJson) {
  StartGroved();
  CliResult r = Cli({"stats", "-o", "json"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("\"variant\":\"btree\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"cache\":{"), std::string::npos) << r.out;
  r = Cli({"health", "-o", "json", "--service", "grove.v1.KV"});
  EXPECT_EQ(r.out, "{\"service\":\"grove.v1.KV\",\"status\":\"SERVING\"}\n");
  r = Cli({"health", "--service", "nope"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos);
}

TEST_F(GrovectlE2eTest, TokensFromFlagFileAndEnvironment) {
  File("tokens", "write write-token-0123456789\n");
  StartGroved("auth:\n  tokens_file: " + dir_.Sub("tokens") + "\n");
  EXPECT_EQ(Cli({"put", "k", "v"}).code, kExitFailed);
  EXPECT_EQ(Cli({"--token", "write-token-0123456789", "put", "k", "v"}).code, kExitOk);
  EXPECT_EQ(Cli({"--token-file", File("my-token", "write-token-0123456789\n"), "get", "k"}).out,
            "v\n");
  setenv("GROVE_TOKEN", "write-token-0123456789", 1);
  EXPECT_EQ(Cli({"get", "k"}).out, "v\n");
  unsetenv("GROVE_TOKEN");
  CliResult r = Cli({"get", "k"});
  EXPECT_EQ(r.err, "grovectl: UNAUTHENTICATED: missing 'authorization: Bearer <token>' metadata\n");
}

TEST_F(GrovectlE2eTest, TlsFlags) {
  const std::string certs = dir_.Sub("certs");
  ASSERT_EQ(system(("mkdir -p " + certs + " && " GEN_CERTS_SCRIPT " " + certs).c_str()), 0);
  StartGroved("tls:\n  cert_file: " + certs + "/server.pem\n  key_file: " + certs +
              "/server.key\n  client_ca_file: " + certs + "/ca.pem\n");
  CliResult r = Cli({"--tls", "--ca", certs + "/ca.pem", "--cert", certs + "/client.pem", "--key",
                     certs + "/client.key", "put", "k", "v"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  r = Cli({"--tls", "--ca", certs + "/ca.pem", "--retries", "1", "get", "k"});
  EXPECT_EQ(r.code, kExitFailed) << "no client certificate";
}

}  // namespace
}  // namespace grove::testing
