// Wal: Append/Replay round trips in every sync mode on both real backends, group commit under
// concurrency, segment rolls, obsolete-segment removal and the API's error cases.

#include "wal/wal.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "wal/segment.h"
#include "wal/wal_test_util.h"

namespace grove::wal {
namespace {

using testing::MakeBackend;
using testing::MakePayload;
using testing::ReplayAll;
using testing::Replayed;

const char* ModeName(SyncMode mode) {
  switch (mode) {
    case SyncMode::kAlways:
      return "always";
    case SyncMode::kBatch:
      return "batch";
    case SyncMode::kNone:
      return "none";
  }
  return "?";
}

// Small segments and a small unsynced bound, so that rolls and the bound are exercised quickly.
WalOptions SmallOptions(SyncMode mode) {
  WalOptions o;
  o.sync = mode;
  o.batch_interval_us = 200;
  o.max_unsynced_bytes = 128 << 10;
  o.segment_bytes = 256 << 10;
  return o;
}

class WalTest : public ::testing::TestWithParam<std::tuple<IoBackendKind, SyncMode>> {
 protected:
  void SetUp() override {
    std::string why;
    io_ = MakeBackend(std::get<0>(GetParam()), &why);
    if (io_ == nullptr) GTEST_SKIP() << "backend unavailable: " << why;
    options_ = SmallOptions(std::get<1>(GetParam()));
  }

  std::unique_ptr<Wal> OpenWal(Lsn next_lsn) {
    StatusOr<std::unique_ptr<Wal>> wal =
        Wal::Open(io_.get(), dir_.path(), options_, next_lsn, nullptr);
    EXPECT_TRUE(wal.ok()) << wal.status().ToString();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  std::shared_ptr<IoBackend> io_;
  grove::testing::TempDir dir_;
  WalOptions options_;
};

TEST_P(WalTest, AppendReplayRoundTrip) {
  std::vector<std::string> payloads = {"", "x", std::string(60 << 10, 'b')};
  for (int i = 0; i < 150; ++i) payloads.push_back(MakePayload("r", i, (i * 97) % 3000));
  {
    std::unique_ptr<Wal> wal = OpenWal(1);
    ASSERT_NE(wal, nullptr);
    for (size_t i = 0; i < payloads.size(); ++i) {
      StatusOr<Lsn> lsn = wal->Append(payloads[i]);
      ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
      EXPECT_EQ(*lsn, i + 1);
    }
    EXPECT_EQ(wal->next_lsn(), payloads.size() + 1);
    const WalStats stats = wal->GetStats();
    EXPECT_EQ(stats.records, payloads.size());
    EXPECT_EQ(stats.groups, payloads.size());  // one writer: one record per group
    EXPECT_EQ(stats.bytes, wal->appended_bytes());
    EXPECT_GT(stats.bytes, 60u << 10);
    EXPECT_EQ(stats.next_lsn, payloads.size() + 1);
    if (std::get<1>(GetParam()) == SyncMode::kAlways) {
      EXPECT_GE(stats.syncs, payloads.size());
      EXPECT_EQ(stats.sync_seconds.count, stats.syncs);
    }
    ASSERT_TRUE(wal->Close().ok());
  }

  Replayed all = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  EXPECT_FALSE(all.result.torn_tail);
  EXPECT_EQ(all.result.next_lsn, payloads.size() + 1);
  EXPECT_EQ(all.result.records, payloads.size());
  ASSERT_EQ(all.records.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(all.records[i].first, i + 1);
    EXPECT_EQ(all.records[i].second, payloads[i]);
  }

  Replayed tail = ReplayAll(io_.get(), dir_.path(), 50, options_);
  ASSERT_TRUE(tail.status.ok());
  ASSERT_EQ(tail.records.size(), payloads.size() - 49);
  EXPECT_EQ(tail.records.front().first, 50u);

  // Recovery continues the log in a fresh segment; a later replay sees both sessions.
  {
    std::unique_ptr<Wal> wal = OpenWal(all.result.next_lsn);
    ASSERT_NE(wal, nullptr);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(wal->Append(MakePayload("s2", i, 50)).ok());
  }  // the destructor closes
  Replayed again = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  ASSERT_EQ(again.records.size(), payloads.size() + 10);
  EXPECT_EQ(again.records.back().second, MakePayload("s2", 9, 50));
  EXPECT_EQ(again.result.next_lsn, payloads.size() + 11);
}

// AppendMany logs its records in order with consecutive LSNs, in one group when they fit (one
// sync under kAlways), interleaves correctly with single Appends from other threads, and replays.
TEST_P(WalTest, AppendManySharesOneGroupAndReplays) {
  std::vector<std::string> payloads;
  for (int i = 0; i < 20; ++i) payloads.push_back(MakePayload("m", i, 100 + i * 37));
  std::vector<Slice> slices(payloads.begin(), payloads.end());
  {
    std::unique_ptr<Wal> wal = OpenWal(1);
    ASSERT_NE(wal, nullptr);
    ASSERT_TRUE(wal->Append("before").ok());
    const WalStats before = wal->GetStats();
    const std::vector<StatusOr<Lsn>> lsns = wal->AppendMany(slices);
    ASSERT_EQ(lsns.size(), payloads.size());
    for (size_t i = 0; i < lsns.size(); ++i) {
      ASSERT_TRUE(lsns[i].ok()) << lsns[i].status().ToString();
      EXPECT_EQ(*lsns[i], i + 2);
    }
    const WalStats after = wal->GetStats();
    EXPECT_EQ(after.records - before.records, payloads.size());
    EXPECT_EQ(after.groups - before.groups, 1u) << "one caller's records: one group";
    if (std::get<1>(GetParam()) == SyncMode::kAlways) {
      EXPECT_EQ(after.syncs - before.syncs, 1u);
    }
    EXPECT_TRUE(wal->AppendMany({}).empty());
    ASSERT_TRUE(wal->Close().ok());
  }
  Replayed all = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  ASSERT_EQ(all.records.size(), payloads.size() + 1);
  for (size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(all.records[i + 1].second, payloads[i]);
}

// Several AppendMany callers and single appenders at once: every record is acknowledged with a
// unique LSN, each caller's records keep their order, and all replay. Records larger than one
// group's bound split across groups without losing order.
TEST_P(WalTest, ConcurrentAppendManyKeepsEachCallersOrder) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 30;
  std::mutex mu;
  std::map<Lsn, std::string> acked;
  {
    std::unique_ptr<Wal> wal = OpenWal(1);
    ASSERT_NE(wal, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRounds; ++r) {
          std::vector<std::string> payloads;
          // Thread 0 appends one at a time; the others up to 8 records, some of 20 KiB.
          const int n = t == 0 ? 1 : 1 + (r * 3 + t) % 8;
          for (int i = 0; i < n; ++i) {
            payloads.push_back(MakePayload("t" + std::to_string(t) + "r" + std::to_string(r), i,
                                           (i + r) % 5 == 0 ? 20 << 10 : 64));
          }
          std::vector<Slice> slices(payloads.begin(), payloads.end());
          const std::vector<StatusOr<Lsn>> lsns = wal->AppendMany(slices);
          std::lock_guard<std::mutex> lock(mu);
          for (size_t i = 0; i < lsns.size(); ++i) {
            ASSERT_TRUE(lsns[i].ok()) << lsns[i].status().ToString();
            if (i > 0) EXPECT_GT(*lsns[i], *lsns[i - 1]);
            EXPECT_TRUE(acked.emplace(*lsns[i], payloads[i]).second) << "LSN twice";
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_TRUE(wal->Close().ok());
  }
  Replayed all = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  ASSERT_EQ(all.records.size(), acked.size());
  for (const auto& [lsn, payload] : all.records) EXPECT_EQ(acked.at(lsn), payload);
}

// Several threads append at once: LSNs are gap-free and unique, each thread sees its own LSNs grow,
// every acknowledged record replays with its payload, and commits were grouped (never more groups
// than records).
TEST_P(WalTest, ConcurrentAppendersAreGapFreeAndReplay) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 150;
  std::mutex mu;
  std::map<Lsn, std::string> acked;
  {
    std::unique_ptr<Wal> wal = OpenWal(1);
    ASSERT_NE(wal, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Lsn last = 0;
        for (int i = 0; i < kPerThread; ++i) {
          const std::string p = MakePayload("t" + std::to_string(t), i, 20 + (i * 31 + t) % 900);
          StatusOr<Lsn> lsn = wal->Append(p);
          ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
          ASSERT_GT(*lsn, last);
          last = *lsn;
          std::lock_guard<std::mutex> lock(mu);
          ASSERT_TRUE(acked.emplace(*lsn, p).second) << "LSN " << *lsn << " twice";
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const WalStats stats = wal->GetStats();
    EXPECT_EQ(stats.records, kThreads * kPerThread);
    EXPECT_LE(stats.groups, stats.records);
    EXPECT_GE(stats.groups, 1u);
    ASSERT_TRUE(wal->Close().ok());
  }
  ASSERT_EQ(acked.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(acked.begin()->first, 1u);
  EXPECT_EQ(acked.rbegin()->first, acked.size());

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.records.size(), acked.size());
  for (const auto& [lsn, payload] : r.records) EXPECT_EQ(acked.at(lsn), payload);
}

TEST_P(WalTest, RollsSegmentsAndReplaysAcrossThem) {
  std::vector<std::string> payloads;
  std::unique_ptr<Wal> wal = OpenWal(1);
  ASSERT_NE(wal, nullptr);
  for (int i = 0; i < 400; ++i) {
    payloads.push_back(MakePayload("roll", i, 1000 + (i % 7) * 1000));
    ASSERT_TRUE(wal->Append(payloads.back()).ok());
  }
  const WalStats stats = wal->GetStats();
  EXPECT_GT(stats.segments, 4u);
  ASSERT_TRUE(wal->Close().ok());

  StatusOr<std::vector<SegmentRef>> segments = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(segments.ok());
  ASSERT_EQ(segments->size(), stats.segments);
  EXPECT_EQ(segments->front().first_lsn, 1u);
  for (const SegmentRef& seg : *segments) {
    StatusOr<std::unique_ptr<File>> f = io_->OpenFile(seg.path, FileOptions{.read_only = true});
    ASSERT_TRUE(f.ok());
    StatusOr<uint64_t> size = (*f)->Size();
    ASSERT_TRUE(size.ok());
    EXPECT_LE(*size, options_.segment_bytes);
  }

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.result.segments, segments->size());
  ASSERT_EQ(r.records.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) ASSERT_EQ(r.records[i].second, payloads[i]);

  // Each segment's first record carries its name's LSN (Replay checks it), and replaying from the
  // third segment's first LSN reads only from there on.
  const Lsn third = (*segments)[2].first_lsn;
  Replayed from = ReplayAll(io_.get(), dir_.path(), third, options_);
  ASSERT_TRUE(from.status.ok());
  EXPECT_EQ(from.result.segments, segments->size() - 2);
  EXPECT_EQ(from.records.front().first, third);
}

TEST_P(WalTest, RemoveObsoleteSegments) {
  std::unique_ptr<Wal> wal = OpenWal(1);
  ASSERT_NE(wal, nullptr);
  for (int i = 0; i < 400; ++i) ASSERT_TRUE(wal->Append(MakePayload("o", i, 3000)).ok());
  StatusOr<std::vector<SegmentRef>> before = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(before.ok());
  ASSERT_GE(before->size(), 4u);

  // A redo point inside the third segment: the first two hold only older records.
  const Lsn redo = (*before)[2].first_lsn + 1;
  ASSERT_TRUE(wal->RemoveObsoleteSegments(redo).ok());
  StatusOr<std::vector<SegmentRef>> after = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), before->size() - 2);
  EXPECT_EQ(after->front().first_lsn, (*before)[2].first_lsn);
  EXPECT_EQ(wal->GetStats().segments, after->size());

  // A redo point exactly at a segment's first LSN makes the segment before it obsolete too.
  ASSERT_TRUE(wal->RemoveObsoleteSegments((*before)[3].first_lsn).ok());
  after = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->front().first_lsn, (*before)[3].first_lsn);

  // The active segment always stays, and appending goes on.
  ASSERT_TRUE(wal->RemoveObsoleteSegments(wal->next_lsn() + 100).ok());
  after = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  StatusOr<Lsn> lsn = wal->Append("after removal");
  ASSERT_TRUE(lsn.ok());
  ASSERT_TRUE(wal->Close().ok());

  // Replay from a point the log still covers works; from an older one it is data loss.
  Replayed r = ReplayAll(io_.get(), dir_.path(), after->front().first_lsn, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.records.back().second, "after removal");
  Replayed old = ReplayAll(io_.get(), dir_.path(), 1, options_);
  EXPECT_EQ(old.status.code(), StatusCode::kDataLoss) << old.status.ToString();
}

TEST_P(WalTest, SyncAndCloseContract) {
  std::unique_ptr<Wal> wal = OpenWal(7);
  ASSERT_NE(wal, nullptr);
  StatusOr<Lsn> lsn = wal->Append("first");
  ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(*lsn, 7u);
  ASSERT_TRUE(wal->Sync().ok());
  if (std::get<1>(GetParam()) != SyncMode::kBatch) {  // no background thread to race with
    const uint64_t syncs = wal->GetStats().syncs;
    ASSERT_TRUE(wal->Sync().ok());  // nothing new: no fdatasync
    EXPECT_EQ(wal->GetStats().syncs, syncs);
  }
  ASSERT_TRUE(wal->Close().ok());
  EXPECT_TRUE(wal->Close().ok());
  EXPECT_EQ(wal->Append("late").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(wal->Sync().code(), StatusCode::kUnavailable);
  EXPECT_EQ(wal->RemoveObsoleteSegments(100).code(), StatusCode::kUnavailable);

  Replayed r = ReplayAll(io_.get(), dir_.path(), 7, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0], std::make_pair(Lsn{7}, std::string("first")));
}

INSTANTIATE_TEST_SUITE_P(
    BackendsAndModes, WalTest,
    ::testing::Combine(::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                       ::testing::Values(SyncMode::kAlways, SyncMode::kBatch, SyncMode::kNone)),
    [](const ::testing::TestParamInfo<WalTest::ParamType>& info) {
      return std::string(testing::BackendName(std::get<0>(info.param))) + "_" +
             ModeName(std::get<1>(info.param));
    });

// API edge cases that do not depend on the backend or mode.
class WalApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    io_ = MakeBackend(IoBackendKind::kPsync, &why);
    ASSERT_NE(io_, nullptr) << why;
    options_ = SmallOptions(SyncMode::kAlways);
  }
  std::shared_ptr<IoBackend> io_;
  grove::testing::TempDir dir_;
  WalOptions options_;
};

TEST_F(WalApiTest, OversizePayloadIsInvalidArgument) {
  StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr);
  ASSERT_TRUE(wal.ok());
  const size_t limit = options_.max_unsynced_bytes / 2;
  StatusOr<Lsn> too_big = (*wal)->Append(std::string(limit + 1, 'x'));
  ASSERT_EQ(too_big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.status().message().find(std::to_string(limit + 1)), std::string::npos);
  EXPECT_NE(too_big.status().message().find(std::to_string(limit)), std::string::npos);
  StatusOr<Lsn> at_limit = (*wal)->Append(std::string(limit, 'y'));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().ToString();
  EXPECT_EQ(*at_limit, 1u);  // the rejected payload consumed no LSN
}

TEST_F(WalApiTest, AppendManyRefusesAnOversizePayloadAlone) {
  StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr);
  ASSERT_TRUE(wal.ok());
  const std::string big(options_.max_unsynced_bytes / 2 + 1, 'x');
  const std::vector<StatusOr<Lsn>> lsns = (*wal)->AppendMany({"a", big, "b"});
  ASSERT_EQ(lsns.size(), 3u);
  ASSERT_TRUE(lsns[0].ok());
  EXPECT_EQ(*lsns[0], 1u);
  EXPECT_EQ(lsns[1].status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(lsns[2].ok());
  EXPECT_EQ(*lsns[2], 2u);  // the refused record consumed no LSN
  ASSERT_TRUE((*wal)->Close().ok());
  EXPECT_EQ((*wal)->AppendMany({"c"})[0].status().code(), StatusCode::kUnavailable);
}

TEST_F(WalApiTest, RejectsBadOptions) {
  WalOptions o = options_;
  o.max_unsynced_bytes = 1000;
  EXPECT_EQ(Wal::Open(io_.get(), dir_.path(), o, 1, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  o = options_;
  o.segment_bytes = o.max_unsynced_bytes - 1;
  StatusOr<std::unique_ptr<Wal>> w = Wal::Open(io_.get(), dir_.path(), o, 1, nullptr);
  ASSERT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("segment_bytes"), std::string::npos);
  EXPECT_EQ(Wal::Open(io_.get(), dir_.path(), options_, 0, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(WalApiTest, OpenRefusesToWriteOverRecords) {
  {
    StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr);
    ASSERT_TRUE(wal.ok());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*wal)->Append("r").ok());
  }
  // next_lsn 1 or 3 would duplicate LSNs that are on disk.
  EXPECT_EQ(Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr).status().code(),
            StatusCode::kFailedPrecondition);

  // An empty segment named next_lsn (a crash right after Open) is replaced.
  StatusOr<std::unique_ptr<Wal>> second = Wal::Open(io_.get(), dir_.path(), options_, 6, nullptr);
  ASSERT_TRUE(second.ok());
  second->reset();  // closes; segment wal-6 stays empty
  StatusOr<std::unique_ptr<Wal>> third = Wal::Open(io_.get(), dir_.path(), options_, 6, nullptr);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  ASSERT_TRUE((*third)->Append("six").ok());
  third->reset();
  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.records.size(), 6u);
  EXPECT_EQ(r.records.back().second, "six");
  EXPECT_EQ(r.result.next_lsn, 7u);
  // A segment beyond next_lsn is refused too.
  EXPECT_EQ(Wal::Open(io_.get(), dir_.path(), options_, 5, nullptr).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(WalApiTest, ReplayOfAnEmptyDirectory) {
  Replayed r = ReplayAll(io_.get(), dir_.path(), 0, options_);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.result.next_lsn, 1u);
  EXPECT_EQ(r.result.records, 0u);
  r = ReplayAll(io_.get(), dir_.path(), 42, options_);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.result.next_lsn, 42u);
}

TEST_F(WalApiTest, ReplayStopsWithTheCallbacksError) {
  {
    StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr);
    ASSERT_TRUE(wal.ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE((*wal)->Append("r").ok());
  }
  int calls = 0;
  StatusOr<ReplayResult> r =
      Wal::Replay(io_.get(), dir_.path(), 1, options_, nullptr, [&](Lsn lsn, Slice) {
        ++calls;
        return lsn == 4 ? Status::Aborted("stop at 4") : Status::Ok();
      });
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_EQ(r.status().message(), "stop at 4");
  EXPECT_EQ(calls, 4);
}

// kBatch: the background thread makes appended records durable on its own.
// Under kAlways a record may opt out of the sync (a replicated write, durable in the Raft log): a
// group of such records is written without an fdatasync, and the next record that syncs, or
// Sync(), makes them durable with it.
TEST_F(WalApiTest, RecordsThatOptOutOfTheSyncRideOnTheNextSync) {
  StatusOr<std::unique_ptr<Wal>> opened = Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr);
  ASSERT_TRUE(opened.ok());
  Wal& wal = **opened;
  const uint64_t at_open = wal.GetStats().syncs;
  ASSERT_TRUE(wal.Append("one", /*sync=*/false).ok());
  const std::vector<bool> no_sync = {true, true};
  for (const StatusOr<Lsn>& lsn : wal.AppendMany({"two", "three"}, &no_sync)) {
    ASSERT_TRUE(lsn.ok());
  }
  EXPECT_EQ(wal.GetStats().syncs, at_open) << "no record asked for a sync";
  ASSERT_TRUE(wal.Append("four").ok());  // syncs, and the three before it with it
  EXPECT_EQ(wal.GetStats().syncs, at_open + 1);
  ASSERT_TRUE(wal.Sync().ok());
  EXPECT_EQ(wal.GetStats().syncs, at_open + 1) << "nothing was left to sync";
  ASSERT_TRUE(wal.Append("five", /*sync=*/false).ok());
  ASSERT_TRUE(wal.Sync().ok());
  EXPECT_EQ(wal.GetStats().syncs, at_open + 2);
  // A group mixing both syncs once, for the one that asked.
  const std::vector<bool> mixed = {true, false};
  for (const StatusOr<Lsn>& lsn : wal.AppendMany({"six", "seven"}, &mixed)) ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(wal.GetStats().syncs, at_open + 3);
  ASSERT_TRUE(wal.Close().ok());
  Replayed all = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  EXPECT_EQ(all.result.next_lsn, 8u);
}

TEST_F(WalApiTest, BatchModeSyncsInTheBackground) {
  options_.sync = SyncMode::kBatch;
  StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(io_.get(), dir_.path(), options_, 1, nullptr);
  ASSERT_TRUE(wal.ok());
  ASSERT_TRUE((*wal)->Append("batched").ok());
  // Wait for the condition (a sync happened), not for a time; the deadline only bounds a failure.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*wal)->GetStats().syncs == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_GE((*wal)->GetStats().syncs, 1u);
}

}  // namespace
}  // namespace grove::wal
