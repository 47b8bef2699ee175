// Damaged pages on disk are reported as DATA_LOSS (or a refusal to open), never returned as data:
// bit flips, zeroed pages, stale copies (lost writes) and misdirected writes, in leaves, inner
// nodes, blobs, the superblock and the manifest.

#include <filesystem>
#include <map>

#include <fcntl.h>
#include <unistd.h>

#include "engine/db_test_util.h"
#include "index/core/inner_node.h"
#include "index/core/leaf_node.h"
#include "page/page.h"

namespace grove::testing {
namespace {

constexpr uint64_t kKeys = 20000;

// Raw access to the data file of a closed database.
class RawFile {
 public:
  explicit RawFile(const std::string& path) : fd_(::open(path.c_str(), O_RDWR)) {
    EXPECT_GE(fd_, 0) << path;
  }
  ~RawFile() { ::close(fd_); }
  std::string ReadPage(PageId id) {
    std::string p(kPageSize, '\0');
    EXPECT_EQ(::pread(fd_, p.data(), kPageSize, static_cast<off_t>(id * kPageSize)),
              static_cast<ssize_t>(kPageSize));
    return p;
  }
  void WritePage(PageId id, const std::string& p) {
    ASSERT_EQ(::pwrite(fd_, p.data(), kPageSize, static_cast<off_t>(id * kPageSize)),
              static_cast<ssize_t>(kPageSize));
    ASSERT_EQ(::fsync(fd_), 0);
  }
  uint64_t Pages() { return static_cast<uint64_t>(::lseek(fd_, 0, SEEK_END)) / kPageSize; }

  // Pages of `type` with their first key (leaves and inner nodes).
  std::map<PageId, std::string> PagesOfType(PageType type) {
    std::map<PageId, std::string> out;
    for (PageId id = 2; id < Pages(); ++id) {
      const std::string p = ReadPage(id);
      if (page::Type(p.data()) != static_cast<uint16_t>(type) || !page::Verify(p.data(), id).ok()) {
        continue;
      }
      const SlottedPageView n(
          p.data(), type == core::kInnerPage ? core::kInnerSlotBase : core::kLeafSlotBase);
      // An inner node's first key is empty: its second names it.
      const int first = type == core::kInnerPage ? 1 : 0;
      out[id] = n.count() > first ? std::string(n.Key(first)) : "";
    }
    return out;
  }

 private:
  int fd_;
};

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Db::Open(Opts());
    ASSERT_TRUE(db.ok());
    for (uint64_t i = 0; i < kKeys; ++i) {
      ASSERT_OK((*db)->Put(Key(i), Value(i, 0, i % 500 == 0 ? 3000 : 16)));
    }
    ASSERT_OK((*db)->Close());
  }
  Options Opts() { return SmallOptions(dir_.path()); }
  std::string DataPath() { return dir_.Sub("grove.data"); }

  // Every key in the leaf that starts at `first_key`, read through the engine: the damaged leaf's
  // keys must fail with DATA_LOSS, never return a value.
  void ExpectDataLossFor(Db* db, const std::string& first_key) {
    std::string v;
    auto found = db->Get(first_key, &v);
    ASSERT_FALSE(found.ok()) << "damaged page returned data for its first key";
    EXPECT_EQ(found.status().code(), StatusCode::kDataLoss) << found.status().ToString();
  }

  void ExpectOthersIntact(Db* db, const std::string& damaged_first_key) {
    std::string v;
    size_t ok = 0;
    for (uint64_t i = 0; i < kKeys; i += 97) {
      auto found = db->Get(Key(i), &v);
      if (!found.ok()) {
        EXPECT_EQ(found.status().code(), StatusCode::kDataLoss);
        continue;
      }
      ASSERT_TRUE(*found);
      ASSERT_EQ(v, Value(i, 0, i % 500 == 0 ? 3000 : 16));
      ++ok;
    }
    EXPECT_GT(ok, 150u);
  }

  TempDir dir_;
};

TEST_F(CorruptionTest, BitFlipInALeaf) {
  auto leaves = RawFile(DataPath()).PagesOfType(core::kLeafPage);
  ASSERT_GT(leaves.size(), 10u);
  auto [id, first] = *std::next(leaves.begin(), leaves.size() / 2);
  {
    RawFile f(DataPath());
    std::string p = f.ReadPage(id);
    p[1000] ^= 0x10;
    f.WritePage(id, p);
  }
  auto db = Db::Open(Opts());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ExpectDataLossFor(db->get(), first);
  ExpectOthersIntact(db->get(), first);
  EXPECT_GE((*db)->GetStats().cache.checksum_failures, 1u);
  VerifyReport report;
  ASSERT_OK((*db)->Verify(&report));
  ASSERT_FALSE(report.problems.empty());
  EXPECT_NE(report.problems[0].find("checksum"), std::string::npos) << report.problems[0];
}

TEST_F(CorruptionTest, ZeroedLeaf) {
  auto leaves = RawFile(DataPath()).PagesOfType(core::kLeafPage);
  auto [id, first] = *leaves.begin();
  RawFile(DataPath()).WritePage(id, std::string(kPageSize, '\0'));
  auto db = Db::Open(Opts());
  ASSERT_TRUE(db.ok());
  ExpectDataLossFor(db->get(), first);
  // A scan through the damaged range stops with the error instead of skipping the page.
  auto it = (*db)->NewIterator(ScanOptions());
  ASSERT_TRUE(it.ok());
  while ((*it)->Valid()) (*it)->Next();
  EXPECT_EQ((*it)->status().code(), StatusCode::kDataLoss);
}

TEST_F(CorruptionTest, StaleCopyOfALeafIsALostWrite) {
  auto leaves = RawFile(DataPath()).PagesOfType(core::kLeafPage);
  auto [id, first] = *std::next(leaves.begin(), 3);
  const std::string old_image = RawFile(DataPath()).ReadPage(id);
  {
    auto db = Db::Open(Opts());
    ASSERT_TRUE(db.ok());
    ASSERT_OK((*db)->Put(first, "a newer value"));
    ASSERT_OK((*db)->Close());
  }
  ASSERT_NE(RawFile(DataPath()).ReadPage(id), old_image) << "the leaf moved; test setup is off";
  RawFile(DataPath()).WritePage(id, old_image);  // a valid page, but from an older checkpoint
  ASSERT_TRUE(page::Verify(old_image.data(), id).ok());
  auto db = Db::Open(Opts());
  ASSERT_TRUE(db.ok());
  std::string v;
  auto found = (*db)->Get(first, &v);
  ASSERT_FALSE(found.ok()) << "stale page served: " << v;
  EXPECT_EQ(found.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(found.status().message().find("stale"), std::string_view::npos);
}

TEST_F(CorruptionTest, MisdirectedWrite) {
  auto leaves = RawFile(DataPath()).PagesOfType(core::kLeafPage);
  auto a = *std::next(leaves.begin(), 2), b = *std::next(leaves.begin(), 5);
  {
    RawFile f(DataPath());
    f.WritePage(a.first, f.ReadPage(b.first));  // page b's image lands at a's location
  }
  auto db = Db::Open(Opts());
  ASSERT_TRUE(db.ok());
  std::string v;
  auto found = (*db)->Get(a.second, &v);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(found.status().message().find("misdirected"), std::string_view::npos);
  found = (*db)->Get(b.second, &v);  // the page itself is still fine
  ASSERT_TRUE(found.ok() && *found);
}

TEST_F(CorruptionTest, DamagedInnerNodeFailsLookupsBelowIt) {
  auto inner = RawFile(DataPath()).PagesOfType(core::kInnerPage);
  ASSERT_FALSE(inner.empty());
  for (const auto& [id, first] : inner) {
    RawFile f(DataPath());
    std::string p = f.ReadPage(id);
    p[kPageSize - 5] ^= 0x01;
    f.WritePage(id, p);
  }
  auto db = Db::Open(Opts());
  ASSERT_TRUE(db.ok());
  std::string v;
  for (uint64_t i = 0; i < kKeys; i += 1000) {
    auto found = (*db)->Get(Key(i), &v);
    ASSERT_FALSE(found.ok());
    EXPECT_EQ(found.status().code(), StatusCode::kDataLoss);
  }
}

TEST_F(CorruptionTest, DamagedBlobIsDataLoss) {
  auto db_blobs = RawFile(DataPath());
  PageId blob = 0;
  for (PageId id = 2; id < db_blobs.Pages() && blob == 0; ++id) {
    const std::string p = db_blobs.ReadPage(id);
    if (page::Type(p.data()) == static_cast<uint16_t>(PageType::kBlob) &&
        page::Aux(p.data()) == 0 && page::Verify(p.data(), id).ok()) {
      blob = id;
    }
  }
  ASSERT_NE(blob, 0u);
  std::string p = db_blobs.ReadPage(blob);
  p[200] ^= 0x40;
  db_blobs.WritePage(blob, p);
  auto db = Db::Open(Opts());
  ASSERT_TRUE(db.ok());
  size_t damaged = 0;
  std::string v;
  for (uint64_t i = 0; i < kKeys; i += 500) {
    auto found = (*db)->Get(Key(i), &v);
    if (!found.ok()) {
      EXPECT_EQ(found.status().code(), StatusCode::kDataLoss);
      ++damaged;
    } else {
      ASSERT_EQ(v, Value(i, 0, 3000));
    }
  }
  EXPECT_EQ(damaged, 1u);
}

TEST_F(CorruptionTest, BothSuperblocksDamagedRefusesToOpen) {
  {
    RawFile f(DataPath());
    for (PageId slot : {0, 1}) {
      std::string p = f.ReadPage(slot);
      p[60] ^= 0x01;
      f.WritePage(slot, p);
    }
  }
  auto db = Db::Open(Opts());
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(db.status().message().find("superblock"), std::string_view::npos);
}

TEST_F(CorruptionTest, DamagedManifestRefusesToOpen) {
  // The newest manifest is the one with the largest epoch in its name.
  std::string newest;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    const std::string name = e.path().filename();
    if (name.rfind("MANIFEST-", 0) == 0 && name > newest) newest = name;
  }
  ASSERT_FALSE(newest.empty());
  {
    const int fd = ::open(dir_.Sub(newest).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, 20), 1);
    c ^= 0x04;
    ASSERT_EQ(::pwrite(fd, &c, 1, 20), 1);
    ::close(fd);
  }
  auto db = Db::Open(Opts());
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(db.status().message().find("MANIFEST"), std::string_view::npos)
      << db.status().ToString();
}

}  // namespace
}  // namespace grove::testing
