// Group commit with wal.sync: always: writers that arrive while a log sync is under way share the
// next one. The first writer's fdatasync is held (the fault-injecting backend's observer) until
// every other writer is waiting; then one more sync makes all of them durable, and the
// records-per-sync histogram shows it.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;

TEST(GroupCommitTest, WritersWaitingForASyncShareTheNextOne) {
  constexpr int kWriters = 12;
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
  Options o = SmallOptions(dir.path());
  o.io_backend = fb;
  o.wal.sync = SyncMode::kAlways;
  o.checkpoint.interval_seconds = 0;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_OK((*db)->Put("warm", "up"));

  std::mutex mu;
  std::condition_variable cv;
  bool hold = true, held = false;
  fb->SetObserver([&](const FaultInjectionBackend::OpInfo& op) {
    if (op.kind != FaultInjectionBackend::OpKind::kSync ||
        op.path.find("/wal-") == std::string::npos) {
      return;
    }
    std::unique_lock<std::mutex> lock(mu);
    if (!hold) return;
    held = true;
    cv.notify_all();
    cv.wait_for(lock, 30s, [&] { return !hold; });
  });

  const WalStats before = (*db)->GetStats().wal;
  std::atomic<int> entered{0};
  std::vector<std::thread> writers;
  writers.emplace_back([&] { ASSERT_OK((*db)->Put("first", "holds the sync")); });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return held; })) << "the first sync never started";
  }
  for (int i = 1; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      entered.fetch_add(1);
      ASSERT_OK((*db)->Put("w" + std::to_string(i), "v"));
    });
  }
  // Every other writer is queued behind the held sync (they cannot pass it).
  while (entered.load() < kWriters - 1) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(200ms);
  {
    std::lock_guard<std::mutex> lock(mu);
    hold = false;
  }
  cv.notify_all();
  for (auto& w : writers) w.join();
  fb->SetObserver(nullptr);

  const WalStats after = (*db)->GetStats().wal;
  EXPECT_EQ(after.records - before.records, static_cast<uint64_t>(kWriters));
  EXPECT_EQ(after.syncs - before.syncs, 2u) << "the held sync, then one for all the others";
  // The largest group: the kWriters - 1 writers that waited, in the bucket (8, 16].
  const HistogramSnapshot& h = after.records_per_sync;
  ASSERT_EQ(h.bounds[3], 8.0);
  ASSERT_EQ(h.bounds[4], 16.0);
  EXPECT_EQ(h.counts[4] - before.records_per_sync.counts[4], 1u);
  EXPECT_EQ(h.sum - before.records_per_sync.sum, kWriters);
  std::string v;
  for (int i = 1; i < kWriters; ++i) {
    ASSERT_TRUE(*(*db)->Get("w" + std::to_string(i), &v));
  }
}

// Writers that find the dirty-page room full wait for checkpoints instead of failing: six writers
// of batches of up to 200 operations on a 16 MiB cache with a 10% dirty fraction (a setting that
// used to refuse some of them with "writes are stalled").
TEST(GroupCommitTest, WritersWaitForRoomInsteadOfFailing) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.cache_bytes = 16 << 20;
  o.checkpoint.dirty_fraction = 0.1;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::atomic<uint64_t> writes{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  const auto until = std::chrono::steady_clock::now() + 4s;
  for (int t = 0; t < 6; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
      while (std::chrono::steady_clock::now() < until && failures.load() == 0) {
        WriteBatch b;
        const int n = 1 + static_cast<int>(rng() % 200);
        for (int i = 0; i < n; ++i) {
          const uint64_t k = rng() % 400000;
          b.Put(Key(k), Value(k, writes.load(), 100));
        }
        Status s = (*db)->Write(b);
        if (!s.ok()) {
          ADD_FAILURE() << s.ToString();
          failures.fetch_add(1);
          return;
        }
        writes.fetch_add(1);
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT((*db)->GetStats().checkpoint.count, 2u) << "the room filled and checkpoints ran";
}

}  // namespace
}  // namespace grove::testing
