#include "bench/workload.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace grove::bench {
namespace {

const std::string kWorkloadDir = std::string(GROVE_SOURCE_DIR) + "/config/workloads";

void ExpectSamePhases(const WorkloadSpec& a, const WorkloadSpec& b) {
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (size_t i = 0; i < a.phases.size(); ++i) {
    const PhaseSpec& p = a.phases[i];
    const PhaseSpec& q = b.phases[i];
    EXPECT_EQ(p.mix, q.mix);
    EXPECT_EQ(p.distribution.kind, q.distribution.kind);
    EXPECT_EQ(p.distribution.theta, q.distribution.theta);
    EXPECT_EQ(p.distribution.scrambled, q.distribution.scrambled);
    EXPECT_EQ(p.scan.kind, q.scan.kind);
    EXPECT_EQ(p.scan.min, q.scan.min);
    EXPECT_EQ(p.scan.max, q.scan.max);
    EXPECT_EQ(p.scan.width, q.scan.width);
    EXPECT_EQ(p.ops, q.ops);
    EXPECT_EQ(p.seconds, q.seconds);
  }
}

TEST(WorkloadTest, ShippedYcsbFilesEqualTheBuiltins) {
  for (const char* w : {"a", "b", "c", "d", "e", "f"}) {
    SCOPED_TRACE(w);
    auto file = LoadWorkloadFile(kWorkloadDir + "/ycsb-" + w + ".yaml");
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto builtin = BuiltinWorkload(w);
    ASSERT_TRUE(builtin.ok());
    EXPECT_EQ(file->description, builtin->description);
    ExpectSamePhases(*file, *builtin);
  }
}

TEST(WorkloadTest, EveryShippedFileIsValid) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kWorkloadDir)) {
    if (entry.path().extension() != ".yaml") continue;
    auto w = LoadWorkloadFile(entry.path().string());
    EXPECT_TRUE(w.ok()) << entry.path() << ": " << w.status().ToString();
    ++files;
  }
  EXPECT_GE(files, 10);
}

TEST(WorkloadTest, RepeatAndPhaseFields) {
  auto w = ParseWorkloadYaml(R"(
name: osc
repeat: 2
phases:
  - name: hot
    mix: {scan: 0.9, update: 0.1}
    distribution: {kind: hotspot, data_fraction: 0.01, op_fraction: 0.95, start: 0.25}
    scan: {width: 1000}
    duration: 5
  - name: cold
    mix: {read: 1}
    distribution: {kind: zipfian, theta: 0.8, scrambled: false}
    scan: {length: zipfian, min: 2, max: 20}
    ops: 100
)",
                             "test");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->phases.size(), 4u);
  EXPECT_EQ(w->phases[2].name, "hot");
  const auto& hot = w->phases[0];
  EXPECT_EQ(hot.distribution.kind, DistributionSpec::Kind::kHotspot);
  EXPECT_DOUBLE_EQ(hot.distribution.hot_data_fraction, 0.01);
  EXPECT_DOUBLE_EQ(hot.distribution.hot_op_fraction, 0.95);
  EXPECT_DOUBLE_EQ(hot.distribution.hot_start, 0.25);
  EXPECT_EQ(hot.scan.width, 1000u);
  EXPECT_DOUBLE_EQ(hot.seconds, 5);
  const auto& cold = w->phases[1];
  EXPECT_FALSE(cold.distribution.scrambled);
  EXPECT_DOUBLE_EQ(cold.distribution.theta, 0.8);
  EXPECT_EQ(cold.scan.kind, ScanSpec::Kind::kZipfian);
  EXPECT_EQ(cold.ops, 100u);
}

TEST(WorkloadTest, ErrorsNameTheField) {
  struct Case {
    const char* yaml;
    const char* expect;
  };
  const Case cases[] = {
      {"phases: [{mix: {read: 0.5}}]", "sum to"},
      {"phases: [{mix: {read: 1}, distribution: pareto}]", "phases[0].distribution"},
      {"phases: [{mix: {reed: 1}}]", "'reed'"},
      {"phases: [{mix: {read: 1}, ops: 5, duration: 2}]", "not both"},
      {"phases: [{mix: {read: 1}, colour: red}]", "unknown field 'colour'"},
      {"phases: [{mix: {scan: 1}, scan: {min: 10, max: 5}}]", "min <= max"},
      {"phases: [{mix: {read: 1}, distribution: {kind: zipfian, theta: 1.0}}]", "theta"},
      {"phases: [{mix: {read: 1}", "test"},
  };
  for (const Case& c : cases) {
    auto w = ParseWorkloadYaml(c.yaml, "test");
    ASSERT_FALSE(w.ok()) << c.yaml;
    EXPECT_NE(w.status().message().find(c.expect), std::string::npos)
        << c.yaml << " -> " << w.status().ToString();
  }
}

TEST(WorkloadTest, BuiltinNames) {
  EXPECT_TRUE(IsBuiltinWorkload("load"));
  EXPECT_TRUE(IsBuiltinWorkload("E"));
  EXPECT_FALSE(IsBuiltinWorkload("g"));
  EXPECT_TRUE(BuiltinWorkload("load")->is_load);
  EXPECT_FALSE(BuiltinWorkload("x").ok());
  EXPECT_EQ(BuiltinWorkload("d")->phases[0].distribution.kind, DistributionSpec::Kind::kLatest);
}

}  // namespace
}  // namespace grove::bench
