// Key sketches (key_sketch.h): what a sketch counts on databases of known shape, its encoding
// and the damage its decoder finds, and a trace that carries one.

#include "trace/key_sketch.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "trace/trace_file.h"

namespace grove::trace {
namespace {

std::string Key(uint64_t v) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(v >> (56 - 8 * i));
  return k;
}

// An iterator over a sorted set of keys, honouring the ScanOptions a sketch uses.
class SetIterator final : public Iterator {
 public:
  SetIterator(const std::set<std::string>& keys, const ScanOptions& o) : o_(o) {
    for (auto it = keys.lower_bound(o.lower); it != keys.end(); ++it) {
      if (o.has_upper && !(*it < o.upper)) break;
      order_.push_back(*it);
    }
    if (o.reverse) std::reverse(order_.begin(), order_.end());
  }
  bool Valid() const override { return pos_ < order_.size(); }
  void Next() override { ++pos_; }
  Slice key() const override { return order_[pos_]; }
  Slice value() const override { return Slice(); }
  Status status() const override { return Status::Ok(); }

 private:
  ScanOptions o_;
  std::vector<std::string> order_;
  size_t pos_ = 0;
};

struct FakeDb {
  std::set<std::string> keys;
  int opened = 0;
  CursorFactory Factory() {
    return [this](const ScanOptions& o) -> StatusOr<std::unique_ptr<Iterator>> {
      ++opened;
      return std::unique_ptr<Iterator>(new SetIterator(keys, o));
    };
  }
};

TEST(KeySketchTest, DenseKeysAreCountedExactly) {
  FakeDb db;
  for (uint64_t i = 0; i < 100'000; ++i) db.keys.insert(Key(5'000 + i));
  auto s = SketchKeys(db.Factory(), 256, 32, /*max_cells=*/256);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->counts.size(), 256u);
  ASSERT_EQ(s->bounds.size(), 257u);
  EXPECT_EQ(s->bounds.front(), Key(5'000));
  EXPECT_EQ(s->bounds.back(), Key(104'999));
  EXPECT_TRUE(std::is_sorted(s->bounds.begin(), s->bounds.end()));
  // Dense keys extrapolate exactly; each cell's count is within a key of its width.
  EXPECT_NEAR(static_cast<double>(s->Entries()), 100'000, 300);
  // Two iterators for the ends and one per cell, whatever the size.
  EXPECT_EQ(db.opened, 2 + 256);

  // Refined up to 1024 cells: the largest are cut again, the total stays.
  db.opened = 0;
  auto r = SketchKeys(db.Factory(), 256, 32, 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->counts.size(), 256u);
  EXPECT_LE(r->counts.size(), 1024u);
  EXPECT_TRUE(std::is_sorted(r->bounds.begin(), r->bounds.end()));
  EXPECT_NEAR(static_cast<double>(r->Entries()), 100'000, 300);
  // The two ends, a count per cell, and per cut (one cell into 16) a last key and 16 counts.
  EXPECT_LE(db.opened, 2 + 256 + 17 * ((1024 - 256) / 15));
}

// Keys under long prefixes (two "tables" and a stray key): a cell of the whole range holds a
// table whose keys all project alike, so the sketch cuts it again between the table's own first
// and last keys until the count is resolved.
TEST(KeySketchTest, TablesUnderLongPrefixesAreResolved) {
  FakeDb db;
  for (uint64_t i = 0; i < 50'000; ++i) db.keys.insert("order:" + Key(i));
  for (uint64_t i = 0; i < 20'000; ++i) db.keys.insert("user:" + Key(i * 3));
  db.keys.insert("zebra");
  auto s = SketchKeys(db.Factory());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(std::is_sorted(s->bounds.begin(), s->bounds.end()));
  EXPECT_NEAR(static_cast<double>(s->Entries()), 70'001, 3'500);
  // The cells that meet the order table hold no other keys (the users sort far after it).
  uint64_t orders = 0;
  size_t order_cells = 0;
  for (size_t i = 0; i < s->counts.size(); ++i) {
    if (s->bounds[i] < "order;" && s->bounds[i + 1] > "order:") {
      orders += s->counts[i];
      ++order_cells;
    }
  }
  EXPECT_NEAR(static_cast<double>(orders), 50'000, 2'500);
  EXPECT_GT(order_cells, 8u);
}

TEST(KeySketchTest, ADatabaseThatChangesUnderTheSketchIsNotSketched) {
  // The forward look finds "m", the reverse one (after the keys went) "c".
  std::set<std::string> before = {"m", "n"}, after = {"b", "c"};
  CursorFactory open = [&](const ScanOptions& o) -> StatusOr<std::unique_ptr<Iterator>> {
    return std::unique_ptr<Iterator>(new SetIterator(o.reverse ? after : before, o));
  };
  EXPECT_EQ(SketchKeys(open).status().code(), StatusCode::kAborted);
}

TEST(KeySketchTest, AColdRangeKeepsItsShare) {
  // 90% of the keys in the first tenth of the range, the rest spread over the other nine tenths.
  FakeDb db;
  for (uint64_t i = 0; i < 90'000; ++i) db.keys.insert(Key(i));
  for (uint64_t i = 0; i < 10'000; ++i) db.keys.insert(Key(100'000 + i * 90));
  auto s = SketchKeys(db.Factory(), 100, 16);
  ASSERT_TRUE(s.ok());
  uint64_t first_tenth = 0;
  for (size_t i = 0; i < s->counts.size(); ++i) {
    if (s->bounds[i + 1] <= Key(90'000)) first_tenth += s->counts[i];
  }
  const double share = static_cast<double>(first_tenth) / static_cast<double>(s->Entries());
  EXPECT_NEAR(share, 0.9, 0.03);
  EXPECT_NEAR(static_cast<double>(s->Entries()), 100'000, 3'000);
}

TEST(KeySketchTest, SmallAndEmptyDatabases) {
  FakeDb empty;
  auto e = SketchKeys(empty.Factory());
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->bounds.empty());
  EXPECT_EQ(e->Entries(), 0u);

  FakeDb one;
  one.keys.insert("only");
  auto o = SketchKeys(one.Factory());
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->counts.size(), 1u);
  EXPECT_EQ(o->counts[0], 1u);
  EXPECT_EQ(o->bounds, (std::vector<std::string>{"only", "only"}));

  // Fewer projection units than cells: one cell per unit; keys of any length.
  FakeDb few;
  const std::string zeros(7, '\0');
  for (const std::string& k : {std::string("ab"), "ab" + zeros + "\x01", "ab" + zeros + "\x02zzz",
                               "ab" + zeros + "\x03"}) {
    few.keys.insert(k);
  }
  auto f = SketchKeys(few.Factory(), 256, 32);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->Entries(), 4u);
  EXPECT_EQ(f->counts.size(), 3u);

  FakeDb bad;
  EXPECT_EQ(SketchKeys(bad.Factory(), 0, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SketchKeys(bad.Factory(), 16, 1, 8).status().code(), StatusCode::kInvalidArgument);
}

TEST(KeySketchTest, EncodingRoundTripsAndDamageIsFound) {
  FakeDb db;
  for (uint64_t i = 0; i < 5'000; ++i) db.keys.insert("user/" + Key(i * 7));
  auto s = SketchKeys(db.Factory(), 64, 8);
  ASSERT_TRUE(s.ok());
  std::string bytes;
  EncodeKeySketch(*s, &bytes);
  KeySketch back;
  ASSERT_TRUE(DecodeKeySketch(bytes, &back).ok());
  EXPECT_EQ(back, *s);

  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    EXPECT_EQ(DecodeKeySketch(Slice(bytes.data(), cut), &back).code(), StatusCode::kDataLoss)
        << cut;
  }
  EXPECT_EQ(DecodeKeySketch(bytes + "x", &back).code(), StatusCode::kDataLoss);
  KeySketch swapped = *s;
  std::swap(swapped.bounds[3], swapped.bounds[4]);
  std::string swapped_bytes;
  EncodeKeySketch(swapped, &swapped_bytes);
  EXPECT_EQ(DecodeKeySketch(swapped_bytes, &back).code(), StatusCode::kDataLoss);

  KeySketch huge = *s;
  huge.counts[0] = kMaxSketchCellCount + 1;
  std::string huge_bytes;
  EncodeKeySketch(huge, &huge_bytes);
  EXPECT_EQ(DecodeKeySketch(huge_bytes, &back).code(), StatusCode::kDataLoss);

  std::string empty;
  EncodeKeySketch(KeySketch(), &empty);
  ASSERT_TRUE(DecodeKeySketch(empty, &back).ok());
  EXPECT_TRUE(back.bounds.empty());
}

TEST(KeySketchTest, ATraceCarriesItsSketch) {
  testing::TempDir dir;
  FakeDb db;
  for (uint64_t i = 0; i < 1'000; ++i) db.keys.insert(Key(i * 3));
  auto s = SketchKeys(db.Factory(), 16, 8);
  ASSERT_TRUE(s.ok());
  const std::string path = dir.path() + "/t.trace";
  Header h;
  h.sample_ppm = 1'000'000;
  {
    auto w = TraceWriter::Create(path, h, 1 << 20, kDefaultBlockBytes, &*s);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    Record r;
    r.op = Op::kGet;
    r.entries.push_back({Key(9), false, 0});
    ASSERT_TRUE((*w)->Add(r).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  {
    auto r = TraceReader::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)->header().flags & header_flags::kKeySketch);
    ASSERT_NE((*r)->sketch(), nullptr);
    EXPECT_EQ(*(*r)->sketch(), *s);
    Record rec;
    auto more = (*r)->Next(&rec);
    ASSERT_TRUE(more.ok() && *more);
    EXPECT_EQ(rec.entries[0].key, Key(9));
    more = (*r)->Next(&rec);
    ASSERT_TRUE(more.ok());
    EXPECT_FALSE(*more);
  }
  // A flipped byte in the sketch's block is damage, named at open.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[kHeaderBytes + kBlockHeaderBytes + 5] ^= 0x10;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(TraceReader::Open(path).status().code(), StatusCode::kDataLoss);
  // A trace written without one says so.
  const std::string plain = dir.path() + "/plain.trace";
  {
    auto w = TraceWriter::Create(plain, h, 1 << 20);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto r = TraceReader::Open(plain);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->sketch(), nullptr);
}

}  // namespace
}  // namespace grove::trace
