// Conformance: readers racing batches. Each batch first writes a temporary value to every one of
// its keys and then, later in the same batch, that generation's final value. Readers must never
// see a temporary value (Get or BatchGet), and a BatchGet of the batch's keys sees one generation
// for all of them: a batch entirely or not at all (engine/key_locks.h).

#include <atomic>
#include <thread>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

class ConformanceBatchVisibilityTest : public ::testing::TestWithParam<VariantCase> {};

std::string VisKey(uint64_t i) { return "vis/" + std::to_string(100 + i); }

TEST_P(ConformanceBatchVisibilityTest, ReadersSeeWholeBatchesAndNoReplacedValue) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.path());
  o.wal.sync = SyncMode::kNone;  // many batches; durability is not what this test is about
  o.direct_io = false;
  o.cache_bytes = std::max<uint64_t>(4 << 20, c.min_cache_bytes);
  const uint64_t keys = std::min<uint64_t>(16, BatchEntriesThatFit(c, o) / 2);
  if (keys < 2) GTEST_SKIP() << "batches of this case hold fewer than 4 entries";
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();

  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<uint64_t> batch_gets{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 5) ADD_FAILURE() << what;
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::vector<std::string> names;
      for (uint64_t i = 0; i < keys; ++i) names.push_back(VisKey(i));
      const std::vector<Slice> slices(names.begin(), names.end());
      std::vector<std::optional<std::string>> values;
      std::string v;
      for (uint64_t round = 0; !done.load() && failures.load() == 0; ++round) {
        if (t == 1 && round % 2 == 0) {
          auto found = db->Get(names[round % keys], &v);
          if (!found.ok()) return fail(found.status().ToString());
          if (*found && v.rfind("tmp", 0) == 0) return fail("Get saw a replaced value: " + v);
          continue;
        }
        if (Status s = db->BatchGet(slices, &values); !s.ok()) return fail(s.ToString());
        batch_gets.fetch_add(1);
        for (uint64_t i = 0; i < keys; ++i) {
          if (values[i] != values[0]) {
            return fail("BatchGet saw two batches: " + names[0] + "=" +
                        values[0].value_or("(absent)") + ", " + names[i] + "=" +
                        values[i].value_or("(absent)"));
          }
          if (values[i] && values[i]->rfind("tmp", 0) == 0) {
            return fail("BatchGet saw a replaced value: " + *values[i]);
          }
        }
      }
    });
  }
  uint64_t generation = 0;
  for (; generation < 1500 && failures.load() == 0; ++generation) {
    WriteBatch b;
    // A large temporary value on one key, so that blob-backed cells are raced too.
    for (uint64_t i = 0; i < keys; ++i) {
      b.Put(VisKey(i), "tmp" + std::to_string(generation) + std::string(i == 0 ? 2000 : 8, 't'));
    }
    for (uint64_t i = 0; i < keys; ++i) b.Put(VisKey(i), "gen" + std::to_string(generation));
    if (Status s = db->Write(b); !s.ok()) {
      fail(s.ToString());
      break;
    }
  }
  // Readers get some rounds in even on a fast machine.
  while (batch_gets.load() < 100 && failures.load() == 0) std::this_thread::yield();
  done = true;
  for (auto& th : readers) th.join();
  ASSERT_EQ(failures.load(), 0);
  std::string v;
  auto found = db->Get(VisKey(keys - 1), &v);
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(v, "gen" + std::to_string(generation - 1));
  ExpectVerifyClean(db, keys, "after the batches");
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceBatchVisibilityTest,
                         ::testing::ValuesIn(ConformanceCases()), CaseName);

}  // namespace
}  // namespace grove::testing
