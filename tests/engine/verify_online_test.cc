// Options::read_only and Db::VerifyOnline: a read-only open serves the newest checkpoint and
// writes nothing; an online verify checks the checkpoint it starts from even when writes
// overwrite its pages meanwhile, finds damage on disk, gives up when cancelled, and runs one at
// a time with backups.

#include <filesystem>
#include <map>

#include <fcntl.h>
#include <unistd.h>

#include "engine/db_test_util.h"
#include "index/core/leaf_node.h"
#include "page/page.h"

namespace grove::testing {
namespace {

constexpr uint64_t kKeys = 5000;

class VerifyOnlineTest : public ::testing::TestWithParam<IoBackendKind> {
 protected:
  Options Opts() {
    Options o = SmallOptions(dir_.path(), GetParam());
    o.checkpoint.interval_seconds = 0;
    return o;
  }
  std::unique_ptr<Db> OpenDb(const Options& o) {
    auto db = Db::Open(o);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    return db.ok() ? std::move(*db) : nullptr;
  }
  void Load(Db* db, uint64_t n, uint64_t version) {
    for (uint64_t i = 0; i < n; ++i) ASSERT_OK(db->Put(Key(i), Value(i, version)));
  }
  // Every file in the directory with its size and modification time.
  std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> Files() {
    std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.is_regular_file()) out[e.path().filename()] = {e.file_size(), e.last_write_time()};
    }
    return out;
  }
  TempDir dir_;
};

TEST_P(VerifyOnlineTest, AReadOnlyOpenServesTheCheckpointAndWritesNothing) {
  Options o = Opts();
  {
    auto db = OpenDb(o);
    Load(db.get(), kKeys, 1);
    ASSERT_OK(db->Close());
  }
  auto before = Files();
  before.erase("LOCK");
  o.read_only = true;
  auto db = OpenDb(o);
  ASSERT_NE(db, nullptr);
  std::string v;
  for (uint64_t i = 0; i < kKeys; i += 97) {
    auto found = db->Get(Key(i), &v);
    ASSERT_TRUE(found.ok() && *found) << i;
    EXPECT_EQ(v, Value(i, 1));
  }
  EXPECT_EQ(db->Put(Key(1), "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(db->Delete(Key(1)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(db->Checkpoint().code(), StatusCode::kFailedPrecondition);
  WriteBatch batch;
  batch.Put(Key(2), "y");
  EXPECT_EQ(db->Write(batch).code(), StatusCode::kFailedPrecondition);
  VerifyReport report;
  ASSERT_OK(db->VerifyOnline({}, &report));
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(report.entries_checked, kKeys);
  ASSERT_OK(db->Close());
  auto after = Files();
  after.erase("LOCK");
  EXPECT_EQ(after, before) << "a read-only open changes no file";

  o.data_dir = dir_.Sub("nothing-here");
  auto missing = Db::Open(o);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(o.data_dir)) << "read-only creates nothing";
}

TEST_P(VerifyOnlineTest, ItChecksItsCheckpointWhileWritesOverwriteThePages) {
  auto db = OpenDb(Opts());
  Load(db.get(), kKeys, 1);
  bool rewrote = false;
  VerifyOnlineOptions options;
  // The first read of the snapshot is the snapshot's superblock: before any of its leaves is
  // read, every key changes, a quarter of them go, and a checkpoint writes it all in place.
  options.cancelled = [&] {
    if (!rewrote) {
      rewrote = true;
      for (uint64_t i = 0; i < kKeys; ++i) {
        Status s = i % 4 == 0 ? db->Delete(Key(i)) : db->Put(Key(i), Value(i, 2, 40));
        EXPECT_OK(s);
      }
      for (uint64_t i = kKeys; i < kKeys + 1000; ++i) EXPECT_OK(db->Put(Key(i), Value(i, 2)));
      EXPECT_OK(db->Checkpoint());
    }
    return false;
  };
  VerifyReport report;
  ASSERT_OK(db->VerifyOnline(options, &report));
  EXPECT_TRUE(rewrote);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  EXPECT_EQ(report.entries_checked, kKeys) << "the snapshot's entries, not today's";
  EXPECT_GT(report.pages_preserved, 0u) << "the checkpoint overwrote pages the snapshot needed";
  EXPECT_GT(report.checkpoint_epoch, 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("verify-snapshot"))) << "removed afterwards";

  // The live state holds the writes, and the next run sees them.
  std::string v;
  EXPECT_FALSE(*db->Get(Key(0), &v));
  ASSERT_TRUE(*db->Get(Key(1), &v));
  EXPECT_EQ(v, Value(1, 2, 40));
  ASSERT_OK(db->VerifyOnline({}, &report));
  EXPECT_EQ(report.entries_checked, kKeys - kKeys / 4 + 1000);
  EXPECT_EQ(report.pages_preserved, 0u);
  VerifyReport live;
  ASSERT_OK(db->Verify(&live));
  EXPECT_EQ(live.pages_checked, report.pages_checked) << "the same pages, walked twice";
}

TEST_P(VerifyOnlineTest, ItFindsADamagedLeaf) {
  Options o = Opts();
  {
    auto db = OpenDb(o);
    Load(db.get(), kKeys, 1);
    ASSERT_OK(db->Close());
  }
  {
    // Flip a byte in the middle of the first leaf found.
    const std::string path = dir_.Sub("grove.data");
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const uint64_t pages = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END)) / kPageSize;
    bool damaged = false;
    for (PageId id = 2; id < pages && !damaged; ++id) {
      std::string p(kPageSize, '\0');
      ASSERT_EQ(::pread(fd, p.data(), kPageSize, static_cast<off_t>(id * kPageSize)),
                static_cast<ssize_t>(kPageSize));
      if (page::Type(p.data()) != static_cast<uint16_t>(core::kLeafPage)) continue;
      p[kPageSize / 2] ^= 0x40;
      ASSERT_EQ(::pwrite(fd, p.data(), kPageSize, static_cast<off_t>(id * kPageSize)),
                static_cast<ssize_t>(kPageSize));
      damaged = true;
    }
    ::close(fd);
    ASSERT_TRUE(damaged);
  }
  auto db = OpenDb(o);
  VerifyReport report;
  const Status s = db->VerifyOnline({}, &report);
  EXPECT_TRUE(s.IsDataLoss() || !report.problems.empty()) << s.ToString();
}

TEST_P(VerifyOnlineTest, ACancelledRunGivesUpAndTheNextOneRuns) {
  auto db = OpenDb(Opts());
  Load(db.get(), 500, 1);
  VerifyOnlineOptions options;
  options.cancelled = [] { return true; };
  VerifyReport report;
  EXPECT_EQ(db->VerifyOnline(options, &report).code(), StatusCode::kAborted);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("verify-snapshot")));
  ASSERT_OK(db->Put(Key(7), "after"));
  ASSERT_OK(db->VerifyOnline({}, &report));
  EXPECT_EQ(report.entries_checked, 500u);
}

TEST_P(VerifyOnlineTest, OneBackupOrOnlineVerifyAtATime) {
  auto db = OpenDb(Opts());
  Load(db.get(), 500, 1);
  Status backup;
  VerifyOnlineOptions options;
  bool tried = false;
  options.cancelled = [&] {
    if (!tried) {
      tried = true;
      BackupInfo info;
      backup = db->Backup(dir_.Sub("backup"), BackupOptions{}, &info);
    }
    return false;
  };
  VerifyReport report;
  ASSERT_OK(db->VerifyOnline(options, &report));
  EXPECT_EQ(backup.code(), StatusCode::kFailedPrecondition) << backup.ToString();
  BackupInfo info;
  ASSERT_OK(db->Backup(dir_.Sub("backup2"), BackupOptions{}, &info));  // free again afterwards
}

INSTANTIATE_TEST_SUITE_P(Backends, VerifyOnlineTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         BackendName);

}  // namespace
}  // namespace grove::testing
