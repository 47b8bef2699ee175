// The advisor: its ranking and explanation rules on fixed figures (which variant is faster on a
// given machine is a measurement, not something a test can assert), and whole runs that load,
// replay and clean up, from synthesised records and from a backup.

#include "bench/advisor.h"

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grove/db.h"
#include "grove/logger.h"

#include "bench/key_set.h"
#include "testutil/temp_dir.h"
#include "trace/trace_file.h"

namespace grove::bench {
namespace {

CandidateResult Figures(const std::string& target, double ops, double reads, double written,
                        double cpu) {
  CandidateResult c;
  c.target = target;
  c.variant = target.substr(target.find(':') + 1);
  c.ops_per_sec = ops;
  c.page_reads_per_op = reads;
  c.bytes_written_per_op = written;
  c.cpu_us_per_op = cpu;
  return c;
}

TEST(AdvisorRulesTest, RanksByThroughputWithFailuresLast) {
  std::vector<CandidateResult> c = {
      Figures("embedded:btree", 100, 1, 0, 10), Figures("embedded:hln", 300, 1, 0, 10),
      Figures("embedded:aulid", 999, 1, 0, 10), Figures("embedded:aha", 200, 1, 0, 10)};
  c[2].status = Status::Internal("load failed");
  RankCandidates(&c);
  EXPECT_EQ(c[0].target, "embedded:hln");
  EXPECT_EQ(c[1].target, "embedded:aha");
  EXPECT_EQ(c[2].target, "embedded:btree");
  EXPECT_EQ(c[3].target, "embedded:aulid");
}

TEST(AdvisorRulesTest, NamesTheResourceThatDecided) {
  // A trace of cold point reads: the winner reads fewer pages.
  std::string why = ExplainChoice(Figures("embedded:btree", 2000, 1.0, 0, 30),
                                  Figures("embedded:aulid", 1000, 1.9, 0, 25));
  EXPECT_NE(why.find("Device reads decided it: 1.000 against 1.900"), std::string::npos) << why;
  EXPECT_NE(why.find("2.00x embedded:aulid"), std::string::npos) << why;
  // A write-heavy trace with equal reads: bytes written.
  why = ExplainChoice(Figures("embedded:aha", 5000, 0.1, 2048, 50),
                      Figures("embedded:btree", 3000, 0.1, 8192, 40));
  EXPECT_NE(why.find("Writes decided it: 2.00 against 8.00 KiB"), std::string::npos) << why;
  // Cached reads: CPU, and a near tie is called one.
  why = ExplainChoice(Figures("embedded:treeline", 10300, 0.0, 0, 80),
                      Figures("embedded:btree", 10000, 0.0, 0, 83));
  EXPECT_NE(why.find("CPU decided it: 80.0 against 83.0"), std::string::npos) << why;
  EXPECT_NE(why.find("tie"), std::string::npos) << why;
  // A winner that read more did not win on reads.
  why = ExplainChoice(Figures("embedded:aha", 3000, 1.5, 0, 30),
                      Figures("embedded:btree", 2000, 1.1, 0, 60));
  EXPECT_NE(why.find("CPU decided it: 30.0 against 60.0"), std::string::npos) << why;
  EXPECT_NE(why.find("read more pages and still ran faster"), std::string::npos) << why;
  // A read count too small to matter does not decide.
  why = ExplainChoice(Figures("embedded:btree", 2000, 0.001, 0, 30),
                      Figures("embedded:hln", 1000, 0.01, 0, 60));
  EXPECT_NE(why.find("CPU decided it"), std::string::npos) << why;
}

TEST(AdvisorRulesTest, SaysWhenTheSlicesOfTheTopTwoOverlap) {
  CandidateResult best = Figures("embedded:btree", 1100, 0.5, 0, 30);
  CandidateResult next = Figures("embedded:treeline", 1000, 0.3, 0, 40);
  best.slice_ops_per_sec = {1300, 900, 1100, 1100};
  next.slice_ops_per_sec = {950, 1050, 980, 1020};
  std::string why = ExplainChoice(best, next);
  EXPECT_NE(why.find("Their slices overlap (embedded:btree's slowest ran at 900 calls/s, "
                     "embedded:treeline's fastest at 1050)"),
            std::string::npos)
      << why;
  best.slice_ops_per_sec = {1120, 1080, 1100, 1100};
  why = ExplainChoice(best, next);
  EXPECT_EQ(why.find("overlap"), std::string::npos) << why;
  EXPECT_DOUBLE_EQ(best.SliceSpread(), 40.0 / 1100);
  EXPECT_DOUBLE_EQ(Figures("embedded:aha", 10, 0, 0, 0).SliceSpread(), 0) << "no slices";
}

TEST(AdvisorRulesTest, PassesDivideIntoSlicesAsEvenlyAsTheyGo) {
  EXPECT_EQ(SlicePasses(10, 4), (std::vector<uint32_t>{3, 3, 2, 2}));
  EXPECT_EQ(SlicePasses(8, 4), (std::vector<uint32_t>{2, 2, 2, 2}));
  EXPECT_EQ(SlicePasses(3, 4), (std::vector<uint32_t>{1, 1, 1})) << "never an empty slice";
  EXPECT_EQ(SlicePasses(1, 4), (std::vector<uint32_t>{1}));
  EXPECT_EQ(SlicePasses(7, 1), (std::vector<uint32_t>{7}));
  EXPECT_EQ(SlicePasses(5, 0), (std::vector<uint32_t>{5})) << "0 slices means one";
}

TEST(AdvisorRulesTest, ConfigBlockSelectsTheCandidate) {
  EXPECT_EQ(IndexConfigBlock(Figures("embedded:btree", 1, 0, 0, 0)),
            "index:\n  variant: btree\n  params: {}\n");
  CandidateResult c = Figures("embedded:btree", 1, 0, 0, 0);
  c.params = {{"prefetch", "shortcut"}};
  EXPECT_EQ(IndexConfigBlock(c),
            "index:\n  variant: btree\n  params:\n    prefetch: \"shortcut\"\n");
}

// A small trace: reads of keys that exist (and one that does not), updates, scans.
void WriteTrace(const std::string& path, int calls) {
  auto w = trace::TraceWriter::Create(path, trace::Header(), 1 << 30);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < calls; ++i) {
    trace::Record r;
    r.micros = static_cast<uint64_t>(i);
    const std::string key = "order:" + std::to_string(100000 + (i * 7919) % 3000);
    r.op = i % 5 == 1 ? trace::Op::kPut : i % 9 == 4 ? trace::Op::kScan : trace::Op::kGet;
    r.entries.push_back({key, r.op == trace::Op::kPut, 64});
    if (r.op == trace::Op::kScan) {
      r.entries.push_back({"", false, 0});
      r.arg = 10;
    } else if (r.op == trace::Op::kGet) {
      r.result = 1;
    }
    ASSERT_TRUE((*w)->Add(r).ok());
  }
  ASSERT_TRUE((*w)->Close().ok());
}

AdvisorOptions SmallRun(const testing::TempDir& dir) {
  AdvisorOptions o;
  o.trace = dir.Sub("w.trace");
  o.records = 4000;
  o.memory_bytes = 4 << 20;  // treeline's smallest buffer pool needs this much
  o.dir = dir.Sub("scratch");
  o.threads = 2;
  o.direct_io = false;
  o.wal_sync = "none";
  o.min_seconds = 0;  // one measured pass after the warm-up
  return o;
}

TEST(AdvisorTest, RunsEveryCandidateOnTheSameDataAndCleansUp) {
  testing::TempDir dir;
  WriteTrace(dir.Sub("w.trace"), 600);
  AdvisorOptions o = SmallRun(dir);
  o.candidates = {"embedded:btree", "embedded:treeline", "rocksdb"};
  std::vector<std::string> said;
  auto advice = Advise(o, [&](const std::string& line) { said.push_back(line); });
  ASSERT_TRUE(advice.ok()) << advice.status().ToString();
  ASSERT_EQ(advice->ranked.size(), 3u);
  EXPECT_EQ(advice->records, 4000u);
  EXPECT_EQ(advice->replay.calls, 600u);
  EXPECT_EQ(advice->replay.keys, "scaled");
  for (size_t i = 0; i < 2; ++i) {
    const CandidateResult& c = advice->ranked[i];
    EXPECT_TRUE(c.status.ok()) << c.target << ": " << c.status.ToString();
    EXPECT_EQ(c.ops, 600u) << c.target;
    EXPECT_EQ(c.errors, 0u) << c.target;
    EXPECT_GT(c.ops_per_sec, 0) << c.target;
    EXPECT_GT(c.cpu_us_per_op, 0) << c.target;
  }
  EXPECT_GE(advice->ranked[0].ops_per_sec, advice->ranked[1].ops_per_sec);
  // Not an engine variant: refused by name, ranked last, the others still ran.
  EXPECT_EQ(advice->ranked[2].target, "rocksdb");
  EXPECT_EQ(advice->ranked[2].status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(advice->config.find("variant: " + advice->ranked[0].variant), std::string::npos);
  EXPECT_NE(advice->why.find(advice->ranked[0].target), std::string::npos);
  EXPECT_FALSE(said.empty());
  // Every candidate's database is gone.
  for (const auto& e : std::filesystem::directory_iterator(o.dir)) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

TEST(AdvisorTest, LoadsTheRecordsOfABackupAndReplaysExactKeys) {
  testing::TempDir dir;
  // A database holding the trace's keys, and its backup.
  {
    Options opts;
    opts.data_dir = dir.Sub("db");
    opts.cache_bytes = 4 << 20;
    opts.direct_io = false;
    opts.logger = NewNullLogger();
    auto db = Db::Open(opts);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (int k = 100000; k < 103000; ++k) {
      ASSERT_TRUE((*db)->Put("order:" + std::to_string(k), std::string(64, 'v')).ok());
    }
    BackupInfo info;
    ASSERT_TRUE((*db)->Backup(dir.Sub("backup"), BackupOptions(), &info).ok());
    ASSERT_TRUE((*db)->Close().ok());
  }
  WriteTrace(dir.Sub("w.trace"), 300);
  AdvisorOptions o = SmallRun(dir);
  o.backup = dir.Sub("backup");
  o.candidates = {"embedded:hln", "embedded:btree"};
  auto advice = Advise(o, nullptr);
  ASSERT_TRUE(advice.ok()) << advice.status().ToString();
  EXPECT_EQ(advice->records, 3000u);
  EXPECT_EQ(advice->replay.keys, "exact");
  for (const CandidateResult& c : advice->ranked) {
    EXPECT_TRUE(c.status.ok()) << c.target << ": " << c.status.ToString();
    EXPECT_EQ(c.ops, 300u);
  }
  EXPECT_FALSE(std::filesystem::exists(o.dir + "/source"));
}

TEST(AdvisorTest, WarmsUpAndRepeatsTheTraceUntilItHasRunLongEnough) {
  testing::TempDir dir;
  WriteTrace(dir.Sub("w.trace"), 200);
  AdvisorOptions o = SmallRun(dir);
  o.candidates = {"embedded:btree"};
  o.warmup_seconds = 0.05;
  o.min_seconds = 1;  // many passes of a 200-call trace
  auto advice = Advise(o, nullptr);
  ASSERT_TRUE(advice.ok()) << advice.status().ToString();
  const CandidateResult& c = advice->ranked[0];
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_GT(c.warmup_seconds, 0);
  EXPECT_GT(c.loops, 1u);
  // Only the measured passes count, each the whole trace.
  EXPECT_EQ(c.ops, 200u * c.loops);

  o.warmup_seconds = 0;  // nothing to time a pass by: exactly --loops
  o.loops = 3;
  advice = Advise(o, nullptr);
  ASSERT_TRUE(advice.ok()) << advice.status().ToString();
  EXPECT_EQ(advice->ranked[0].loops, 3u);
  EXPECT_EQ(advice->ranked[0].ops, 600u);
  EXPECT_EQ(advice->ranked[0].warmup_seconds, 0);
}

TEST(AdvisorTest, MeasuresInSlicesTakenInTurnsWithEveryCandidateOpen) {
  testing::TempDir dir;
  WriteTrace(dir.Sub("w.trace"), 300);
  AdvisorOptions o = SmallRun(dir);
  o.candidates = {"embedded:btree", "embedded:aha", "embedded:nosuchvariant"};
  o.warmup_seconds = 0;
  o.loops = 6;
  o.slices = 4;
  std::vector<std::string> said;
  auto advice = Advise(o, [&](const std::string& line) { said.push_back(line); });
  ASSERT_TRUE(advice.ok()) << advice.status().ToString();
  EXPECT_TRUE(advice->interleaved) << "two budgets of 4 MiB fit in half of any test machine";
  for (size_t i = 0; i < 2; ++i) {
    const CandidateResult& c = advice->ranked[i];
    ASSERT_TRUE(c.status.ok()) << c.target << ": " << c.status.ToString();
    EXPECT_EQ(c.loops, 6u);
    EXPECT_EQ(c.ops, 6u * 300) << "every pass measured once, whole";
    ASSERT_EQ(c.slice_ops_per_sec.size(), 4u) << "passes 2, 2, 1, 1";
    for (double r : c.slice_ops_per_sec) EXPECT_GT(r, 0);
    EXPECT_GT(c.cpu_us_per_op, 0);
  }
  EXPECT_FALSE(advice->ranked[2].status.ok()) << "a bad candidate fails alone";
  bool told = false;
  for (const auto& line : said) told |= line.find("taken in turns") != std::string::npos;
  EXPECT_TRUE(told);
  for (const auto& e : std::filesystem::directory_iterator(o.dir)) {
    ADD_FAILURE() << "left behind: " << e.path();
  }

  o.slices = 1;  // one after another, each in one piece
  advice = Advise(o, nullptr);
  ASSERT_TRUE(advice.ok()) << advice.status().ToString();
  EXPECT_FALSE(advice->interleaved);
  EXPECT_EQ(advice->ranked[0].slice_ops_per_sec.size(), 1u);
  EXPECT_EQ(advice->ranked[0].ops, 6u * 300);
}

TEST(AdvisorTest, RefusesWhatCannotRun) {
  testing::TempDir dir;
  AdvisorOptions o = SmallRun(dir);
  o.trace = dir.Sub("missing.trace");
  EXPECT_FALSE(Advise(o, nullptr).ok());
  WriteTrace(dir.Sub("w.trace"), 50);
  o = SmallRun(dir);
  o.candidates = {"embedded:nosuchvariant"};
  auto advice = Advise(o, nullptr);
  EXPECT_FALSE(advice.ok());
  EXPECT_NE(advice.status().message().find("no candidate ran"), std::string::npos)
      << advice.status().ToString();
}

}  // namespace
}  // namespace grove::bench
