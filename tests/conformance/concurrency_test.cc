// Conformance: four writers with wal.sync always (group commits), two readers doing point reads
// and scans in both directions, and a thread running Verify() throughout, on a cache small enough
// that checkpoints run underneath. Writers own interleaved keys, so they share leaves and race
// each other's structure changes, and all of them fight over a few shared keys, whose final value
// must be the last write of one of them. At the end, and after a reopen, every writer's keys
// match its model and Verify() is clean.

#include <atomic>
#include <random>
#include <thread>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

constexpr int kWriters = 4;
constexpr uint64_t kKeysPerWriter = 3000;
constexpr uint64_t kSharedKeys = 32;

// Writer t owns every kWriters-th key, so neighbouring keys belong to different writers.
std::string OwnKey(int t, uint64_t i) { return Key(((i * kWriters) + t) * 1000003 % (1ull << 40)); }
std::string SharedKey(uint64_t i) { return "shared/" + std::to_string(i); }
// Values name their key: "<key>|t<thread>|<seq>|padding".
std::string Tagged(const std::string& key, int t, uint64_t seq, size_t pad) {
  return key + "|t" + std::to_string(t) + "|" + std::to_string(seq) + "|" + std::string(pad, 'p');
}
bool BelongsTo(Slice value, Slice key) {
  return value.size() > key.size() && value.substr(0, key.size()) == key &&
         value[key.size()] == '|';
}

class ConformanceConcurrencyTest : public ::testing::TestWithParam<VariantCase> {};

TEST_P(ConformanceConcurrencyTest, MixedOperationsMatchTheModel) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.path());
  o.wal.sync = SyncMode::kAlways;
  o.direct_io = false;  // syncs and rereads through the page cache: the test stays short
  o.cache_bytes = std::max<uint64_t>(2 << 20, c.min_cache_bytes);
  const uint64_t batch = std::max<uint64_t>(1, std::min<uint64_t>(12, BatchEntriesThatFit(c, o)));
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();

  std::vector<Model> own(kWriters);
  std::vector<std::map<std::string, std::optional<std::string>>> shared_last(kWriters);
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> failures{0};
  std::atomic<int> verifies{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 5) ADD_FAILURE() << what;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(300 + t);
      for (uint64_t seq = 0; seq < 2500 && failures.load() == 0; ++seq) {
        const int r = static_cast<int>(rng() % 100);
        if (r < 55) {
          const std::string k = OwnKey(t, rng() % kKeysPerWriter);
          const std::string v = Tagged(k, t, seq, rng() % 10 == 0 ? 1500 : rng() % 40);
          if (Status s = db->Put(k, v); !s.ok()) return fail(s.ToString());
          own[t][k] = v;
        } else if (r < 75) {
          const std::string k = OwnKey(t, rng() % kKeysPerWriter);
          if (Status s = db->Delete(k); !s.ok()) return fail(s.ToString());
          own[t].erase(k);
        } else if (r < 88) {
          const std::string k = SharedKey(rng() % kSharedKeys);
          if (rng() % 4 == 0) {
            if (Status s = db->Delete(k); !s.ok()) return fail(s.ToString());
            shared_last[t][k] = std::nullopt;
          } else {
            const std::string v = Tagged(k, t, seq, rng() % 3 == 0 ? 2000 : 8);
            if (Status s = db->Put(k, v); !s.ok()) return fail(s.ToString());
            shared_last[t][k] = v;
          }
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
      writers_left.fetch_sub(1);
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(400 + t);
      std::string v;
      while (writers_left.load() > 0 && failures.load() == 0) {
        if (rng() % 5 != 0) {
          const std::string k =
              rng() % 3 == 0 ? SharedKey(rng() % kSharedKeys)
                             : OwnKey(static_cast<int>(rng() % kWriters), rng() % kKeysPerWriter);
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
        for (int n = 0; (*it)->Valid() && n < 300; (*it)->Next(), ++n) {
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
  // Verify() pauses writers and checks the whole index while everything else runs; it must run
  // at least once, however fast the writers finish.
  threads.emplace_back([&] {
    do {
      VerifyReport report;
      if (Status s = db->Verify(&report); !s.ok()) return fail(s.ToString());
      if (!report.problems.empty()) return fail("Verify during writes: " + report.problems[0]);
      verifies.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (writers_left.load() > 0 && failures.load() == 0);
  });
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_GT(verifies.load(), 0);

  auto check = [&](Db* d) {
    std::string v;
    size_t entries = 0;
    for (int t = 0; t < kWriters; ++t) {
      entries += own[t].size();
      for (uint64_t i = 0; i < kKeysPerWriter; ++i) {
        const std::string k = OwnKey(t, i);
        auto found = d->Get(k, &v);
        ASSERT_TRUE(found.ok()) << found.status().ToString();
        auto it = own[t].find(k);
        ASSERT_EQ(*found, it != own[t].end()) << k;
        if (*found) {
          ASSERT_EQ(v, it->second);
        }
      }
    }
    for (uint64_t i = 0; i < kSharedKeys; ++i) {
      const std::string k = SharedKey(i);
      auto found = d->Get(k, &v);
      ASSERT_TRUE(found.ok());
      bool explained = false, anyone_wrote = false;
      for (int t = 0; t < kWriters; ++t) {
        auto it = shared_last[t].find(k);
        if (it == shared_last[t].end()) continue;
        anyone_wrote = true;
        explained |= *found ? (it->second && *it->second == v) : !it->second.has_value();
      }
      ASSERT_TRUE(explained || (!anyone_wrote && !*found))
          << "final state of " << k << " is no thread's last write";
      entries += *found ? 1 : 0;
    }
    ExpectVerifyClean(d, entries, "after the threads");
  };
  check(db);
  ASSERT_OK(db->Close());
  auto reopened = Db::Open(o);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  check(reopened->get());
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceConcurrencyTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
