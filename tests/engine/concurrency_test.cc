// Concurrency: several threads of mixed operations on one database, with checkpoints running
// underneath (small cache). Each thread owns a key range (its final state is replayable exactly)
// and all threads also fight over a small set of shared keys, whose final value must be the last
// write of one of the threads. Readers and scanners run throughout and check what they see. At the
// end, and again after a reopen, the state matches the model and Verify() passes.

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

constexpr int kWriters = 4;
constexpr int kReaders = 2;
constexpr uint64_t kOwnKeys = 6000;  // per writer
constexpr uint64_t kSharedKeys = 64;

std::string OwnKey(int t, uint64_t i) { return Key((uint64_t{1} << 40) * (t + 1) + i); }
std::string SharedKey(uint64_t i) { return "shared/" + std::to_string(i); }
// Values name their writer so that readers can check them: "<key>|t<thread>|<seq>|padding".
std::string Tagged(const std::string& key, int t, uint64_t seq, size_t pad) {
  return key + "|t" + std::to_string(t) + "|" + std::to_string(seq) + "|" + std::string(pad, 'p');
}
bool BelongsTo(Slice value, Slice key) {
  return value.size() > key.size() && value.substr(0, key.size()) == key &&
         value[key.size()] == '|';
}

class ConcurrencyTest : public ::testing::TestWithParam<IoBackendKind> {};

TEST_P(ConcurrencyTest, MixedOperationsMatchTheModel) {
  TempDir dir;
  Options o = SmallOptions(dir.path(), GetParam());
  o.cache_bytes = 2 << 20;
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();

  // Per writer: its own keys' final state, and the last thing it did to each shared key.
  std::vector<std::map<std::string, std::string>> own(kWriters);
  std::vector<std::map<std::string, std::optional<std::string>>> shared_last(kWriters);
  std::atomic<bool> writers_done{false};
  std::atomic<int> failures{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 5) ADD_FAILURE() << what;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (uint64_t seq = 0; seq < 25000 && failures.load() == 0; ++seq) {
        const int r = static_cast<int>(rng() % 100);
        if (r < 50) {
          const std::string k = OwnKey(t, rng() % kOwnKeys);
          const std::string v = Tagged(k, t, seq, rng() % 10 == 0 ? 1200 : rng() % 40);
          if (Status s = db->Put(k, v); !s.ok()) return fail(s.ToString());
          own[t][k] = v;
        } else if (r < 70) {
          const std::string k = OwnKey(t, rng() % kOwnKeys);
          if (Status s = db->Delete(k); !s.ok()) return fail(s.ToString());
          own[t].erase(k);
        } else if (r < 90) {
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
          std::vector<std::pair<std::string, std::string>> puts;
          for (int j = 0; j < 8; ++j) {
            const std::string k = OwnKey(t, rng() % kOwnKeys);
            const std::string v = Tagged(k, t, seq, 4);
            b.Put(k, v);
            puts.push_back({k, v});
          }
          if (Status s = db->Write(b); !s.ok()) return fail(s.ToString());
          for (auto& [k, v] : puts) own[t][k] = v;
        }
      }
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(200 + t);
      std::string v;
      while (!writers_done.load() && failures.load() == 0) {
        if (rng() % 5 != 0) {
          const std::string k = rng() % 2
                                    ? SharedKey(rng() % kSharedKeys)
                                    : OwnKey(static_cast<int>(rng() % kWriters), rng() % kOwnKeys);
          auto found = db->Get(k, &v);
          if (!found.ok()) return fail(found.status().ToString());
          if (*found && !BelongsTo(v, k)) return fail("Get returned another key's value for " + k);
          continue;
        }
        ScanOptions s;
        s.reverse = rng() % 2 == 0;
        s.lower = OwnKey(static_cast<int>(rng() % kWriters), rng() % kOwnKeys);
        auto it = db->NewIterator(s);
        if (!it.ok()) return fail(it.status().ToString());
        std::string prev;
        for (int n = 0; (*it)->Valid() && n < 500; (*it)->Next(), ++n) {
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
  for (int t = 0; t < kWriters; ++t) threads[t].join();
  writers_done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  ASSERT_EQ(failures.load(), 0);

  auto check = [&](Db* d) {
    std::string v;
    for (int t = 0; t < kWriters; ++t) {
      for (uint64_t i = 0; i < kOwnKeys; ++i) {
        const std::string k = OwnKey(t, i);
        auto found = d->Get(k, &v);
        ASSERT_TRUE(found.ok());
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
      bool explained = false;
      bool anyone_wrote = false;
      for (int t = 0; t < kWriters; ++t) {
        auto it = shared_last[t].find(k);
        if (it == shared_last[t].end()) continue;
        anyone_wrote = true;
        explained |= *found ? (it->second && *it->second == v) : !it->second.has_value();
      }
      ASSERT_TRUE(explained || (!anyone_wrote && !*found))
          << "final state of " << k << " is no thread's last write";
    }
    VerifyReport report;
    ASSERT_OK(d->Verify(&report));
    ASSERT_TRUE(report.problems.empty()) << report.problems[0];
  };
  check(db);
  ASSERT_OK(db->Close());
  auto reopened = Db::Open(o);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  check(reopened->get());
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrencyTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         BackendName);

}  // namespace
}  // namespace grove::testing
