// Concurrency of the hln variant: four writer threads whose keys interleave (so that they share
// leaves and subnodes: single-subnode writes, rebalances, splits and stash conversions race each
// other), two readers doing point reads and scans in both directions, and a thread that runs
// Verify() while all of this goes on (its index checks; see below). A small cache keeps checkpoints
// running underneath. At the end, and after a reopen, every writer's keys match its model and
// Verify() is clean.

#include <atomic>
#include <random>
#include <thread>

#include "engine/hln_test_util.h"

namespace grove::testing {
namespace {

constexpr int kWriters = 4;
constexpr uint64_t kKeysPerWriter = 5000;

// Writer t owns every kWriters-th key, so neighbouring keys belong to different writers.
std::string OwnKey(int t, uint64_t i) { return Key(((i * kWriters) + t) * 1000003 % (1ull << 40)); }
std::string Tagged(const std::string& key, int t, uint64_t seq, size_t pad) {
  return key + "|t" + std::to_string(t) + "|" + std::to_string(seq) + "|" + std::string(pad, 'p');
}
bool BelongsTo(Slice value, Slice key) {
  return value.size() > key.size() && value.substr(0, key.size()) == key &&
         value[key.size()] == '|';
}

class HlnConcurrencyTest : public ::testing::TestWithParam<HlnParams> {};

TEST_P(HlnConcurrencyTest, MixedOperationsMatchTheModel) {
  TempDir dir;
  Options o = HlnOptions(dir.path(), GetParam());
  o.cache_bytes = std::max<uint64_t>(2 << 20, o.cache_bytes / 2);
  // Batches stay within what the engine admits for this leaf size and cache, with room for every
  // writer's batch at once (a batch near the whole write room waits for the others, and after a
  // few checkpoints that still leave no room it fails as stalled).
  const uint64_t batch =
      std::max<uint64_t>(1, std::min<uint64_t>(12, MaxBatchEntries(o) / kWriters));
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();

  std::vector<std::map<std::string, std::string>> own(kWriters);
  std::atomic<bool> writers_done{false};
  std::atomic<int> failures{0};
  std::atomic<int> verifies{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 5) ADD_FAILURE() << what;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(300 + t);
      for (uint64_t seq = 0; seq < 6000 && failures.load() == 0; ++seq) {
        const int r = static_cast<int>(rng() % 100);
        if (r < 60) {
          const std::string k = OwnKey(t, rng() % kKeysPerWriter);
          const std::string v = Tagged(k, t, seq, rng() % 10 == 0 ? 1200 : rng() % 40);
          if (Status s = db->Put(k, v); !s.ok()) return fail(s.ToString());
          own[t][k] = v;
        } else if (r < 85) {
          const std::string k = OwnKey(t, rng() % kKeysPerWriter);
          if (Status s = db->Delete(k); !s.ok()) return fail(s.ToString());
          own[t].erase(k);
        } else {
          WriteBatch b;
          std::vector<std::pair<std::string, std::optional<std::string>>> ops;
          const uint64_t start = rng() % kKeysPerWriter;
          for (uint64_t j = 0; j < batch; ++j) {
            const std::string k = OwnKey(t, (start + j) % kKeysPerWriter);
            if (rng() % 3 == 0) {
              b.Delete(k);
              ops.push_back({k, std::nullopt});
            } else {
              const std::string v = Tagged(k, t, seq, 4);
              b.Put(k, v);
              ops.push_back({k, v});
            }
          }
          if (Status s = db->Write(b); !s.ok()) return fail(s.ToString());
          for (auto& [k, v] : ops) {
            if (v) {
              own[t][k] = *v;
            } else {
              own[t].erase(k);
            }
          }
        }
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(400 + t);
      std::string v;
      while (!writers_done.load() && failures.load() == 0) {
        if (rng() % 4 != 0) {
          const std::string k = OwnKey(static_cast<int>(rng() % kWriters), rng() % kKeysPerWriter);
          auto found = db->Get(k, &v);
          if (!found.ok()) return fail(found.status().ToString());
          if (*found && !BelongsTo(v, k)) return fail("Get returned another key's value for " + k);
          continue;
        }
        ScanOptions s;
        s.reverse = rng() % 2 == 0;
        s.lower = OwnKey(static_cast<int>(rng() % kWriters), rng() % kKeysPerWriter);
        auto it = db->NewIterator(s);
        if (!it.ok()) return fail(it.status().ToString());
        std::string prev;
        for (int n = 0; (*it)->Valid() && n < 400; (*it)->Next(), ++n) {
          const std::string k((*it)->key());
          if (n > 0 && (s.reverse ? !(k < prev) : !(prev < k))) {
            return fail("scan out of order or repeated at " + k);
          }
          if (!BelongsTo((*it)->value(), k)) return fail("scan value does not belong to " + k);
          prev = k;
        }
        if (!(*it)->status().ok()) return fail((*it)->status().ToString());
      }
    });
  }
  threads.emplace_back([&] {
    // At least one Verify even if the writers finish before this thread first runs.
    do {
      VerifyReport report;
      if (Status s = db->Verify(&report); !s.ok()) return fail(s.ToString());
      // Only the index's own findings count here: DbImpl::Verify compares the claimed pages with
      // the allocator after it has let writers go again, so its page accounting is only exact
      // when nothing writes (checked at the end).
      for (const std::string& p : report.problems) {
        if (p.rfind("hln", 0) == 0) return fail("Verify under load: " + p);
      }
      verifies.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (!writers_done.load() && failures.load() == 0);
  });
  for (int t = 0; t < kWriters; ++t) threads[t].join();
  writers_done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_GT(verifies.load(), 0);
  EXPECT_GT(Extra(db, "splits_total"), 0);

  auto check = [&](Db* d) {
    std::map<std::string, std::string> all;
    for (const auto& m : own) all.insert(m.begin(), m.end());
    ExpectMatches(d, all, ParamsName(GetParam()));
    ExpectVerifyClean(d, all.size(), ParamsName(GetParam()));
  };
  check(db);
  ASSERT_OK(db->Close());
  auto reopened = Db::Open(o);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  check(reopened->get());
}

INSTANTIATE_TEST_SUITE_P(Configs, HlnConcurrencyTest,
                         ::testing::Values(HlnParams{{"leaf_pages", "4"}},
                                           HlnParams{{"leaf_pages", "16"}, {"stash", "true"}},
                                           HlnParams{{"leaf_pages", "4"}, {"hash", "fnv"}}),
                         [](const ::testing::TestParamInfo<HlnParams>& info) {
                           return std::to_string(info.index);
                         });

}  // namespace
}  // namespace grove::testing
