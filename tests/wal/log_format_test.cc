// The physical log format: LogWriter framing, LogReader parsing, and the reader on damaged input.

#include "wal/log_format.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "util/coding.h"
#include "util/crc32c.h"
#include "wal/log_reader.h"
#include "wal/log_writer.h"
#include "wal/wal_test_util.h"

namespace grove::wal {
namespace {

using testing::StringFile;
using Kind = LogReader::Kind;

std::string Frame(const std::vector<std::string>& records, uint64_t start_offset = 0) {
  std::string out;
  LogWriter writer(start_offset);
  for (const std::string& r : records) writer.AddRecord(r, &out);
  return out;
}

struct ReadBack {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> ends;
  LogReader::Result stop;  // the first non-record result
};

ReadBack ReadAll(const std::string& bytes) {
  StringFile file(bytes);
  LogReader reader(&file);
  ReadBack out;
  LogReader::Result r;
  while (true) {
    EXPECT_TRUE(reader.Next(&r).ok());
    if (r.kind != Kind::kRecord) break;
    out.records.emplace_back(r.record);
    out.offsets.push_back(r.offset);
    out.ends.push_back(r.end);
  }
  out.stop = r;
  return out;
}

std::string Filled(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string MakeRecord(int i) { return Filled(50 + (i * 131) % 2000, 100 + i); }

TEST(WalFormatTest, HeaderLayoutMatchesTheDocumentation) {
  const std::string bytes = Frame({"hello"});
  ASSERT_EQ(bytes.size(), kHeaderSize + 5);
  EXPECT_EQ(DecodeFixed16(bytes.data() + 4), 5);
  EXPECT_EQ(static_cast<uint8_t>(bytes[6]), kFullType);
  const uint32_t crc = crc32c::Extend(crc32c::Value(bytes.data() + 6, 1), "hello", 5);
  EXPECT_EQ(crc32c::Unmask(DecodeFixed32(bytes.data())), crc);
  EXPECT_EQ(bytes.substr(kHeaderSize), "hello");
}

TEST(WalFormatTest, RoundTripsEmptyOneByteAndSmallRecords) {
  const std::vector<std::string> records = {"", "x", "", "hello world", std::string(1000, 'z')};
  const ReadBack back = ReadAll(Frame(records));
  EXPECT_EQ(back.records, records);
  EXPECT_EQ(back.stop.kind, Kind::kEof);
  EXPECT_EQ(back.offsets[0], 0u);
  EXPECT_EQ(back.ends[0], kHeaderSize);
  EXPECT_EQ(back.offsets[1], kHeaderSize);
}

TEST(WalFormatTest, RecordExactlyFillingABlock) {
  const std::string big = Filled(kBlockSize - kHeaderSize, 1);
  const std::string bytes = Frame({big, "next"});
  ASSERT_EQ(bytes.size(), kBlockSize + kHeaderSize + 4);
  EXPECT_EQ(static_cast<uint8_t>(bytes[6]), kFullType);
  const ReadBack back = ReadAll(bytes);
  ASSERT_EQ(back.records.size(), 2u);
  EXPECT_EQ(back.records[0], big);
  EXPECT_EQ(back.records[1], "next");
  EXPECT_EQ(back.offsets[1], kBlockSize);
}

TEST(WalFormatTest, RecordSpanningManyBlocks) {
  const std::string huge = Filled(5 * kBlockSize + 123, 2);
  const std::vector<std::string> records = {"a", huge, "b"};
  const std::string bytes = Frame(records);
  // First + 5 Middles + Last, or similar: at least six fragments.
  EXPECT_GE(bytes.size(), huge.size() + 6 * kHeaderSize);
  const ReadBack back = ReadAll(bytes);
  EXPECT_EQ(back.records, records);
  EXPECT_EQ(back.stop.kind, Kind::kEof);
  EXPECT_EQ(back.ends.back(), bytes.size());
}

// A record that ends `tail` bytes before the block end: a tail shorter than a header is zero-filled
// and the next record starts in the next block; a tail of exactly a header holds a (First) header.
TEST(WalFormatTest, BlockTailsOfEveryShortLength) {
  for (size_t tail = 0; tail <= kHeaderSize + 1; ++tail) {
    SCOPED_TRACE(tail);
    const std::string first = Filled(kBlockSize - kHeaderSize - tail, 3);
    const std::vector<std::string> records = {first, "second record", "third"};
    const std::string bytes = Frame(records);
    if (tail < kHeaderSize) {
      EXPECT_EQ(bytes.substr(kBlockSize - tail, tail), std::string(tail, '\0'));
      EXPECT_EQ(static_cast<uint8_t>(bytes[kBlockSize + 6]), kFullType);
    } else {
      EXPECT_EQ(static_cast<uint8_t>(bytes[kBlockSize - tail + 6]), kFirstType);
    }
    const ReadBack back = ReadAll(bytes);
    EXPECT_EQ(back.records, records);
    EXPECT_EQ(back.stop.kind, Kind::kEof);
  }
}

TEST(WalFormatTest, WriterStartingMidSegmentContinuesTheBlockLayout) {
  // Framing in two calls (as the WAL does, one group at a time) equals framing in one.
  const std::vector<std::string> a = {Filled(20000, 4), "x"};
  const std::vector<std::string> b = {Filled(30000, 5), ""};
  const std::string part1 = Frame(a);
  const std::string part2 = Frame(b, part1.size());
  std::vector<std::string> all = a;
  all.insert(all.end(), b.begin(), b.end());
  EXPECT_EQ(part1 + part2, Frame(all));
}

TEST(WalFormatTest, ZerosAfterTheDataAreACleanEnd) {
  const std::vector<std::string> records = {"one", "two"};
  std::string bytes = Frame(records);
  const size_t end = bytes.size();
  bytes.resize(3 * kBlockSize, '\0');  // preallocated space
  const ReadBack back = ReadAll(bytes);
  EXPECT_EQ(back.records, records);
  EXPECT_EQ(back.stop.kind, Kind::kZeros);
  EXPECT_EQ(back.stop.offset, end);

  // Reading on after the zeros finds nothing and reports where the data ended.
  StringFile file(bytes);
  LogReader reader(&file);
  LogReader::Result r;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(reader.Next(&r).ok());
    ASSERT_EQ(r.kind, Kind::kRecord);
  }
  do {
    ASSERT_TRUE(reader.Next(&r).ok());
    ASSERT_TRUE(r.kind == Kind::kZeros || r.kind == Kind::kEof);
  } while (r.kind != Kind::kEof);
  EXPECT_EQ(reader.data_end(), end);
}

TEST(WalFormatTest, DetectsChecksumLengthTypeAndSequenceErrors) {
  const std::string good = Frame({"aaaa", "bbbb", "cccc"});
  const size_t second = kHeaderSize + 4;
  {
    std::string bytes = good;
    bytes[second + kHeaderSize] ^= 1;  // payload bit flip
    const ReadBack back = ReadAll(bytes);
    EXPECT_EQ(back.records, std::vector<std::string>{"aaaa"});
    EXPECT_EQ(back.stop.kind, Kind::kBad);
    EXPECT_EQ(back.stop.offset, second);
    EXPECT_NE(back.stop.reason.find("checksum"), std::string::npos);
  }
  {
    std::string bytes = good;
    EncodeFixed16(bytes.data() + second + 4, 60000);  // length beyond the block
    const ReadBack back = ReadAll(bytes);
    EXPECT_EQ(back.stop.kind, Kind::kBad);
    EXPECT_EQ(back.stop.offset, second);
  }
  {
    std::string bytes = good;
    bytes[second + 6] = 9;  // unknown type
    const ReadBack back = ReadAll(bytes);
    EXPECT_EQ(back.stop.kind, Kind::kBad);
    EXPECT_NE(back.stop.reason.find("type"), std::string::npos);
  }
  {
    // A Last fragment with no First before it (properly checksummed).
    std::string bytes = Frame({"aaaa"});
    std::string orphan(kHeaderSize, '\0');
    orphan += "zz";
    orphan[6] = static_cast<char>(kLastType);
    EncodeFixed16(orphan.data() + 4, 2);
    EncodeFixed32(orphan.data(),
                  crc32c::Mask(crc32c::Extend(crc32c::Value(orphan.data() + 6, 1), "zz", 2)));
    bytes += orphan;
    const ReadBack back = ReadAll(bytes);
    EXPECT_EQ(back.records, std::vector<std::string>{"aaaa"});
    EXPECT_EQ(back.stop.kind, Kind::kBad);
    EXPECT_EQ(back.stop.offset, kHeaderSize + 4);
  }
}

TEST(WalFormatTest, BadFragmentReportsTheStartOfItsLogicalRecord) {
  const std::string big = Filled(2 * kBlockSize, 6);
  std::string bytes = Frame({"head", big});
  bytes[kBlockSize + kHeaderSize + 10] ^= 0x40;  // inside the Middle fragment
  const ReadBack back = ReadAll(bytes);
  EXPECT_EQ(back.records, std::vector<std::string>{"head"});
  EXPECT_EQ(back.stop.kind, Kind::kBad);
  EXPECT_EQ(back.stop.offset, kHeaderSize + 4);  // where "big" starts
}

// Every truncation of a small log that crosses a block boundary: the reader returns exactly the
// records that lie wholly before the cut, then stops, and never returns anything else.
TEST(WalFormatTest, EveryTruncationPoint) {
  std::vector<std::string> records;
  for (int i = 0; i < 12; ++i) records.push_back(Filled(37 * i, 10 + i));
  records.push_back(Filled(kBlockSize - 1000, 30));  // crosses into block 1
  for (int i = 0; i < 6; ++i) records.push_back(Filled(11 * i + 1, 40 + i));
  const std::string full = Frame(records);
  ASSERT_GT(full.size(), kBlockSize);
  const ReadBack whole = ReadAll(full);
  ASSERT_EQ(whole.records, records);

  for (size_t cut = 0; cut <= full.size(); ++cut) {
    StringFile file(full.substr(0, cut));
    LogReader reader(&file);
    LogReader::Result r;
    size_t n = 0;
    while (true) {
      ASSERT_TRUE(reader.Next(&r).ok());
      if (r.kind != Kind::kRecord) break;
      ASSERT_LT(n, records.size());
      ASSERT_EQ(r.record, records[n]) << "cut " << cut;
      ++n;
    }
    size_t complete = 0;
    while (complete < records.size() && whole.ends[complete] <= cut) ++complete;
    ASSERT_EQ(n, complete) << "cut " << cut;
    ASSERT_NE(r.kind, Kind::kZeros) << "cut " << cut;
    if (r.kind == Kind::kBad) {
      ASSERT_EQ(r.offset, whole.offsets[complete]) << "cut " << cut;
    }
    ASSERT_TRUE(reader.Next(&r).ok());
    ASSERT_EQ(r.kind, Kind::kEof) << "cut " << cut;
  }
}

// Random garbage: the reader terminates, reports no record (a forged crc32c is a 2^-32 event), and
// never reads out of bounds (the sanitizer builds check that).
TEST(WalFormatTest, RandomGarbageNeverYieldsARecord) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    const size_t size = rng() % (3 * kBlockSize);
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (iter % 3 == 0) {
      // Plausible headers: valid types and small lengths, wrong checksums.
      for (size_t p = 0; p + kHeaderSize < size; p += 1 + rng() % 200) {
        bytes[p + 6] = static_cast<char>(rng() % 5);
        EncodeFixed16(bytes.data() + p + 4, static_cast<uint16_t>(rng() % 300));
      }
    }
    StringFile file(bytes);
    LogReader reader(&file);
    LogReader::Result r;
    size_t steps = 0;
    do {
      ASSERT_TRUE(reader.Next(&r).ok());
      ASSERT_NE(r.kind, Kind::kRecord) << "iteration " << iter;
      ASSERT_LT(++steps, 1000u);  // progress: at most a few results per block
    } while (r.kind != Kind::kEof);
  }
}

// Garbage over parts of a valid log: every record returned is one that was written, in order.
TEST(WalFormatTest, DamagedLogYieldsOnlyWrittenRecordsInOrder) {
  std::mt19937_64 rng(11);
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) records.push_back(MakeRecord(i));
  for (int iter = 0; iter < 200; ++iter) {
    std::string bytes = Frame(records);
    const int damages = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < damages; ++d) {
      const size_t at = rng() % bytes.size();
      const size_t len = std::min<size_t>(bytes.size() - at, 1 + rng() % 64);
      for (size_t i = 0; i < len; ++i) bytes[at + i] = static_cast<char>(rng());
    }
    StringFile file(bytes);
    LogReader reader(&file);
    LogReader::Result r;
    size_t next = 0;  // records must come back in order, none twice
    size_t steps = 0;
    do {
      ASSERT_TRUE(reader.Next(&r).ok());
      if (r.kind == Kind::kRecord) {
        auto it = std::find(records.begin() + next, records.end(), std::string(r.record));
        ASSERT_NE(it, records.end()) << "iteration " << iter;
        next = static_cast<size_t>(it - records.begin()) + 1;
      }
      ASSERT_LT(++steps, 10000u);
    } while (r.kind != Kind::kEof);
  }
}

}  // namespace
}  // namespace grove::wal
