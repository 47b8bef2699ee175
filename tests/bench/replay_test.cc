// Trace replay: what LoadReplay makes of a trace (which calls, which keys, which op types) and what
// Runner::RunReplay does with it against a real engine.

#include "bench/replay.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/key_set.h"
#include "bench/key_space.h"
#include "bench/runner.h"
#include "bench/target.h"
#include "bench/value_gen.h"
#include "testutil/temp_dir.h"
#include "trace/key_sketch.h"
#include "trace/trace_file.h"

namespace grove::bench {
namespace {

constexpr uint8_t kOk = 0;
constexpr uint8_t kInvalidArgument = 3;
constexpr uint8_t kFailedPrecondition = 9;

trace::Record Rec(trace::Op op, std::vector<std::string> keys, uint64_t micros = 0) {
  trace::Record r;
  r.op = op;
  r.micros = micros;
  for (std::string& k : keys) r.entries.push_back({std::move(k), false, 0});
  return r;
}

trace::Record Get(const std::string& key, bool found, uint64_t micros = 0) {
  trace::Record r = Rec(trace::Op::kGet, {key}, micros);
  r.result = found ? 1 : 0;
  return r;
}

trace::Record Put(const std::string& key, uint32_t value_bytes, uint64_t micros = 0) {
  trace::Record r = Rec(trace::Op::kPut, {key}, micros);
  r.entries[0].has_value = true;
  r.entries[0].value_size = value_bytes;
  return r;
}

void WriteTrace(const std::string& path, const std::vector<trace::Record>& records) {
  trace::Header h;
  h.sample_ppm = 10'000;
  auto w = trace::TraceWriter::Create(path, h, 1 << 30);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (const trace::Record& r : records) ASSERT_TRUE((*w)->Add(r).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

std::vector<uint64_t> Loaded(uint64_t n, uint64_t step) {
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < n; ++i) keys.push_back(1000 + i * step);
  return keys;
}

TEST(ReplayTest, ExactKeysKeepEveryCallThatReachedTheEngine) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  std::vector<trace::Record> records;
  records.push_back(Get("apple", true, 5));
  records.push_back(Put("pear", 300, 9));
  trace::Record cas = Put("pear", 40, 12);
  cas.flags =
      trace::record_flags::kPrecondition | (3 << trace::record_flags::kPreconditionKindShift);
  cas.code = kFailedPrecondition;  // not applied: replayed as its read only
  records.push_back(cas);
  trace::Record bad = Put("", 1, 13);
  bad.code = kInvalidArgument;  // never reached the engine
  records.push_back(bad);
  records.push_back(Rec(trace::Op::kDelete, {"apple"}, 20));
  trace::Record batch_get = Rec(trace::Op::kBatchGet, {"a", "b", "c"}, 21);
  batch_get.result = 2;
  records.push_back(batch_get);
  trace::Record batch = Rec(trace::Op::kBatchInsert, {"x", "y"}, 22);
  batch.entries[0].has_value = true;
  batch.entries[0].value_size = 7;
  records.push_back(batch);
  trace::Record range = Rec(trace::Op::kDeleteRange, {"m", ""}, 30);
  range.arg = 0;  // the server's most: the count it deleted stands in
  range.result = 17;
  records.push_back(range);
  trace::Record scan = Rec(trace::Op::kScan, {"b", "q"}, 31);
  scan.arg = 50;
  scan.result = 12;
  scan.flags = trace::record_flags::kReverse;
  records.push_back(scan);
  WriteTrace(path, records);

  ReplayOptions options;
  options.keys = ReplayOptions::Keys::kExact;
  auto plan = LoadReplay(path, options, {});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->traced_records, 9u);
  EXPECT_EQ(plan->skipped, 1u);
  EXPECT_EQ(plan->header.sample_ppm, 10'000u);
  EXPECT_EQ(plan->max_value_bytes, 300u);
  ASSERT_EQ(plan->ops.size(), 8u);
  const std::vector<ReplayOp>& ops = plan->ops;
  EXPECT_EQ(ops[0].type, OpType::kRead);
  EXPECT_EQ(ops[0].keys, std::vector<std::string>{"apple"});
  EXPECT_EQ(ops[0].micros, 5u);
  EXPECT_EQ(ops[1].type, OpType::kUpdate);  // a key first seen written is taken to exist
  EXPECT_EQ(ops[1].values, std::vector<int64_t>{300});
  EXPECT_TRUE(ops[2].conditional);
  EXPECT_FALSE(ops[2].apply);
  EXPECT_EQ(ops[3].type, OpType::kDelete);
  EXPECT_EQ(ops[4].type, OpType::kBatchRead);
  EXPECT_EQ(ops[4].keys.size(), 3u);
  EXPECT_EQ(ops[5].type, OpType::kBatchWrite);
  EXPECT_EQ(ops[5].values, (std::vector<int64_t>{7, -1}));
  EXPECT_EQ(ops[6].type, OpType::kDeleteRange);
  EXPECT_EQ(ops[6].keys, std::vector<std::string>{"m"});
  EXPECT_EQ(ops[6].end, "");
  EXPECT_EQ(ops[6].limit, 17u);
  EXPECT_EQ(ops[7].type, OpType::kScan);
  EXPECT_TRUE(ops[7].reverse);
  EXPECT_EQ(ops[7].limit, 50u);
  EXPECT_EQ(ops[7].end, "q");
}

TEST(ReplayTest, ScaledKeysKeepOrderAndRepeatsAndMissesStayMisses) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  std::vector<trace::Record> records;
  // Five distinct keys onto ten loaded ones: each keeps a key of its own, in order.
  for (const char* k : {"k3", "k1", "k5", "k2", "k1"}) records.push_back(Get(k, true));
  records.push_back(Get("k4", false));  // first seen missing: it stays absent ...
  records.push_back(Put("k4", 10));     // ... until this insert
  records.push_back(Get("k4", true));
  records.push_back(Put("k4", 10));  // the second put is an update
  trace::Record scan = Rec(trace::Op::kScan, {"k2", "k5"});
  scan.arg = 10;
  records.push_back(scan);
  WriteTrace(path, records);

  const std::vector<uint64_t> loaded = Loaded(10, 100);
  auto plan = LoadReplay(path, ReplayOptions(), loaded);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->distinct_keys, 5u);
  EXPECT_EQ(plan->absent_keys, 1u);
  const std::vector<ReplayOp>& ops = plan->ops;
  auto is_loaded = [&](const std::string& k) {
    return k.size() == 8 && std::binary_search(loaded.begin(), loaded.end(), DecodeKey(k));
  };
  // k1 < k2 < k3 < k5 keep that order on distinct loaded keys; k1 twice is one key.
  const std::string k1 = ops[1].keys[0], k2 = ops[3].keys[0], k3 = ops[0].keys[0],
                    k5 = ops[2].keys[0];
  for (const std::string& k : {k1, k2, k3, k5}) EXPECT_TRUE(is_loaded(k));
  EXPECT_LT(k1, k2);
  EXPECT_LT(k2, k3);
  EXPECT_LT(k3, k5);
  EXPECT_EQ(ops[4].keys[0], k1);
  // k4 goes between k3 and k5, onto no loaded key.
  const std::string k4 = ops[5].keys[0];
  EXPECT_FALSE(is_loaded(k4));
  EXPECT_GT(k4, k3);
  EXPECT_LT(k4, k5);
  EXPECT_EQ(ops[6].keys[0], k4);
  EXPECT_EQ(ops[6].type, OpType::kInsert);
  EXPECT_EQ(ops[8].type, OpType::kUpdate);
  // Scan bounds map like keys.
  EXPECT_EQ(ops[9].keys[0], k2);
  EXPECT_EQ(ops[9].end, k5);
}

TEST(ReplayTest, ScaledKeysMergeNeighboursWhenTheReplayDatabaseIsSmaller) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  std::vector<trace::Record> records;
  for (int i = 0; i < 100; ++i) {
    char k[8];
    std::snprintf(k, sizeof(k), "k%03d", (i * 37) % 100);
    records.push_back(Get(k, true));
  }
  WriteTrace(path, records);
  const std::vector<uint64_t> loaded = Loaded(10, 1);
  auto plan = LoadReplay(path, ReplayOptions(), loaded);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Monotone: sorting by traced key sorts the replay keys too; ten traced keys share each one.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < records.size(); ++i) {
    pairs.emplace_back(records[i].entries[0].key, plan->ops[i].keys[0]);
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<std::string> mapped;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i > 0) EXPECT_LE(pairs[i - 1].second, pairs[i].second);
    mapped.push_back(pairs[i].second);
  }
  mapped.erase(std::unique(mapped.begin(), mapped.end()), mapped.end());
  EXPECT_EQ(mapped.size(), loaded.size());
}

// A trace of a hot range (the first 0.1% of a million keys) that carries its database's key
// sketch: keys synthesised from the trace (key set trace:PATH) follow the database, so the hot
// range keeps its 0.1% of them, and projected keys replay onto that 0.1%; scaled keys, which
// know only the keys the trace named, spread the hot range over every loaded key.
TEST(ReplayTest, ProjectedKeysKeepAHotRangeItsShareOfTheKeys) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  auto key = [](uint64_t v) { return EncodeKey(v); };
  trace::KeySketch sketch;
  constexpr uint64_t kCells = 100, kKeys = 1'000'000;
  for (uint64_t i = 0; i <= kCells; ++i)
    sketch.bounds.push_back(key(std::min(i * kKeys / kCells, kKeys - 1)));
  sketch.counts.assign(kCells, kKeys / kCells);
  std::vector<trace::Record> records;
  for (uint64_t i = 0; i < 1000; i += 10) records.push_back(Get(key(i), true));
  records.push_back(Get(key(505), false));  // a key the database did not hold ...
  records.push_back(Put(key(505), 10));     // ... inserted
  trace::Record scan = Rec(trace::Op::kScan, {key(200), key(300)});
  scan.arg = 5;
  records.push_back(scan);
  {
    trace::Header h;
    h.sample_ppm = 10'000;
    auto w = trace::TraceWriter::Create(path, h, 1 << 30, trace::kDefaultBlockBytes, &sketch);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (const trace::Record& r : records) ASSERT_TRUE((*w)->Add(r).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto shape = ReadTraceShape(path);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->sketch_keys, kKeys);
  EXPECT_EQ(shape->sketch_counts.size(), kCells);

  auto spec = ParseKeySetSpec("trace:" + path);
  ASSERT_TRUE(spec.ok());
  auto keys = MakeKeySet(*spec, 20'000, 1);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 20'000u);
  std::vector<uint64_t> loaded = *keys;
  std::sort(loaded.begin(), loaded.end());
  // The hot range's upper end, projected: the loaded keys below it are about 0.1% of them.
  const uint64_t hot_end = shape->Place(key(1000));
  const auto in_hot =
      static_cast<size_t>(std::lower_bound(loaded.begin(), loaded.end(), hot_end) - loaded.begin());
  EXPECT_GT(in_hot, 5u);
  EXPECT_LT(in_hot, 60u);

  ReplayOptions projected;
  projected.keys = ReplayOptions::Keys::kProjected;
  auto plan = LoadReplay(path, projected, loaded);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->ops.size(), records.size());
  std::set<std::string> hot;
  for (size_t i = 0; i < 100; ++i) {
    const std::string& k = plan->ops[i].keys[0];
    ASSERT_EQ(k.size(), 8u);
    EXPECT_TRUE(std::binary_search(loaded.begin(), loaded.end(), DecodeKey(k)));
    EXPECT_LE(DecodeKey(k), loaded[in_hot]);  // the loaded key nearest the hot range at most
    hot.insert(k);
  }
  EXPECT_GE(hot.size(), in_hot / 2);
  // The missing key replays absent, in its place, and its put is an insert.
  const std::string absent = plan->ops[100].keys[0];
  EXPECT_EQ(absent, EncodeKey(shape->Place(key(505))) + std::string(1, '\0'));
  EXPECT_EQ(plan->ops[101].keys[0], absent);
  EXPECT_EQ(plan->ops[101].type, OpType::kInsert);
  // Scan bounds are their projections.
  EXPECT_EQ(plan->ops[102].keys[0], EncodeKey(shape->Place(key(200))));
  EXPECT_EQ(plan->ops[102].end, EncodeKey(shape->Place(key(300))));

  // By rank, the hundred traced keys spread over the whole loaded range.
  auto scaled = LoadReplay(path, ReplayOptions(), loaded);
  ASSERT_TRUE(scaled.ok());
  EXPECT_GT(DecodeKey(scaled->ops[99].keys[0]), loaded[loaded.size() / 2]);
}

// Keys under several prefixes (two "tables"): a key's place is its cell's, found by comparing it
// with the sketch's bounds, and its fraction of that cell, so each table keeps its share of the
// places whatever its prefix, and places keep the keys' order.
TEST(ReplayTest, PlacesFollowTheSketchsCellsWhateverTheKeysLookLike) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  auto order = [](uint64_t i) { return "order:" + EncodeKey(i); };
  auto user = [](uint64_t i) { return "user:" + EncodeKey(i); };
  trace::KeySketch sketch;
  sketch.bounds = {order(0), order(25'000), user(0), user(59'997)};
  sketch.counts = {25'000, 25'000, 20'000};
  {
    trace::Header h;
    auto w = trace::TraceWriter::Create(path, h, 1 << 30, trace::kDefaultBlockBytes, &sketch);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add(Get(order(7), true)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto shape = ReadTraceShape(path);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  ASSERT_EQ(shape->cell_bits, 2);
  const uint64_t w = uint64_t{1} << 62;
  EXPECT_EQ(shape->Place(order(0)), 0u);
  EXPECT_NEAR(static_cast<double>(shape->Place(order(12'500))), 0.5 * static_cast<double>(w),
              0.01 * static_cast<double>(w));
  EXPECT_NEAR(static_cast<double>(shape->Place(user(30'000))), 2.5 * static_cast<double>(w),
              0.01 * static_cast<double>(w));
  EXPECT_EQ(shape->Place("aaa"), 0u);               // before the first key
  EXPECT_EQ(shape->Place("zzz"), 2 * w + (w - 1));  // after the last key: its cell's end
  const std::vector<std::string> keys = {"aaa", order(1), order(30'000), "order;", user(5), "zzz"};
  for (size_t i = 1; i < keys.size(); ++i) {
    EXPECT_LE(shape->Place(keys[i - 1]), shape->Place(keys[i])) << i;
  }
  // Synthesised keys: the order table holds 50,000 of the 70,000 counted, so about 5/7 of them.
  auto spec = ParseKeySetSpec("trace:" + path);
  ASSERT_TRUE(spec.ok());
  auto set = MakeKeySet(*spec, 7'000, 3);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  const auto in_orders =
      std::count_if(set->begin(), set->end(), [&](uint64_t v) { return v < 2 * w; });
  EXPECT_NEAR(static_cast<double>(in_orders), 5'000, 250);
  EXPECT_EQ(std::count_if(set->begin(), set->end(), [&](uint64_t v) { return v >= 3 * w; }), 0);
}

// Passes after the first replace the keys the trace named once (they stand for the many keys
// the workload touched about once, which a repeated pass must not find cached) and keep the keys
// it repeats; an absent key becomes a new absent key per pass.
TEST(ReplayTest, PassesAfterTheFirstVaryTheKeysNamedOnce) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  std::vector<trace::Record> records = {Get("a", true), Get("b", true), Get("b", true),
                                        Get("z", false)};
  trace::Record open_scan = Rec(trace::Op::kScan, {"m", ""});
  open_scan.arg = 5;
  records.push_back(open_scan);
  trace::Record bounded = Rec(trace::Op::kScan, {"p", "q"});
  bounded.arg = 5;
  records.push_back(bounded);
  WriteTrace(path, records);
  const std::vector<uint64_t> loaded = Loaded(1000, 10);
  auto plan = LoadReplay(path, ReplayOptions(), loaded);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const auto& ops = plan->ops;
  EXPECT_EQ(plan->varied_keys, 3u);  // a, z and the open scan's start
  std::vector<std::string> scratch;
  auto is_loaded = [&](const std::string& k) {
    return k.size() == 8 && std::binary_search(loaded.begin(), loaded.end(), DecodeKey(k));
  };
  // Pass 0 is the trace's own keys.
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(&PassKeys(*plan, ops[i], i, 0, &scratch), &ops[i].keys);
  }
  // "b" (named twice) and the bounded scan never vary.
  for (uint64_t pass = 1; pass < 20; ++pass) {
    EXPECT_EQ(PassKeys(*plan, ops[1], 1, pass, &scratch), ops[1].keys);
    EXPECT_EQ(PassKeys(*plan, ops[5], 5, pass, &scratch), ops[5].keys);
  }
  // "a" moves among loaded keys near its own, differently in different passes.
  std::set<std::string> a_keys;
  for (uint64_t pass = 1; pass < 20; ++pass) {
    const std::string k = PassKeys(*plan, ops[0], 0, pass, &scratch)[0];
    EXPECT_TRUE(is_loaded(k)) << pass;
    EXPECT_LE(k, ops[1].keys[0]) << "stays in the neighbourhood, before b's";
    a_keys.insert(k);
  }
  EXPECT_GT(a_keys.size(), 5u);
  // "z", missing, becomes a key no load wrote, new in every pass.
  std::set<std::string> z_keys;
  for (uint64_t pass = 1; pass < 20; ++pass) {
    const std::string k = PassKeys(*plan, ops[3], 3, pass, &scratch)[0];
    EXPECT_FALSE(is_loaded(k));
    z_keys.insert(k);
  }
  EXPECT_EQ(z_keys.size(), 19u);
  // A replay of exact keys varies nothing.
  ReplayOptions exact;
  exact.keys = ReplayOptions::Keys::kExact;
  auto plain = LoadReplay(path, exact, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->varied_keys, 0u);
  EXPECT_EQ(PassKeys(*plain, plain->ops[0], 0, 7, &scratch), plain->ops[0].keys);
}

TEST(ReplayTest, RefusesWhatCannotBeReplayed) {
  testing::TempDir dir;
  EXPECT_FALSE(LoadReplay(dir.Sub("missing.trace"), ReplayOptions(), Loaded(3, 1)).ok());
  const std::string failed_only = dir.Sub("failed.trace");
  trace::Record bad = Get("a", false);
  bad.code = kInvalidArgument;
  WriteTrace(failed_only, {bad});
  auto plan = LoadReplay(failed_only, ReplayOptions(), Loaded(3, 1));
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  const std::string ok = dir.Sub("ok.trace");
  WriteTrace(ok, {Get("a", true)});
  // Hashed keys exist in no database: only scaled keys replay them.
  const std::string hashed = dir.Sub("hashed.trace");
  {
    trace::Header h;
    h.flags = trace::header_flags::kKeysHashed;
    auto w = trace::TraceWriter::Create(hashed, h, 1 << 20);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add(Get("a", true)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  ReplayOptions exact;
  exact.keys = ReplayOptions::Keys::kExact;
  plan = LoadReplay(hashed, exact, {});
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("hashed"), std::string::npos);
  EXPECT_TRUE(LoadReplay(hashed, ReplayOptions(), Loaded(3, 1)).ok());
  // Scaled keys need loaded data to map onto.
  plan = LoadReplay(ok, ReplayOptions(), {});
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("load"), std::string::npos);
}

// A target that only writes down what it is asked, so that a replay's calls can be compared
// with the trace's.
class RecordingTarget final : public Target {
 public:
  class RecordingSession final : public Session {
   public:
    explicit RecordingSession(std::vector<std::string>* log) : log_(log) {}
    Status Read(Slice key, std::string*, bool* found) override {
      *found = true;
      return Log("get " + std::string(key));
    }
    Status Write(Slice key, Slice value) override {
      return Log("put " + std::string(key) + " " + std::to_string(value.size()));
    }
    Status Scan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
      *entries = 0;
      return Log("scan " + std::string(start) + " " + std::string(end) + " " +
                 std::to_string(limit));
    }
    Status ReverseScan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
      *entries = 0;
      return Log("rscan " + std::string(start) + " " + std::string(end) + " " +
                 std::to_string(limit));
    }
    Status Delete(Slice key) override { return Log("delete " + std::string(key)); }
    Status BatchRead(const std::vector<std::string>& keys, uint64_t* found) override {
      *found = keys.size();
      std::string line = "batch_get";
      for (const auto& k : keys) line += " " + k;
      return Log(line);
    }
    Status WriteMutations(const std::vector<Mutation>& m) override {
      std::string line = "batch";
      for (const auto& x : m) {
        line += " " + x.key + (x.is_delete ? ":del" : ":" + std::to_string(x.value.size()));
      }
      return Log(line);
    }
    Status DeleteRange(Slice start, Slice end, uint64_t limit, uint64_t* deleted) override {
      *deleted = 0;
      return Log("delete_range " + std::string(start) + " " + std::string(end) + " " +
                 std::to_string(limit));
    }

   private:
    Status Log(std::string line) {
      log_->push_back(std::move(line));
      return Status::Ok();
    }
    std::vector<std::string>* log_;
  };

  std::string Uri() const override { return "recording"; }
  std::map<std::string, std::string> Config() const override { return {}; }
  Status Reset() override { return Status::Ok(); }
  StatusOr<std::unique_ptr<Session>> NewSession() override {
    return std::unique_ptr<Session>(std::make_unique<RecordingSession>(&log));
  }
  StatusOr<TargetStats> Stats() override { return TargetStats(); }
  Status Close() override { return Status::Ok(); }

  std::vector<std::string> log;
};

// Replay equivalence: one thread, exact keys, and the calls issued are the trace's, in order,
// with their keys, value sizes, bounds and limits.
TEST(ReplayTest, IssuesTheTracedCallsInOrder) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t.trace");
  std::vector<trace::Record> records;
  records.push_back(Get("k1", true));
  records.push_back(Put("k2", 33));
  records.push_back(Rec(trace::Op::kDelete, {"k3"}));
  trace::Record bg = Rec(trace::Op::kBatchGet, {"k1", "k2"});
  bg.result = 2;
  records.push_back(bg);
  trace::Record bi = Rec(trace::Op::kBatchInsert, {"k4", "k5"});
  bi.entries[1].has_value = true;
  bi.entries[1].value_size = 9;
  records.push_back(bi);
  trace::Record dr = Rec(trace::Op::kDeleteRange, {"k6", "k8"});
  dr.arg = 4;
  records.push_back(dr);
  trace::Record sc = Rec(trace::Op::kScan, {"k0", "k9"});
  sc.arg = 7;
  records.push_back(sc);
  trace::Record rs = sc;
  rs.flags = trace::record_flags::kReverse;
  rs.arg = 0;
  rs.result = 3;
  records.push_back(rs);
  trace::Record cas = Put("k2", 5);  // applied: read, then write
  cas.flags =
      trace::record_flags::kPrecondition | (2 << trace::record_flags::kPreconditionKindShift);
  records.push_back(cas);
  trace::Record refused = cas;  // not applied: the read alone
  refused.code = kFailedPrecondition;
  records.push_back(refused);
  WriteTrace(path, records);

  ReplayOptions options;
  options.keys = ReplayOptions::Keys::kExact;
  auto plan = LoadReplay(path, options, {});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  RecordingTarget target;
  KeySpace space({}, 0);
  const ValueGen values(8, 8, 1);
  Runner runner(&target, &space, &values, RunSettings());
  auto run = runner.RunReplay(*plan);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(target.log,
            (std::vector<std::string>{"get k1", "put k2 33", "delete k3", "batch_get k1 k2",
                                      "batch k4:del k5:9", "delete_range k6 k8 4", "scan k0 k9 7",
                                      "rscan k0 k9 3", "get k2", "put k2 5", "get k2"}));
  EXPECT_EQ(run->total.ops, records.size());
}

// The replay against an engine: reads find what the trace says they found, writes and range
// calls run, counts add up.
class ReplayRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TargetOptions o;
    o.dir = dir_.Sub("db");
    o.cache_bytes = 4 << 20;
    o.direct_io = false;
    o.wal_sync = "none";
    auto t = OpenTarget("embedded:btree", o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    target_ = std::move(t).value();
    std::vector<uint64_t> keys = Loaded(kLoaded, 10);
    space_ = std::make_unique<KeySpace>(keys, kLoaded);
    ASSERT_TRUE(target_->Reset().ok());
    Runner loader(target_.get(), space_.get(), &values_, RunSettings());
    auto load = loader.RunLoad();
    ASSERT_TRUE(load.ok()) << load.status().ToString();
    ASSERT_EQ(load->errors, 0u);
    space_->BuildSorted();
  }

  StatusOr<RunResult> Replay(const std::vector<trace::Record>& records,
                             const ReplayOptions& options, uint32_t threads = 1) {
    const std::string path = dir_.Sub("run" + std::to_string(++runs_) + ".trace");
    WriteTrace(path, records);
    GROVE_ASSIGN_OR_RETURN(ReplayPlan plan, LoadReplay(path, options, space_->sorted_loaded()));
    RunSettings settings;
    settings.threads = threads;
    Runner runner(target_.get(), space_.get(), &values_, settings);
    return runner.RunReplay(plan);
  }

  static const OpStats& Of(const RunResult& r, OpType t) {
    return r.total.per_op[static_cast<int>(t)];
  }

  static constexpr uint64_t kLoaded = 200;
  testing::TempDir dir_;
  std::unique_ptr<Target> target_;
  std::unique_ptr<KeySpace> space_;
  const ValueGen values_{16, 16, 1};
  int runs_ = 0;
};

TEST_F(ReplayRunTest, ScaledReplayFindsWhatTheTraceFound) {
  std::vector<trace::Record> records;
  char key[16];
  for (int i = 0; i < 50; ++i) {
    std::snprintf(key, sizeof(key), "user%04d", i * 2);
    records.push_back(Get(key, true));
  }
  records.push_back(Get("user0051", false));  // absent ...
  records.push_back(Put("user0051", 100));    // ... inserted ...
  records.push_back(Get("user0051", true));   // ... and found
  records.push_back(Rec(trace::Op::kDelete, {"user0010"}));
  records.push_back(Get("user0010", false));  // the delete took it
  trace::Record batch_get = Rec(trace::Op::kBatchGet, {"user0000", "user0002"});
  batch_get.result = 2;
  records.push_back(batch_get);
  trace::Record batch = Rec(trace::Op::kBatchInsert, {"user0004", "user0006"});
  batch.entries[0].has_value = true;
  batch.entries[0].value_size = 20;
  records.push_back(batch);
  trace::Record scan = Rec(trace::Op::kScan, {"user0020", ""});
  scan.arg = 5;
  records.push_back(scan);
  trace::Record reverse = scan;
  reverse.flags = trace::record_flags::kReverse;
  records.push_back(reverse);
  trace::Record range = Rec(trace::Op::kDeleteRange, {"user0090", ""});
  range.arg = 3;
  records.push_back(range);

  auto run = Replay(records, ReplayOptions());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->errors, 0u) << run->first_error;
  EXPECT_EQ(run->total.ops, records.size());
  EXPECT_EQ(Of(*run, OpType::kRead).ok, 51u);
  EXPECT_EQ(Of(*run, OpType::kRead).not_found, 2u);
  EXPECT_EQ(Of(*run, OpType::kInsert).ok, 1u);
  EXPECT_EQ(Of(*run, OpType::kDelete).ok, 1u);
  EXPECT_EQ(Of(*run, OpType::kBatchRead).ok, 1u);
  EXPECT_EQ(Of(*run, OpType::kBatchWrite).ok, 1u);
  EXPECT_EQ(Of(*run, OpType::kScan).count(), 2u);
  EXPECT_EQ(Of(*run, OpType::kScan).scan_entries, 10u);
  EXPECT_EQ(Of(*run, OpType::kDeleteRange).scan_entries, 3u);
  ASSERT_TRUE(run->replay.has_value());
  EXPECT_EQ(run->replay->keys, "scaled");
  EXPECT_EQ(run->replay->calls, records.size());
  EXPECT_EQ(run->workload, "trace:run1.trace");
}

TEST_F(ReplayRunTest, ExactReplayLoopsAndRunsOnManyThreads) {
  std::vector<trace::Record> records;
  for (int i = 0; i < 40; ++i) records.push_back(Get(EncodeKey(1000 + 10 * i), true));
  records.push_back(Get("no such key", false));
  ReplayOptions options;
  options.keys = ReplayOptions::Keys::kExact;
  options.loops = 3;
  auto run = Replay(records, options, /*threads=*/3);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->errors, 0u) << run->first_error;
  EXPECT_EQ(Of(*run, OpType::kRead).ok, 120u);
  EXPECT_EQ(Of(*run, OpType::kRead).not_found, 3u);
}

TEST_F(ReplayRunTest, MaxSecondsEndsTheReplayEarly) {
  std::vector<trace::Record> records;
  for (int i = 0; i < 10; ++i) records.push_back(Get(EncodeKey(1000 + 10 * i), true));
  ReplayOptions options;
  options.keys = ReplayOptions::Keys::kExact;
  options.loops = 10'000'000;  // minutes of calls without the limit
  options.max_seconds = 0.05;
  auto run = Replay(records, options, /*threads=*/2);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->errors, 0u) << run->first_error;
  EXPECT_GT(run->total.ops, 0u);
  // Stopped at the limit (a broken one would run the 100M calls: minutes, not under ten seconds).
  EXPECT_LT(run->total.ops, 100'000'000u);
  EXPECT_LT(run->total.seconds, 10.0);
}

TEST_F(ReplayRunTest, TraceTimingStartsEachCallAtItsTime) {
  // Calls at 0, 100 and 200 ms, replayed at twice the speed: the last starts 100 ms in.
  std::vector<trace::Record> records = {Get("a", true, 0), Get("b", true, 100'000),
                                        Get("c", true, 200'000)};
  ReplayOptions options;
  options.timing = ReplayOptions::Timing::kTrace;
  options.speed = 2;
  auto run = Replay(records, options, /*threads=*/2);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->total.ops, 3u);
  EXPECT_GE(run->total.seconds, 0.1);
  EXPECT_EQ(run->replay->timing, "trace");
}

}  // namespace
}  // namespace grove::bench
