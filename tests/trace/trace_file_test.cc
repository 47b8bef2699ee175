// The trace file format (docs/formats/trace.md): records come back as written, across blocks;
// damage is found and named; a file cut short yields its whole blocks; the size cap drops
// records whole.

#include "trace/trace_file.h"

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "testutil/temp_dir.h"
#include "util/crc32c.h"

namespace grove::trace {
namespace {

std::vector<Record> SampleRecords(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Record> out;
  uint64_t micros = 0;
  for (int i = 0; i < n; ++i) {
    Record r;
    micros += rng() % 5000;
    r.micros = micros;
    r.op = static_cast<Op>(1 + rng() % kMaxOp);
    r.code = static_cast<uint8_t>(rng() % 17);
    const int entries = r.op == Op::kBatchGet || r.op == Op::kBatchInsert ? 1 + rng() % 20
                        : r.op == Op::kScan || r.op == Op::kDeleteRange   ? 2
                                                                          : 1;
    for (int e = 0; e < entries; ++e) {
      Entry entry;
      entry.key.resize(rng() % 40);  // empty keys too (an open scan end)
      for (char& c : entry.key) c = static_cast<char>(rng());
      entry.has_value = (r.op == Op::kPut) || (r.op == Op::kBatchInsert && rng() % 2 == 0);
      if (entry.has_value) entry.value_size = rng() % 3 == 0 ? 0 : rng() % 100'000;
      r.entries.push_back(std::move(entry));
    }
    if (r.op == Op::kPut && rng() % 3 == 0) {
      r.flags =
          record_flags::kPrecondition | ((1 + rng() % 3) << record_flags::kPreconditionKindShift);
    }
    if (r.op == Op::kScan && rng() % 2 == 0) r.flags = record_flags::kReverse;
    r.arg = r.op == Op::kScan || r.op == Op::kDeleteRange ? rng() % 10'000 : 0;
    r.result = rng() % 1000;
    out.push_back(std::move(r));
  }
  return out;
}

void WriteAll(const std::string& path, const std::vector<Record>& records, size_t block_bytes,
              uint64_t max_bytes = 1ull << 40) {
  Header h;
  h.sample_ppm = 10'000;
  h.start_unix_micros = 1'700'000'000'000'000ull;
  auto w = TraceWriter::Create(path, h, max_bytes, block_bytes);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (const Record& r : records) ASSERT_TRUE((*w)->Add(r).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

// Reads every record; the status of the first failure, if any.
Status ReadAll(const std::string& path, std::vector<Record>* out, bool* truncated = nullptr) {
  GROVE_ASSIGN_OR_RETURN(auto reader, TraceReader::Open(path));
  Record r;
  for (;;) {
    GROVE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) break;
    out->push_back(r);
  }
  if (truncated != nullptr) *truncated = reader->truncated();
  return Status::Ok();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(TraceFileTest, RecordsComeBackAsWrittenAcrossBlocks) {
  testing::TempDir dir;
  for (size_t block : {size_t{1}, size_t{300}, kDefaultBlockBytes}) {
    const std::string path = dir.Sub("t" + std::to_string(block));
    const std::vector<Record> records = SampleRecords(2000, static_cast<uint32_t>(block));
    WriteAll(path, records, block);
    auto reader = TraceReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    EXPECT_EQ((*reader)->header().sample_ppm, 10'000u);
    EXPECT_EQ((*reader)->header().start_unix_micros, 1'700'000'000'000'000ull);
    std::vector<Record> back;
    ASSERT_TRUE(ReadAll(path, &back).ok());
    ASSERT_EQ(back.size(), records.size()) << "block " << block;
    for (size_t i = 0; i < records.size(); ++i) ASSERT_EQ(back[i], records[i]) << i;
  }
}

TEST(TraceFileTest, TimeDoesNotGoBack) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  std::vector<Record> records(3);
  records[0].micros = 100;
  records[1].micros = 50;  // taken as 100
  records[2].micros = 400;
  for (Record& r : records) r.entries.push_back({"k", false, 0});
  WriteAll(path, records, 64);
  std::vector<Record> back;
  ASSERT_TRUE(ReadAll(path, &back).ok());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].micros, 100u);
  EXPECT_EQ(back[2].micros, 400u);
}

TEST(TraceFileTest, EveryFlippedByteIsFound) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  WriteAll(path, SampleRecords(40, 7), 256);
  const std::string good = ReadFile(path);
  std::vector<Record> expected;
  ASSERT_TRUE(ReadAll(path, &expected).ok());
  for (size_t at = 0; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] ^= 0x20;
    WriteFile(path, bad);
    std::vector<Record> back;
    bool truncated = false;
    const Status s = ReadAll(path, &back, &truncated);
    // A flipped size may make the last block look cut short; that is reported as truncation
    // and yields fewer records. Anything else must be an error.
    if (s.ok()) {
      EXPECT_TRUE(truncated) << "a flip at byte " << at << " went unnoticed";
      EXPECT_LT(back.size(), expected.size()) << at;
    } else {
      EXPECT_TRUE(s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kInvalidArgument)
          << at << ": " << s.ToString();
    }
  }
}

TEST(TraceFileTest, AFileCutShortYieldsItsWholeBlocks) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  const std::vector<Record> records = SampleRecords(500, 3);
  WriteAll(path, records, 512);
  const std::string good = ReadFile(path);
  size_t last = 0;
  for (size_t cut = kHeaderBytes; cut < good.size(); cut += 97) {
    WriteFile(path, good.substr(0, cut));
    std::vector<Record> back;
    bool truncated = false;
    ASSERT_TRUE(ReadAll(path, &back, &truncated).ok()) << cut;
    EXPECT_LE(back.size(), records.size());
    EXPECT_GE(back.size(), last) << "a longer prefix gave fewer records";
    last = back.size();
    for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], records[i]);
  }
}

TEST(TraceFileTest, TheEndAndDamageAreSticky) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  WriteAll(path, SampleRecords(30, 5), 128);
  {
    auto reader = TraceReader::Open(path);
    ASSERT_TRUE(reader.ok());
    Record r;
    int n = 0;
    while (*(*reader)->Next(&r)) ++n;
    EXPECT_EQ(n, 30);
    for (int i = 0; i < 3; ++i) {
      auto more = (*reader)->Next(&r);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      EXPECT_FALSE(*more);
    }
  }
  std::string bytes = ReadFile(path);
  bytes[kHeaderBytes + kBlockHeaderBytes + 2] ^= 0x01;  // inside the first block's payload
  WriteFile(path, bytes);
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  Record r;
  const auto first = (*reader)->Next(&r);
  ASSERT_FALSE(first.ok());
  const auto again = (*reader)->Next(&r);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().ToString(), first.status().ToString());
}

TEST(TraceFileTest, RecordsLargerThanABlockStartTheirOwn) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  std::vector<Record> records(3);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].op = Op::kBatchGet;
    // Two of these would pass the 64 MiB a reader accepts in one block.
    records[i].entries.push_back({std::string(40 << 20, static_cast<char>('a' + i)), false, 0});
  }
  WriteAll(path, records, kMaxBlockBytes);
  std::vector<Record> back;
  ASSERT_TRUE(ReadAll(path, &back).ok());
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], records[i]);
}

TEST(TraceFileTest, NotATraceAndOtherVersionsAreRefusedByName) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  WriteFile(path, "hello, this is not a trace file at all......");
  auto r = TraceReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a Grove trace"), std::string::npos);

  WriteAll(path + "2", SampleRecords(3, 1), 64);
  std::string bytes = ReadFile(path + "2");
  bytes[8] = 2;  // version 2, checksum fixed up so only the version differs
  const uint32_t crc = crc32c::Mask(crc32c::Value(bytes.data(), 28));
  std::memcpy(bytes.data() + 28, &crc, 4);
  WriteFile(path + "2", bytes);
  r = TraceReader::Open(path + "2");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("version 2"), std::string::npos) << r.status().ToString();

  // Header flags: the known one comes back, an unknown one is refused.
  bytes = ReadFile(path + "2");
  bytes[8] = 1;
  bytes[10] = static_cast<char>(header_flags::kKeysHashed);
  uint32_t fixed = crc32c::Mask(crc32c::Value(bytes.data(), 28));
  std::memcpy(bytes.data() + 28, &fixed, 4);
  WriteFile(path + "3", bytes);
  r = TraceReader::Open(path + "3");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->header().flags, header_flags::kKeysHashed);
  bytes[10] = 0x40;
  fixed = crc32c::Mask(crc32c::Value(bytes.data(), 28));
  std::memcpy(bytes.data() + 28, &fixed, 4);
  WriteFile(path + "4", bytes);
  r = TraceReader::Open(path + "4");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("flags"), std::string::npos) << r.status().ToString();
}

TEST(TraceFileTest, TheSizeCapDropsRecordsWhole) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  const std::vector<Record> records = SampleRecords(1000, 11);
  Header h;
  auto w = TraceWriter::Create(path, h, 4096, 512);
  ASSERT_TRUE(w.ok());
  uint64_t dropped = 0;
  for (const Record& r : records) {
    const Status s = (*w)->Add(r);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
      ++dropped;
    }
  }
  EXPECT_EQ((*w)->records_dropped(), dropped);
  EXPECT_GT(dropped, 0u);
  const uint64_t written = (*w)->records_written();
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_LE(std::filesystem::file_size(path), 4096u);
  std::vector<Record> back;
  ASSERT_TRUE(ReadAll(path, &back).ok());
  EXPECT_EQ(back.size(), written);
}

// A block the file system refuses (here past RLIMIT_FSIZE, as a full disk would) is not counted
// as written: its records move to dropped, and the writer takes no more.
TEST(TraceFileTest, ABlockThatFailsToWriteIsCountedAsDropped) {
  testing::TempDir dir;
  const std::string path = dir.Sub("t");
  const std::vector<Record> records = SampleRecords(400, 5);
  auto w = TraceWriter::Create(path, Header{}, 1 << 20, 512);
  ASSERT_TRUE(w.ok());
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Status failure;
  size_t offered = 0;
  for (const Record& r : records) {
    ++offered;
    failure = (*w)->Add(r);
    if (!failure.ok()) break;
  }
  if (failure.ok()) failure = (*w)->Flush();
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(failure.ok()) << "4 KiB cannot hold 400 records";
  EXPECT_TRUE((*w)->failed());
  EXPECT_EQ((*w)->Add(records[0]).code(), failure.code()) << "no more records after a failure";
  ++offered;
  (void)(*w)->Close();
  std::vector<Record> back;
  (void)ReadAll(path, &back);  // the tail may be cut short; whole blocks come back
  EXPECT_EQ((*w)->records_written(), back.size()) << "written counts what is in the file";
  EXPECT_EQ((*w)->records_flushed(), back.size());
  EXPECT_GT((*w)->records_dropped(), 0u);
  EXPECT_EQ((*w)->records_written() + (*w)->records_dropped(), offered)
      << "every record offered is either in the file or dropped";
}

TEST(TraceFileTest, BadArgumentsAreRefused) {
  testing::TempDir dir;
  Header h;
  EXPECT_EQ(TraceWriter::Create(dir.Sub("a"), h, 10).status().code(), StatusCode::kInvalidArgument);
  h.sample_ppm = 0;
  EXPECT_EQ(TraceWriter::Create(dir.Sub("b"), h, 1 << 20).status().code(),
            StatusCode::kInvalidArgument);
  h.sample_ppm = 1;
  ASSERT_TRUE(TraceWriter::Create(dir.Sub("c"), h, 1 << 20).ok());
  EXPECT_EQ(TraceWriter::Create(dir.Sub("c"), h, 1 << 20).status().code(),
            StatusCode::kAlreadyExists)
      << "a trace never overwrites another";
  auto w = TraceWriter::Create(dir.Sub("d"), h, 1 << 20);
  ASSERT_TRUE(w.ok());
  Record r;
  r.op = static_cast<Op>(9);
  EXPECT_EQ((*w)->Add(r).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace grove::trace
