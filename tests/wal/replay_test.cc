// Wal::Replay on damaged logs: torn tails (dropped and repaired), mid-log corruption and LSN
// errors (kDataLoss), and skipping segments below the redo point.

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "util/coding.h"
#include "wal/log_reader.h"
#include "wal/log_writer.h"
#include "wal/segment.h"
#include "wal/wal.h"
#include "wal/wal_test_util.h"

namespace grove::wal {
namespace {

using testing::MakeBackend;
using testing::MakePayload;
using testing::ReplayAll;
using testing::Replayed;

class WalReplayTest : public ::testing::TestWithParam<IoBackendKind> {
 protected:
  void SetUp() override {
    std::string why;
    io_ = MakeBackend(GetParam(), &why);
    if (io_ == nullptr) GTEST_SKIP() << "backend unavailable: " << why;
    options_.sync = SyncMode::kAlways;
    options_.max_unsynced_bytes = 64 << 10;
    options_.segment_bytes = 1 << 20;
  }

  // Appends `payloads` in a fresh Wal at `first` and closes it; returns each record's
  // [start, end) byte range within its segment (valid while everything fits in one segment).
  std::vector<std::pair<uint64_t, uint64_t>> Write(const std::vector<std::string>& payloads,
                                                   Lsn first = 1) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    StatusOr<std::unique_ptr<Wal>> wal =
        Wal::Open(io_.get(), dir_.path(), options_, first, nullptr);
    EXPECT_TRUE(wal.ok()) << wal.status().ToString();
    if (!wal.ok()) return ranges;
    for (const std::string& p : payloads) {
      const uint64_t start = (*wal)->appended_bytes();
      EXPECT_TRUE((*wal)->Append(p).ok());
      ranges.emplace_back(start, (*wal)->appended_bytes());
    }
    EXPECT_TRUE((*wal)->Close().ok());
    return ranges;
  }

  std::string Path(Lsn first) const { return dir_.path() + "/" + SegmentFileName(first); }

  std::string ReadBytes(const std::string& path) {
    StatusOr<std::unique_ptr<File>> f = io_->OpenFile(path, FileOptions{.read_only = true});
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok()) return "";
    std::string bytes(*(*f)->Size(), '\0');
    size_t n = 0;
    EXPECT_TRUE((*f)->Read(0, bytes.size(), bytes.data(), &n).ok());
    bytes.resize(n);
    return bytes;
  }

  void WriteBytes(const std::string& path, const std::string& bytes) {
    StatusOr<std::unique_ptr<File>> f = io_->OpenFile(path, FileOptions{.create = true});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->Truncate(0).ok());
    ASSERT_TRUE((*f)->Write(0, bytes).ok());
  }

  // Writes a segment by hand with the given LSNs (for LSN errors the Wal never makes).
  void WriteSegment(Lsn name, const std::vector<Lsn>& lsns) {
    std::string bytes;
    LogWriter writer;
    for (Lsn lsn : lsns) {
      std::string record(kLsnSize, '\0');
      EncodeFixed64(record.data(), lsn);
      record += "payload-" + std::to_string(lsn);
      writer.AddRecord(record, &bytes);
    }
    WriteBytes(Path(name), bytes);
  }

  std::shared_ptr<IoBackend> io_;
  grove::testing::TempDir dir_;
  WalOptions options_;
};

// The last record is damaged at every byte offset, three ways: the file cut there, one byte
// changed there, or everything from there zeroed. Replay returns exactly the records before it,
// repairs the tail, and a second replay is clean. The last record crosses a block boundary.
TEST_P(WalReplayTest, TornTailAtEveryOffsetOfTheLastRecord) {
  std::vector<std::string> payloads = {"alpha", "beta"};
  payloads.push_back(std::string(kBlockSize - 100 - 20 - 19 - 15, 'f'));  // ends 100 bytes early
  payloads.push_back(MakePayload("last", 4, 300));
  const auto ranges = Write(payloads);
  ASSERT_EQ(ranges.size(), 4u);
  const auto [start, end] = ranges.back();
  ASSERT_EQ(start, kBlockSize - 100);
  ASSERT_GT(end, kBlockSize);

  const std::string path = Path(1);
  const std::string original = ReadBytes(path);
  ASSERT_EQ(original.size(), end);

  enum Damage { kCut, kFlip, kZeroFrom };
  for (Damage damage : {kCut, kFlip, kZeroFrom}) {
    for (uint64_t k = start; k < end; ++k) {
      SCOPED_TRACE(::testing::Message() << "damage " << damage << " at offset " << k);
      std::string bytes = original;
      if (damage == kCut) bytes.resize(k);
      if (damage == kFlip) bytes[k] ^= 0x5a;
      if (damage == kZeroFrom) std::fill(bytes.begin() + k, bytes.end(), '\0');
      WriteBytes(path, bytes);

      Replayed first = ReplayAll(io_.get(), dir_.path(), 1, options_);
      ASSERT_TRUE(first.status.ok()) << first.status.ToString();
      ASSERT_EQ(first.records.size(), 3u);
      for (size_t i = 0; i < 3; ++i) ASSERT_EQ(first.records[i].second, payloads[i]);
      ASSERT_EQ(first.result.next_lsn, 4u);
      const bool clean_cut = k == start && damage != kFlip;
      ASSERT_EQ(first.result.torn_tail, !clean_cut);
      if (!clean_cut) {
        ASSERT_GT(first.result.torn_tail_bytes, 0u);
      }

      Replayed second = ReplayAll(io_.get(), dir_.path(), 1, options_);
      ASSERT_TRUE(second.status.ok()) << second.status.ToString();
      ASSERT_FALSE(second.result.torn_tail);
      ASSERT_EQ(second.records, first.records);
      if (!clean_cut) {
        ASSERT_EQ(ReadBytes(path).size(), start);  // truncated to the last record
      }
    }
  }

  // After a repair the log continues at the right LSN.
  std::string bytes = original;
  bytes[end - 1] ^= 1;
  WriteBytes(path, bytes);
  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok());
  Write({"continued"}, r.result.next_lsn);
  Replayed after = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(after.status.ok()) << after.status.ToString();
  ASSERT_EQ(after.records.size(), 4u);
  EXPECT_EQ(after.records.back(), std::make_pair(Lsn{4}, std::string("continued")));
}

// A bit flip in an early record with far more than max_unsynced_bytes of valid records after it
// cannot be a torn tail: the record had been synced.
TEST_P(WalReplayTest, BitFlipInAnEarlyRecordIsDataLoss) {
  std::vector<std::string> payloads;
  for (int i = 0; i < 300; ++i) payloads.push_back(MakePayload("p", i, 1000));
  const auto ranges = Write(payloads);
  const std::string path = Path(1);
  std::string bytes = ReadBytes(path);
  const uint64_t at = ranges[2].first + kHeaderSize + kLsnSize + 10;
  bytes[at] ^= 0x08;
  WriteBytes(path, bytes);

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_EQ(r.status.code(), StatusCode::kDataLoss) << r.status.ToString();
  const std::string message(r.status.message());
  EXPECT_NE(message.find("corrupt record at " + path + ":" + std::to_string(ranges[2].first)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("refusing to open"), std::string::npos);
  EXPECT_EQ(r.records.size(), 2u);    // never the damaged record, never anything after it
  EXPECT_EQ(ReadBytes(path), bytes);  // nothing repaired
}

// The same flip within max_unsynced_bytes of the end is a torn tail: the records after it may have
// been unsynced writes that only partly reached the disk.
TEST_P(WalReplayTest, BitFlipNearTheEndIsATornTail) {
  std::vector<std::string> payloads;
  for (int i = 0; i < 300; ++i) payloads.push_back(MakePayload("p", i, 1000));
  const auto ranges = Write(payloads);
  const std::string path = Path(1);
  std::string bytes = ReadBytes(path);
  const size_t victim = 280;  // about 20 KiB before the end
  bytes[ranges[victim].first + kHeaderSize + 3] ^= 0x01;
  WriteBytes(path, bytes);

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.result.torn_tail);
  ASSERT_EQ(r.records.size(), victim);
  EXPECT_EQ(r.result.next_lsn, victim + 1);
  EXPECT_EQ(ReadBytes(path).size(), ranges[victim].first);
}

// Zeros in the middle of the tail (a lost sector) followed by records written after it, all within
// the unsynced bound: a torn tail, repaired.
TEST_P(WalReplayTest, ZerosFollowedByDataIsATornTail) {
  std::vector<std::string> payloads;
  for (int i = 0; i < 10; ++i) payloads.push_back(MakePayload("z", i, 200));
  const auto ranges = Write(payloads);
  const std::string path = Path(1);
  std::string bytes = ReadBytes(path);
  std::fill(bytes.begin() + ranges[7].first, bytes.begin() + ranges[7].second, '\0');
  WriteBytes(path, bytes);

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.result.torn_tail);
  EXPECT_EQ(r.records.size(), 7u);
  Replayed again = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(again.status.ok());
  EXPECT_FALSE(again.result.torn_tail);
  EXPECT_EQ(again.records.size(), 7u);
}

// A torn tail followed by a later segment holding only garbage: the garbage segment is deleted.
TEST_P(WalReplayTest, TornTailDeletesLaterGarbageSegments) {
  std::vector<std::string> payloads;
  for (int i = 0; i < 10; ++i) payloads.push_back(MakePayload("g", i, 100));
  const auto ranges = Write(payloads);
  std::string bytes = ReadBytes(Path(1));
  bytes[ranges[9].first + 2] ^= 0x10;
  WriteBytes(Path(1), bytes);
  std::string garbage(5000, '\0');
  std::mt19937 rng(3);
  for (char& c : garbage) c = static_cast<char>(rng());
  WriteBytes(Path(11), garbage);

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.result.torn_tail);
  EXPECT_EQ(r.records.size(), 9u);
  EXPECT_EQ(r.result.next_lsn, 10u);
  EXPECT_FALSE(io_->FileExists(Path(11)));
  EXPECT_GE(r.result.torn_tail_bytes, garbage.size());
}

// A bad record at the end of a segment that a later segment follows with valid records: the roll
// had synced that segment, so this is corruption however close the bad record is to the end.
TEST_P(WalReplayTest, CorruptionBeforeALaterSegmentIsDataLoss) {
  options_.segment_bytes = 128 << 10;
  std::vector<std::string> payloads;
  for (int i = 0; i < 300; ++i) payloads.push_back(MakePayload("s", i, 1000));
  Write(payloads);
  StatusOr<std::vector<SegmentRef>> segments = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(segments.ok());
  ASSERT_GE(segments->size(), 3u);
  // Damage the last record of the first segment.
  std::string bytes = ReadBytes((*segments)[0].path);
  uint64_t last_start = 0;
  {
    testing::StringFile file(bytes);
    LogReader reader(&file);
    LogReader::Result res;
    while (reader.Next(&res).ok() && res.kind == LogReader::Kind::kRecord) last_start = res.offset;
  }
  bytes[last_start + kHeaderSize + 1] ^= 0x20;
  WriteBytes((*segments)[0].path, bytes);

  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_EQ(r.status.code(), StatusCode::kDataLoss) << r.status.ToString();
  EXPECT_NE(r.status.message().find((*segments)[1].path), std::string::npos);
  EXPECT_EQ(ReadBytes((*segments)[0].path), bytes);  // not repaired
}

TEST_P(WalReplayTest, LsnGapOrDuplicateInASegmentIsDataLoss) {
  WriteSegment(1, {1, 2, 4, 5});
  Replayed gap = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_EQ(gap.status.code(), StatusCode::kDataLoss) << gap.status.ToString();
  EXPECT_NE(gap.status.message().find("LSN 4 where LSN 3 was expected"), std::string::npos);
  EXPECT_NE(gap.status.message().find(Path(1)), std::string::npos);

  WriteSegment(1, {1, 2, 2, 3});
  Replayed dup = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_EQ(dup.status.code(), StatusCode::kDataLoss) << dup.status.ToString();
  EXPECT_EQ(dup.records.size(), 2u);  // never a record twice
}

TEST_P(WalReplayTest, SegmentNameMustMatchItsFirstRecord) {
  WriteSegment(5, {1, 2, 3});
  Replayed early = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_EQ(early.status.code(), StatusCode::kDataLoss);  // LSNs 1..4 would be missing
  Replayed r = ReplayAll(io_.get(), dir_.path(), 5, options_);
  ASSERT_EQ(r.status.code(), StatusCode::kDataLoss) << r.status.ToString();
  EXPECT_NE(r.status.message().find("named for LSN 5 but its first record has LSN 1"),
            std::string::npos)
      << r.status.ToString();
}

TEST_P(WalReplayTest, LsnGapBetweenSegmentsIsDataLoss) {
  Write({"a", "b", "c"}, 1);
  Write({"e"}, 5);  // LSN 4 is missing
  Replayed r = ReplayAll(io_.get(), dir_.path(), 1, options_);
  ASSERT_EQ(r.status.code(), StatusCode::kDataLoss) << r.status.ToString();
  EXPECT_NE(r.status.message().find(Path(5)), std::string::npos);
  // From the second segment on, the log is whole.
  Replayed tail = ReplayAll(io_.get(), dir_.path(), 5, options_);
  ASSERT_TRUE(tail.status.ok()) << tail.status.ToString();
  EXPECT_EQ(tail.records.size(), 1u);
}

// Segments wholly below from_lsn are skipped by name: garbage in them does not matter.
TEST_P(WalReplayTest, SegmentsBelowTheRedoPointAreNotRead) {
  options_.segment_bytes = 128 << 10;
  std::vector<std::string> payloads;
  for (int i = 0; i < 300; ++i) payloads.push_back(MakePayload("k", i, 1000));
  Write(payloads);
  StatusOr<std::vector<SegmentRef>> segments = ListSegments(io_.get(), dir_.path());
  ASSERT_TRUE(segments.ok());
  ASSERT_GE(segments->size(), 3u);
  WriteBytes((*segments)[0].path, std::string(1000, '\x77'));

  const Lsn redo = (*segments)[1].first_lsn + 3;
  Replayed r = ReplayAll(io_.get(), dir_.path(), redo, options_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.result.segments, segments->size() - 1);
  EXPECT_EQ(r.records.front().first, redo);
  EXPECT_EQ(r.records.size(), payloads.size() - redo + 1);

  Replayed all = ReplayAll(io_.get(), dir_.path(), 1, options_);
  EXPECT_EQ(all.status.code(), StatusCode::kDataLoss) << all.status.ToString();
}

INSTANTIATE_TEST_SUITE_P(Backends, WalReplayTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         [](const ::testing::TestParamInfo<IoBackendKind>& info) {
                           return std::string(testing::BackendName(info.param));
                         });

}  // namespace
}  // namespace grove::wal
