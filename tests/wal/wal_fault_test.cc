// Wal under injected faults (io/fault_backend.h): fail-stop after a failed fdatasync or write,
// ENOSPC at segment creation (retryable, also at Open), and simulated power loss in each sync mode.

#include <cerrno>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "io/fault_backend.h"
#include "testutil/temp_dir.h"
#include "wal/segment.h"
#include "wal/wal.h"
#include "wal/wal_test_util.h"

namespace grove::wal {
namespace {

using testing::MakeBackend;
using testing::MakePayload;
using testing::ReplayAll;
using testing::Replayed;
using OpKind = FaultInjectionBackend::OpKind;
using PowerLoss = FaultInjectionBackend::PowerLoss;

bool Contains(Slice haystack, Slice needle) { return haystack.find(needle) != Slice::npos; }

class WalFaultTest : public ::testing::TestWithParam<IoBackendKind> {
 protected:
  void SetUp() override {
    std::string why;
    inner_ = MakeBackend(GetParam(), &why);
    if (inner_ == nullptr) GTEST_SKIP() << "backend unavailable: " << why;
    fault_ = std::make_shared<FaultInjectionBackend>(inner_, 1);
    options_.sync = SyncMode::kAlways;
    options_.batch_interval_us = 200;
    options_.max_unsynced_bytes = 64 << 10;
    options_.segment_bytes = 128 << 10;
  }

  std::unique_ptr<Wal> OpenWal(FaultInjectionBackend* io, Lsn next_lsn) {
    StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(io, dir_.path(), options_, next_lsn, nullptr);
    EXPECT_TRUE(wal.ok()) << wal.status().ToString();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  std::shared_ptr<IoBackend> inner_;
  std::shared_ptr<FaultInjectionBackend> fault_;
  grove::testing::TempDir dir_;
  WalOptions options_;
};

TEST_P(WalFaultTest, FailedFdatasyncIsFailStop) {
  std::unique_ptr<Wal> wal = OpenWal(fault_.get(), 1);
  ASSERT_NE(wal, nullptr);
  ASSERT_TRUE(wal->Append("a").ok());
  fault_->AddRule({.kind = OpKind::kSync, .path_contains = "wal-", .error = EIO, .count = 1});
  StatusOr<Lsn> b = wal->Append("b");
  ASSERT_EQ(b.status().code(), StatusCode::kInternal) << b.status().ToString();
  EXPECT_TRUE(Contains(b.status().message(), "fdatasync"));
  EXPECT_TRUE(Contains(b.status().message(), "reopen to recover"));

  // The rule is gone, but a later fsync proves nothing: every later call fails.
  fault_->ClearRules();
  for (int i = 0; i < 3; ++i) {
    StatusOr<Lsn> c = wal->Append("c");
    ASSERT_EQ(c.status().code(), StatusCode::kInternal);
    EXPECT_TRUE(Contains(c.status().message(), "fdatasync"));
    EXPECT_TRUE(Contains(c.status().message(), "failed earlier"));
    EXPECT_TRUE(Contains(c.status().message(), "reopen to recover"));
  }
  EXPECT_EQ(wal->Sync().code(), StatusCode::kInternal);
  EXPECT_EQ(wal->Close().code(), StatusCode::kInternal);
  wal.reset();

  // Reopening recovers: "a" is there ("b" may be: it was written, never acknowledged).
  Replayed r = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_GE(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].second, "a");
  wal = OpenWal(fault_.get(), r.result.next_lsn);
  ASSERT_NE(wal, nullptr);
  ASSERT_TRUE(wal->Append("d").ok());
}

// In kNone and kBatch a failed fdatasync (from Sync() or the background thread) stops the log too.
TEST_P(WalFaultTest, FailedSyncStopsTheLogInEveryMode) {
  options_.sync = SyncMode::kNone;
  std::unique_ptr<Wal> wal = OpenWal(fault_.get(), 1);
  ASSERT_NE(wal, nullptr);
  ASSERT_TRUE(wal->Append("a").ok());
  fault_->AddRule({.kind = OpKind::kSync, .path_contains = "wal-", .error = EIO, .count = 1});
  EXPECT_EQ(wal->Sync().code(), StatusCode::kInternal);
  fault_->ClearRules();
  EXPECT_EQ(wal->Append("b").status().code(), StatusCode::kInternal);
  wal.reset();

  grove::testing::TempDir other;
  options_.sync = SyncMode::kBatch;
  StatusOr<std::unique_ptr<Wal>> batch =
      Wal::Open(fault_.get(), other.path(), options_, 1, nullptr);
  ASSERT_TRUE(batch.ok());
  fault_->AddRule({.kind = OpKind::kSync, .path_contains = "wal-", .error = EIO});
  ASSERT_TRUE((*batch)->Append("x").ok());  // acknowledged before any sync
  // The background thread's sync fails; wait for that outcome (bounded only against a hang).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  Status s;
  while (s.ok() && std::chrono::steady_clock::now() < deadline) {
    s = (*batch)->Append("y").status();
    if (s.ok()) std::this_thread::yield();
  }
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "fdatasync"));
  fault_->ClearRules();
}

TEST_P(WalFaultTest, FailedOrShortWriteIsFailStopAndReplayRepairsIt) {
  std::unique_ptr<Wal> wal = OpenWal(fault_.get(), 1);
  ASSERT_NE(wal, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(wal->Append(MakePayload("w", i, 3000)).ok());
  fault_->AddRule({.kind = OpKind::kWrite,
                   .path_contains = "wal-",
                   .error = EIO,
                   .count = 1,
                   .short_write = true});
  StatusOr<Lsn> torn = wal->Append(MakePayload("w", 5, 3000));
  ASSERT_EQ(torn.status().code(), StatusCode::kInternal) << torn.status().ToString();
  EXPECT_TRUE(Contains(torn.status().message(), "write"));
  fault_->ClearRules();
  StatusOr<Lsn> after = wal->Append("after");
  ASSERT_EQ(after.status().code(), StatusCode::kInternal);
  EXPECT_TRUE(Contains(after.status().message(), "failed earlier"));
  wal.reset();

  // Half a record is on disk: a torn tail, dropped and repaired.
  Replayed r = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.result.torn_tail);
  ASSERT_EQ(r.records.size(), 5u);
  EXPECT_EQ(r.result.next_lsn, 6u);
  wal = OpenWal(fault_.get(), r.result.next_lsn);
  ASSERT_NE(wal, nullptr);
  StatusOr<Lsn> lsn = wal->Append("resumed");
  ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(*lsn, 6u);
  wal.reset();
  Replayed again = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  EXPECT_FALSE(again.result.torn_tail);
  ASSERT_EQ(again.records.size(), 6u);
  EXPECT_EQ(again.records.back().second, "resumed");
}

// Open on a full disk succeeds without a segment (a database must open and serve reads while its
// disk is full); the first Append creates the segment and fails with RESOURCE_EXHAUSTED, consuming
// no LSN, until space returns.
TEST_P(WalFaultTest, EnospcAtOpenDefersTheSegmentToTheFirstAppend) {
  // A log with records, as Replay leaves it before Open.
  std::unique_ptr<Wal> wal = OpenWal(fault_.get(), 1);
  ASSERT_NE(wal, nullptr);
  std::vector<std::string> acked;
  for (int i = 0; i < 3; ++i) {
    acked.push_back(MakePayload("o", i, 100));
    ASSERT_TRUE(wal->Append(acked.back()).ok());
  }
  ASSERT_TRUE(wal->Close().ok());
  wal.reset();
  Replayed before = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(before.status.ok()) << before.status.ToString();
  ASSERT_EQ(before.result.next_lsn, 4u);

  fault_->AddRule({.kind = OpKind::kAllocate, .path_contains = "wal-", .error = ENOSPC});
  wal = OpenWal(fault_.get(), before.result.next_lsn);
  ASSERT_NE(wal, nullptr);
  for (int i = 0; i < 2; ++i) {
    StatusOr<Lsn> full = wal->Append("while full");
    ASSERT_EQ(full.status().code(), StatusCode::kResourceExhausted) << full.status().ToString();
    EXPECT_EQ(wal->next_lsn(), 4u);
  }
  EXPECT_TRUE(wal->Sync().ok());  // nothing unsynced, and no segment to sync

  fault_->ClearRules();
  StatusOr<Lsn> lsn = wal->Append("resumed");
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  EXPECT_EQ(*lsn, 4u);
  acked.push_back("resumed");
  ASSERT_TRUE(wal->Close().ok());
  wal.reset();

  Replayed r = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.records.size(), acked.size());
  for (size_t i = 0; i < acked.size(); ++i) ASSERT_EQ(r.records[i].second, acked[i]);

  // Closing a Wal that never got a segment leaves the directory as it was.
  fault_->AddRule({.kind = OpKind::kAllocate, .path_contains = "wal-", .error = ENOSPC});
  wal = OpenWal(fault_.get(), r.result.next_lsn);
  ASSERT_NE(wal, nullptr);
  EXPECT_TRUE(wal->Close().ok());
  wal.reset();
  fault_->ClearRules();
  Replayed again = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  EXPECT_EQ(again.records.size(), acked.size());
  EXPECT_EQ(again.result.next_lsn, r.result.next_lsn);
}

TEST_P(WalFaultTest, EnospcOnSegmentAllocateIsRetryable) {
  // At a roll.
  std::unique_ptr<Wal> wal = OpenWal(fault_.get(), 1);
  ASSERT_NE(wal, nullptr);
  fault_->AddRule({.kind = OpKind::kAllocate, .path_contains = "wal-", .error = ENOSPC});
  std::vector<std::string> acked;
  Status failure;
  for (int i = 0; i < 1000 && failure.ok(); ++i) {
    const std::string p = MakePayload("n", i, 2000);
    StatusOr<Lsn> lsn = wal->Append(p);
    if (lsn.ok()) {
      ASSERT_EQ(*lsn, acked.size() + 1);
      acked.push_back(p);
    } else {
      failure = lsn.status();
    }
  }
  ASSERT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure.ToString();
  const Lsn waiting = wal->next_lsn();
  EXPECT_EQ(waiting, acked.size() + 1);  // the failed group consumed no LSN
  // Still full: even a tiny record fails (the old segment is sealed), and nothing is consumed.
  EXPECT_EQ(wal->Append("tiny").status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(wal->next_lsn(), waiting);

  // Space comes back: writes resume at the same LSN in a new segment.
  fault_->ClearRules();
  StatusOr<Lsn> lsn = wal->Append("resumed");
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  EXPECT_EQ(*lsn, waiting);
  acked.push_back("resumed");
  ASSERT_TRUE(wal->Close().ok());

  Replayed r = ReplayAll(fault_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.records.size(), acked.size());
  for (size_t i = 0; i < acked.size(); ++i) ASSERT_EQ(r.records[i].second, acked[i]);
  StatusOr<std::vector<SegmentRef>> segments = ListSegments(fault_.get(), dir_.path());
  ASSERT_TRUE(segments.ok());
  EXPECT_EQ(segments->back().first_lsn, waiting);
}

// sync: always. The backend crashes after a random number of operations while several threads
// append; then the power fails (unsynced writes dropped, or torn). Every acknowledged record must
// replay with its payload; anything else replayed must be a record someone tried to append.
TEST_P(WalFaultTest, PowerLossWithSyncAlwaysLosesNoAcknowledgedRecord) {
  for (PowerLoss mode : {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced}) {
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      SCOPED_TRACE(::testing::Message() << "mode " << static_cast<int>(mode) << " seed " << seed);
      grove::testing::TempDir dir;
      auto fault = std::make_shared<FaultInjectionBackend>(inner_, seed);
      StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(fault.get(), dir.path(), options_, 1, nullptr);
      ASSERT_TRUE(wal.ok()) << wal.status().ToString();
      std::mt19937_64 rng(seed);
      fault->CrashAfter(rng() % 300);

      std::mutex mu;
      std::map<Lsn, std::string> acked;
      std::set<std::string> attempted;
      std::vector<std::thread> threads;
      for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < 150; ++i) {
            const std::string p =
                MakePayload("s" + std::to_string(t), i, 100 + (i * 577 + t * 91) % 4000);
            {
              std::lock_guard<std::mutex> lock(mu);
              attempted.insert(p);
            }
            StatusOr<Lsn> lsn = (*wal)->Append(p);
            if (!lsn.ok()) return;  // the crash: fail-stop
            std::lock_guard<std::mutex> lock(mu);
            acked.emplace(*lsn, p);
          }
        });
      }
      for (std::thread& t : threads) t.join();
      fault->CrashAfter(0);  // nothing more reaches the disk, not even Close's sync
      wal->reset();
      ASSERT_TRUE(fault->SimulatePowerLoss(mode).ok());

      Replayed r = ReplayAll(fault.get(), dir.path(), 1, options_);
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      std::map<Lsn, std::string> replayed(r.records.begin(), r.records.end());
      for (const auto& [lsn, payload] : acked) {
        auto it = replayed.find(lsn);
        ASSERT_NE(it, replayed.end()) << "acknowledged LSN " << lsn << " lost";
        ASSERT_EQ(it->second, payload);
      }
      std::set<std::string> seen;
      for (const auto& [lsn, payload] : r.records) {
        ASSERT_TRUE(attempted.count(payload)) << "LSN " << lsn << " was never appended";
        ASSERT_TRUE(seen.insert(payload).second) << "payload replayed twice";
      }

      // The repaired log replays cleanly and the log goes on from there.
      Replayed again = ReplayAll(fault.get(), dir.path(), 1, options_);
      ASSERT_TRUE(again.status.ok()) << again.status.ToString();
      EXPECT_FALSE(again.result.torn_tail);
      ASSERT_EQ(again.records, r.records);
      StatusOr<std::unique_ptr<Wal>> reopened =
          Wal::Open(fault.get(), dir.path(), options_, r.result.next_lsn, nullptr);
      ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
      ASSERT_TRUE((*reopened)->Append("next").ok());
      reopened->reset();
      Replayed last = ReplayAll(fault.get(), dir.path(), 1, options_);
      ASSERT_TRUE(last.status.ok()) << last.status.ToString();
      ASSERT_EQ(last.records.size(), r.records.size() + 1);
    }
  }
}

// sync: none (and batch). After a power loss the log is a prefix of what was appended, and holds
// at least everything synced: by Sync() and by every segment roll.
TEST_P(WalFaultTest, PowerLossWithoutSyncReplaysAPrefix) {
  for (SyncMode sync : {SyncMode::kNone, SyncMode::kBatch}) {
    for (PowerLoss mode : {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced}) {
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        SCOPED_TRACE(::testing::Message() << "sync " << static_cast<int>(sync) << " mode "
                                          << static_cast<int>(mode) << " seed " << seed);
        options_.sync = sync;
        grove::testing::TempDir dir;
        auto fault = std::make_shared<FaultInjectionBackend>(inner_, seed);
        StatusOr<std::unique_ptr<Wal>> wal =
            Wal::Open(fault.get(), dir.path(), options_, 1, nullptr);
        ASSERT_TRUE(wal.ok());
        std::vector<std::string> appended;
        std::mt19937_64 rng(seed);
        const size_t total = 100 + rng() % 200;
        const size_t sync_at = rng() % total;
        for (size_t i = 0; i < total; ++i) {
          appended.push_back(MakePayload("p", i, 50 + rng() % 3000));
          ASSERT_TRUE((*wal)->Append(appended.back()).ok());
          if (i == sync_at) {
            ASSERT_TRUE((*wal)->Sync().ok());
          }
        }
        const Lsn active_first = ListSegments(fault.get(), dir.path())->back().first_lsn;
        fault->CrashAfter(0);
        wal->reset();
        ASSERT_TRUE(fault->SimulatePowerLoss(mode).ok());

        Replayed r = ReplayAll(fault.get(), dir.path(), 1, options_);
        ASSERT_TRUE(r.status.ok()) << r.status.ToString();
        ASSERT_LE(r.records.size(), appended.size());
        for (size_t i = 0; i < r.records.size(); ++i) {
          ASSERT_EQ(r.records[i].first, i + 1);
          ASSERT_EQ(r.records[i].second, appended[i]);
        }
        EXPECT_GE(r.records.size(), sync_at + 1);       // Sync() made these durable
        EXPECT_GE(r.records.size() + 1, active_first);  // rolls synced the earlier segments
        Replayed again = ReplayAll(fault.get(), dir.path(), 1, options_);
        ASSERT_TRUE(again.status.ok());
        EXPECT_FALSE(again.result.torn_tail);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, WalFaultTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         [](const ::testing::TestParamInfo<IoBackendKind>& info) {
                           return std::string(testing::BackendName(info.param));
                         });

}  // namespace
}  // namespace grove::wal
