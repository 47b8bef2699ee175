// Smoke test of grove-bench: every target runs a few hundred operations through the real binary,
// and the JSON lines it writes must parse and add up. Not a benchmark: the numbers are not looked
// at, only their consistency.

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "trace/trace_file.h"
#include <nlohmann/json.hpp>
#ifdef GROVE_BENCH_HAVE_GROVED
#include "service/groved_process.h"
#endif

namespace grove::bench {
namespace {

using nlohmann::json;

// Runs grove-bench with `args` plus --json into `dir`; returns the exit code and the JSON lines.
int RunBench(const std::string& dir, const std::string& args, std::vector<json>* lines) {
  const std::string out = dir + "/out.jsonl";
  std::remove(out.c_str());
  const std::string cmd = std::string(GROVE_BENCH_PATH) + " " + args + " --json " + out +
                          " --progress off --no-table > " + dir + "/stdout.txt 2> " + dir +
                          "/stderr.txt";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (!j.is_discarded()) lines->push_back(j);
  }
  if (rc != 0) {
    std::ifstream err(dir + "/stderr.txt");
    std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << cmd << "\nexit " << rc << "\n" << text;
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The invariants every run must satisfy, whatever the target.
void CheckRun(const json& j, uint64_t expected_ops) {
  SCOPED_TRACE(j.value("target", "?") + " " + j.value("workload", "?"));
  EXPECT_EQ(j["schema"], "grove-bench/1");
  EXPECT_EQ(j["errors"].get<uint64_t>(), 0u) << j.value("first_error", "");
  const uint64_t ops = j["ops"].get<uint64_t>();
  EXPECT_EQ(ops, expected_ops);
  EXPECT_GT(j["throughput"].get<double>(), 0);
  uint64_t sum = 0;
  for (const auto& [type, s] : j["ops_by_type"].items()) {
    const uint64_t count = s["count"].get<uint64_t>();
    EXPECT_EQ(count, s["ok"].get<uint64_t>() + s["not_found"].get<uint64_t>() +
                         s["errors"].get<uint64_t>())
        << type;
    sum += count;
    EXPECT_LE(s["p50_us"].get<double>(), s["p99_us"].get<double>()) << type;
    EXPECT_LE(s["p99_us"].get<double>(), s["p999_us"].get<double>()) << type;
    EXPECT_LE(s["p999_us"].get<double>(), s["max_us"].get<double>() + 0.01) << type;
  }
  EXPECT_EQ(sum, ops);
  EXPECT_EQ(j["latency_us"]["count"].get<uint64_t>(), ops);
  if (j.contains("phases")) {
    uint64_t phase_ops = 0;
    for (const auto& p : j["phases"]) phase_ops += p["ops"].get<uint64_t>();
    EXPECT_EQ(phase_ops, ops);
  }
  for (const char* f :
       {"page_reads_per_op", "page_writes_per_op", "bytes_read_per_op", "bytes_written_per_op"}) {
    EXPECT_TRUE(j["io"].contains(f)) << f;
  }
  EXPECT_TRUE(j["index"].contains("memory_bytes"));
  EXPECT_TRUE(j["machine"].contains("cpus"));
  EXPECT_GT(j["config"]["cache_bytes"].get<uint64_t>(), 0u);
}

// Reads of loaded keys find them: the key stream and the LOAD agree.
void CheckReadsFound(const json& j) {
  SCOPED_TRACE(j.value("target", "?") + " " + j.value("workload", "?"));
  ASSERT_TRUE(j["ops_by_type"].contains("read"));
  EXPECT_EQ(j["ops_by_type"]["read"]["not_found"].get<uint64_t>(), 0u);
}

constexpr uint64_t kRecords = 2000;
constexpr uint64_t kOps = 300;

std::string Common(const std::string& target, const std::string& dir) {
  return "--target '" + target + "' --dir " + dir + " --records " + std::to_string(kRecords) +
         " --ops " + std::to_string(kOps) + " --value-size 16-64 --cache-bytes 2MiB --threads 2";
}

void RunEngineTarget(const std::string& target) {
  testing::TempDir dir;
  std::vector<json> runs;
  ASSERT_EQ(RunBench(dir.path(), Common(target, dir.Sub("data")) + " --workloads load,a,b,c,d,e,f",
                     &runs),
            0);
  ASSERT_EQ(runs.size(), 7u);
  EXPECT_EQ(runs[0]["workload"], "load");
  CheckRun(runs[0], kRecords);
  EXPECT_EQ(runs[0]["ops_by_type"]["insert"]["ok"].get<uint64_t>(), kRecords);
  for (size_t i = 1; i < runs.size(); ++i) CheckRun(runs[i], kOps);
  EXPECT_EQ(runs[3]["workload"], "c");
  CheckReadsFound(runs[3]);
  EXPECT_GT(runs[5]["ops_by_type"]["scan"]["scan_entries"].get<uint64_t>(), 0u);

  // A second invocation without LOAD finds the keys the first one left (state file), and the
  // distribution override runs each workload once per distribution.
  runs.clear();
  ASSERT_EQ(
      RunBench(dir.path(),
               Common(target, dir.Sub("data")) + " --workloads c --distribution uniform,hotspot",
               &runs),
      0);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["distribution"], "uniform");
  for (const auto& r : runs) {
    CheckRun(r, kOps);
    CheckReadsFound(r);
  }
}

TEST(BenchSmokeTest, EmbeddedBtree) { RunEngineTarget("embedded:btree?fill_factor=0.9"); }

TEST(BenchSmokeTest, RocksDb) { RunEngineTarget("rocksdb"); }

TEST(BenchSmokeTest, LoadMethods) {
  for (const char* target : {"embedded:btree", "rocksdb"}) {
    for (const char* method : {"batch", "bulk"}) {
      SCOPED_TRACE(std::string(target) + " " + method);
      testing::TempDir dir;
      std::vector<json> runs;
      ASSERT_EQ(RunBench(dir.path(),
                         Common(target, dir.Sub("data")) + " --load-method " + method +
                             " --batch-size 100 --workloads load,c --distribution uniform",
                         &runs),
                0);
      ASSERT_EQ(runs.size(), 2u);
      CheckRun(runs[0], kRecords);
      EXPECT_EQ(runs[0]["config"]["load_method"], method);
      CheckRun(runs[1], kOps);
      CheckReadsFound(runs[1]);
    }
  }
}

TEST(BenchSmokeTest, Device) {
  testing::TempDir dir;
  std::vector<json> runs;
  ASSERT_EQ(RunBench(dir.path(), Common("device", dir.Sub("data")) + " --workloads c,a", &runs), 0);
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    CheckRun(r, kOps);
    EXPECT_DOUBLE_EQ(r["io"]["page_reads_per_op"].get<double>(), 1.0);
  }
}

TEST(BenchSmokeTest, DeviceReadsAnExistingFileWholeAndLeavesItAsItWas) {
  testing::TempDir dir;
  const std::string file = dir.Sub("existing.dat");
  std::string content(3 * 4096 + 100, '\0');  // three whole pages and a tail the reads skip
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  std::ofstream(file, std::ios::binary) << content;
  std::vector<json> runs;
  ASSERT_EQ(RunBench(dir.path(), Common("device?file=" + file, dir.Sub("data")) + " --workloads c",
                     &runs),
            0);
  ASSERT_EQ(runs.size(), 1u);
  CheckRun(runs[0], kOps);
  EXPECT_DOUBLE_EQ(runs[0]["io"]["page_reads_per_op"].get<double>(), 1.0);
  EXPECT_EQ(runs[0]["target_config"]["file"], file);
  EXPECT_EQ(runs[0]["target_config"]["file_bytes"], "12288");
  std::ifstream in(file, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, content) << "the file is only read";

  // Bad inputs are refused with the parameter named.
  for (const std::string& target :
       {"device?file=" + dir.Sub("missing.dat"), "device?file=" + file + "&file_bytes=1GiB",
        std::string("device?file=")}) {
    const std::string cmd = std::string(GROVE_BENCH_PATH) + " " + Common(target, dir.Sub("data")) +
                            " --workloads c --progress off " + "--no-table > /dev/null 2> " +
                            dir.Sub("err.txt");
    const int rc = std::system(cmd.c_str());
    EXPECT_NE(rc, 0) << target;
    std::ifstream err(dir.Sub("err.txt"));
    const std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("device"), std::string::npos) << target << ": " << text;
  }
}

TEST(BenchSmokeTest, PhasedYamlWorkloadAndKeyShapes) {
  testing::TempDir dir;
  const std::string yaml = dir.Sub("w.yaml");
  std::ofstream(yaml) << R"(name: phased
repeat: 2
phases:
  - name: hot-scans
    mix: {scan: 0.9, update: 0.1}
    distribution: {kind: hotspot, data_fraction: 0.05, op_fraction: 1.0}
    scan: {width: 50}
    ops: 100
  - name: inserts
    mix: {read: 0.5, insert: 0.5}
    distribution: latest
    ops: 150
)";
  std::vector<json> runs;
  ASSERT_EQ(
      RunBench(dir.path(),
               Common("embedded:btree", dir.Sub("data")) + " --keys osm --workloads load," + yaml,
               &runs),
      0);
  ASSERT_EQ(runs.size(), 2u);
  CheckRun(runs[1], 500);
  ASSERT_EQ(runs[1]["phases"].size(), 4u);
  EXPECT_EQ(runs[1]["phases"][1]["name"], "inserts");
  EXPECT_GT(runs[1]["ops_by_type"]["insert"]["ok"].get<uint64_t>(), 0u);
  EXPECT_FALSE(runs[1].contains("inserts_exhausted"));
}

#ifdef GROVE_BENCH_HAVE_GROVED
TEST(BenchSmokeTest, GrpcAndNoop) {
  testing::TempDir dir;
  grove::testing::GrovedConfig config;
  config.data_dir = dir.Sub("groved");
  auto groved = grove::testing::GrovedProcess::Start(dir.path(), config);
  ASSERT_NE(groved, nullptr);
  std::vector<json> runs;
  ASSERT_EQ(
      RunBench(dir.path(),
               Common("grpc://" + groved->address(), dir.Sub("bench")) + " --workloads load,a,c,e",
               &runs),
      0);
  ASSERT_EQ(runs.size(), 4u);
  CheckRun(runs[0], kRecords);
  for (size_t i = 1; i < runs.size(); ++i) CheckRun(runs[i], kOps);
  CheckReadsFound(runs[2]);

  runs.clear();
  ASSERT_EQ(RunBench(dir.path(),
                     Common("grpc-noop://" + groved->address(), dir.Sub("noop")) + " --workloads c",
                     &runs),
            0);
  ASSERT_EQ(runs.size(), 1u);
  CheckRun(runs[0], kOps);
}
#endif

// A load whose operations fail (values over the engine's limits.max_value_bytes) stops the run:
// the workloads after it would measure a partial data set.
TEST(BenchSmokeTest, AFailedLoadStopsTheRun) {
  testing::TempDir dir;
  const std::string out = dir.Sub("out.jsonl");
  const std::string cmd = std::string(GROVE_BENCH_PATH) + " --target embedded:btree --dir " +
                          dir.Sub("data") +
                          " --records 200 --ops 100 --value-size 200000 --workloads load,c "
                          "--progress off --json " +
                          out + " > " + dir.Sub("stdout.txt") + " 2> " + dir.Sub("stderr.txt");
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  std::ifstream in(out);
  std::vector<json> runs;
  for (std::string line; std::getline(in, line);) runs.push_back(json::parse(line));
  ASSERT_EQ(runs.size(), 1u) << "only the load reports";
  EXPECT_EQ(runs[0]["workload"], "load");
  EXPECT_GT(runs[0]["errors"].get<uint64_t>(), 0u);
  std::ifstream err(dir.Sub("stderr.txt"));
  const std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("the load failed, so the workloads after it are not run"), std::string::npos)
      << text;
  // The table names the errors.
  std::ifstream table(dir.Sub("stdout.txt"));
  const std::string rows((std::istreambuf_iterator<char>(table)), std::istreambuf_iterator<char>());
  EXPECT_NE(rows.find("errors"), std::string::npos) << rows;
  // No state was saved: a run without load refuses instead of reading a partial data set.
  const std::string again = std::string(GROVE_BENCH_PATH) + " --target embedded:btree --dir " +
                            dir.Sub("data") + " --records 200 --ops 100 --workloads c " +
                            "--progress off > /dev/null 2>&1";
  EXPECT_NE(WEXITSTATUS(std::system(again.c_str())), 0);
}

// A trace groved could have written, replayed onto the data grove-bench loaded (scaled keys) on
// an engine and on RocksDB, then again with exact keys on the same data (no load).
TEST(BenchSmokeTest, ReplayATrace) {
  testing::TempDir dir;
  const std::string path = dir.Sub("w.trace");
  uint64_t calls = 0;
  {
    auto w = trace::TraceWriter::Create(path, trace::Header(), 1 << 30);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int i = 0; i < 400; ++i) {
      trace::Record r;
      r.micros = static_cast<uint64_t>(i) * 10;
      const std::string key = "user" + std::to_string(1000 + (i * 7919) % 500);
      r.op = i % 4 == 1 ? trace::Op::kPut : i % 10 == 3 ? trace::Op::kScan : trace::Op::kGet;
      r.entries.push_back({key, r.op == trace::Op::kPut, 120});
      if (r.op == trace::Op::kScan) {
        r.entries.push_back({"", false, 0});
        r.arg = 20;
      } else if (r.op == trace::Op::kGet) {
        r.result = 1;
      }
      ASSERT_TRUE((*w)->Add(r).ok());
      ++calls;
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  for (const std::string target : {"embedded:btree", "rocksdb"}) {
    std::vector<json> runs;
    const std::string data = dir.Sub(target == "rocksdb" ? "rocks" : "grove");
    ASSERT_EQ(RunBench(dir.path(), Common(target, data) + " --workloads load,trace:" + path, &runs),
              0);
    ASSERT_EQ(runs.size(), 2u);
    CheckRun(runs[1], calls);
    CheckReadsFound(runs[1]);
    EXPECT_EQ(runs[1]["workload"], "trace:w.trace");
    EXPECT_EQ(runs[1]["replay"]["calls"].get<uint64_t>(), calls);
    EXPECT_EQ(runs[1]["replay"]["keys"], "scaled");
    EXPECT_GT(runs[1]["ops_by_type"]["scan"]["scan_entries"].get<uint64_t>(), 0u);
  }
  // Exact keys need no loaded state; these keys were never loaded, so reads miss until the trace
  // writes them.
  std::vector<json> runs;
  ASSERT_EQ(RunBench(dir.path(),
                     Common("embedded:btree", dir.Sub("fresh")) + " --workloads trace:" + path +
                         " --replay-keys exact --replay-timing trace --replay-speed 100",
                     &runs),
            0);
  ASSERT_EQ(runs.size(), 1u);
  CheckRun(runs[0], calls);
  EXPECT_EQ(runs[0]["replay"]["timing"], "trace");
  EXPECT_GT(runs[0]["ops_by_type"]["read"]["not_found"].get<uint64_t>(), 0u);
  // A bad replay option is refused by name.
  runs.clear();
  const std::string bad = std::string(GROVE_BENCH_PATH) + " --workloads trace:" + path +
                          " --replay-keys hashed --progress off > /dev/null 2> " +
                          dir.Sub("bad.txt");
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 2);
  std::ifstream err(dir.Sub("bad.txt"));
  const std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("--replay-keys"), std::string::npos) << text;
}

TEST(BenchSmokeTest, BadOptionsExitTwo) {
  testing::TempDir dir;
  std::vector<json> runs;
  const std::string cmd = std::string(GROVE_BENCH_PATH) + " --target nosuch --dir " + dir.Sub("d") +
                          " --progress off > /dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

}  // namespace
}  // namespace grove::bench
