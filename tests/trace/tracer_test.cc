// Tracer: one trace at a time, started and stopped by name, sampled at the fraction asked,
// ended by its duration, and every record it kept readable from the file.

#include "trace/tracer.h"

#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace grove::trace {
namespace {

using namespace std::chrono_literals;

Record GetOf(const std::string& key) {
  Record r;
  r.op = Op::kGet;
  r.entries.push_back({key, false, 0});
  return r;
}

std::vector<Record> ReadAll(const std::string& path) {
  std::vector<Record> out;
  auto reader = TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return out;
  Record r;
  for (;;) {
    auto more = (*reader)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(r);
  }
  return out;
}

TEST(TracerTest, StartsStopsAndKeepsWhatWasAdded) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 20});
  EXPECT_FALSE(tracer.Sampled()) << "nothing is sampled while no trace runs";
  EXPECT_EQ(tracer.Stop().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(tracer.Start({1.0, 0ms, "first"}).ok());
  EXPECT_EQ(tracer.Start({1.0, 0ms, "second"}).code(), StatusCode::kFailedPrecondition);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(tracer.Sampled()) << "sample 1 takes every call";
    tracer.Add(GetOf("k" + std::to_string(i)));
  }
  TraceStatus st = tracer.GetStatus();
  EXPECT_TRUE(st.active);
  EXPECT_EQ(st.records_written, 100u);
  EXPECT_EQ(st.path, dir.Sub("traces") + "/first.trace");
  ASSERT_TRUE(tracer.Stop().ok());
  EXPECT_FALSE(tracer.Sampled());
  tracer.Add(GetOf("late"));  // dropped silently: no trace runs
  st = tracer.GetStatus();
  EXPECT_FALSE(st.active);
  EXPECT_EQ(st.ended_because, "stopped");
  EXPECT_EQ(st.records_written, 100u);
  const std::vector<Record> back = ReadAll(st.path);
  ASSERT_EQ(back.size(), 100u);
  EXPECT_EQ(back[99].entries[0].key, "k99");
  for (size_t i = 1; i < back.size(); ++i) EXPECT_GE(back[i].micros, back[i - 1].micros);
  EXPECT_EQ(tracer.records_written_total(), 100u);
  // The name is taken now: a new trace needs another.
  EXPECT_EQ(tracer.Start({1.0, 0ms, "first"}).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(tracer.Start({1.0, 0ms, "again"}).ok());
}

TEST(TracerTest, HashedKeysKeepTheirOrder) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 20});
  TraceRequest request{1.0, 0ms, "hashed"};
  request.hash_keys = true;
  ASSERT_TRUE(tracer.Start(request).ok());
  EXPECT_TRUE(tracer.GetStatus().keys_hashed);
  for (const char* k : {"carol", "alice", "bob", "alice"}) tracer.Add(GetOf(k));
  ASSERT_TRUE(tracer.Stop().ok());
  auto reader = TraceReader::Open(dir.Sub("traces") + "/hashed.trace");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->header().flags, header_flags::kKeysHashed);
  const std::vector<Record> got = ReadAll(dir.Sub("traces") + "/hashed.trace");
  ASSERT_EQ(got.size(), 4u);
  const std::string carol = got[0].entries[0].key, alice = got[1].entries[0].key,
                    bob = got[2].entries[0].key;
  EXPECT_EQ(alice, got[3].entries[0].key);
  EXPECT_LT(alice, bob);
  EXPECT_LT(bob, carol);
  EXPECT_EQ(alice.find("alice"), std::string::npos);
  // A trace without hashing writes keys as they are.
  ASSERT_TRUE(tracer.Start({1.0, 0ms, "plain"}).ok());
  EXPECT_FALSE(tracer.GetStatus().keys_hashed);
  tracer.Add(GetOf("alice"));
  ASSERT_TRUE(tracer.Stop().ok());
  EXPECT_EQ(ReadAll(dir.Sub("traces") + "/plain.trace")[0].entries[0].key, "alice");
}

TEST(TracerTest, TheKeySketchIsHashedWithTheKeys) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 20});
  KeySketch sketch;
  sketch.bounds = {"alice", "bob", "carol"};
  sketch.counts = {10, 20};
  TraceRequest request{1.0, 0ms, "sketched"};
  request.hash_keys = true;
  request.sketch = sketch;
  ASSERT_TRUE(tracer.Start(request).ok());
  EXPECT_EQ(tracer.GetStatus().sketch_keys, 30u);
  tracer.Add(GetOf("bob"));
  ASSERT_TRUE(tracer.Stop().ok());
  auto reader = TraceReader::Open(dir.Sub("traces") + "/sketched.trace");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->header().flags, header_flags::kKeysHashed | header_flags::kKeySketch);
  const KeySketch* got = (*reader)->sketch();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->counts, sketch.counts);
  ASSERT_EQ(got->bounds.size(), 3u);
  EXPECT_LT(got->bounds[0], got->bounds[1]);
  EXPECT_LT(got->bounds[1], got->bounds[2]);
  EXPECT_EQ(got->bounds[0].find("alice"), std::string::npos);
  // The bound and the traced key went through the same hasher.
  const std::vector<Record> records = ReadAll(dir.Sub("traces") + "/sketched.trace");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].entries[0].key, got->bounds[1]);
}

TEST(TracerTest, BadRequestsNameTheField) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 20});
  for (double sample : {0.0, -0.5, 1.5, 1e-7}) {
    const Status s = tracer.Start({sample, 0ms, "t"});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().rfind("sample:", 0), 0u) << s.ToString();
  }
  for (const char* name : {"", "../escape", "a/b", ".hidden", "with space"}) {
    const Status s = tracer.Start({0.5, 0ms, name});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(s.message().rfind("name:", 0), 0u) << s.ToString();
  }
  EXPECT_EQ(tracer.Start({0.5, -1ms, "t"}).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("escape.trace")));
}

TEST(TracerTest, SamplesTheFractionAsked) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 20});
  ASSERT_TRUE(tracer.Start({0.1, 0ms, "t"}).ok());
  constexpr int kCalls = 200'000;
  int sampled = 0;
  for (int i = 0; i < kCalls; ++i) sampled += tracer.Sampled() ? 1 : 0;
  // Binomial(200000, 0.1): mean 20000, sd 134; 6 sd either side.
  EXPECT_NEAR(sampled, 20'000, 800);
  EXPECT_NEAR(tracer.GetStatus().sample, 0.1, 1e-9);
}

TEST(TracerTest, ATraceEndsWhenItsDurationPasses) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 20});
  ASSERT_TRUE(tracer.Start({1.0, 50ms, "short"}).ok());
  tracer.Add(GetOf("a"));
  std::this_thread::sleep_for(100ms);
  tracer.Add(GetOf("b"));  // after the end: not kept
  const TraceStatus st = tracer.GetStatus();
  EXPECT_FALSE(st.active);
  EXPECT_EQ(st.ended_because, "duration");
  EXPECT_EQ(ReadAll(st.path).size(), 1u);
  EXPECT_EQ(tracer.Stop().code(), StatusCode::kFailedPrecondition);
}

TEST(TracerTest, TheCapDropsAndCounts) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 2048});
  ASSERT_TRUE(tracer.Start({1.0, 0ms, "capped"}).ok());
  for (int i = 0; i < 1000; ++i) tracer.Add(GetOf(std::string(40, 'k')));
  const TraceStatus running = tracer.GetStatus();
  EXPECT_GT(running.records_dropped, 0u);
  EXPECT_EQ(running.records_written + running.records_dropped, 1000u);
  EXPECT_EQ(tracer.records_dropped_total(), running.records_dropped);
  ASSERT_TRUE(tracer.Stop().ok());
  EXPECT_LE(std::filesystem::file_size(running.path), 2048u);
  EXPECT_EQ(ReadAll(running.path).size(), running.records_written);
}

TEST(TracerTest, ConcurrentCallersLoseNothing) {
  testing::TempDir dir;
  Tracer tracer({dir.Sub("traces"), 1 << 24});
  ASSERT_TRUE(tracer.Start({1.0, 0ms, "busy"}).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (tracer.Sampled()) tracer.Add(GetOf(std::to_string(t) + ":" + std::to_string(i)));
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string path = tracer.GetStatus().path;
  ASSERT_TRUE(tracer.Stop().ok());
  EXPECT_EQ(ReadAll(path).size(), 8000u);
}

}  // namespace
}  // namespace grove::trace
