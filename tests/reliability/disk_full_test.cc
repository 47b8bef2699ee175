// A full disk (docs/reliability.md, "Disk faults"), end to end: groved's data directory lives on a
// small loop-mounted ext4 whose free space a filler file takes, and a client writes until the
// disk is full. Writes must then fail with RESOURCE_EXHAUSTED (the full disk is not fail-stop),
// reads keep working, nothing acknowledged is lost, a restart while the disk is still full
// recovers, and writes resume once the filler is deleted.
//
// Needs root for mount -o loop; without it the groved tests skip with the reason, and the
// injected variant (fault backend, in process) still runs.

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>
#include <signal.h>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"
#include "reliability/loop_mount.h"
#include "reliability/report.h"
#include "service/integration.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;
using OpKind = FaultInjectionBackend::OpKind;

constexpr int kImageMiB = 96;
constexpr uint64_t kRoomBytes = 24ull << 20;  // what the filler leaves for the database
constexpr size_t kValueBytes = 3000;          // out of line: blob pages fill the data file

std::string DiskValue(uint64_t i) {
  std::string v = "value " + std::to_string(i) + " ";
  while (v.size() < kValueBytes) v.push_back(static_cast<char>('a' + (v.size() * 7 + i) % 26));
  return v;
}

const char* kDiskYaml =
    "wal:\n  segment_bytes: 1MiB\n  max_unsynced_bytes: 512KiB\n"
    "checkpoint:\n  wal_bytes: 4MiB\n  dirty_fraction: 0.25\n"
    "limits:\n  max_batch_bytes: 128KiB\nlogging:\n  level: warn\n";

class DiskFullTest : public GrovedTest {
 protected:
  void SetUp() override {
    std::string why;
    mount_ = LoopMount::Create(dir_.path(), kImageMiB, &why);
    if (!mount_) {
      GTEST_SKIP() << "loop mount unavailable (" << why
                   << "); the real full disk is not tested here. DiskFullInjectedTest and "
                      "io_error_test cover ENOSPC on the fault-injecting backend.";
    }
    ASSERT_TRUE(mount_->Fill("filler", kRoomBytes));
  }
  void TearDown() override {
    if (groved_) {
      groved_->Signal(SIGKILL);
      groved_->Wait(60s);
      groved_.reset();
    }
    mount_.reset();
  }

  void StartOnMount() {
    GrovedConfig c;
    c.data_dir = mount_->path() + "/data";
    c.yaml = kDiskYaml;
    c.grpc_port = port_;
    c.metrics_port = metrics_port_;
    groved_ = GrovedProcess::Start(dir_.path(), c);
    ASSERT_NE(groved_, nullptr);
    port_ = groved_->grpc_port();
    metrics_port_ = groved_->metrics_port();
    channel_ = Plaintext(groved_->address());
    kv_ = v1::KV::NewStub(channel_);
  }

  // Writes batches of 30 values until the disk is full (bounded). Returns the status codes seen.
  std::map<std::string, int> FillUp() {
    std::map<std::string, int> codes;
    int exhausted_in_a_row = 0;
    for (int b = 0; b < 4000 && exhausted_in_a_row < 20; ++b) {
      v1::BatchInsertRequest req;
      for (int j = 0; j < 30; ++j) {
        v1::Mutation* m = req.add_mutations();
        m->set_type(v1::Mutation::PUT);
        m->set_key(U64Key(next_));
        m->set_value(DiskValue(next_));
        ++next_;
      }
      v1::BatchInsertResponse resp;
      const grpc::Status s = kv_->BatchInsert(Ctx(30s).get(), req, &resp);
      ++codes[s.ok() ? "OK"
                     : std::to_string(s.error_code()) + " " + s.error_message().substr(0, 60)];
      if (s.ok()) {
        for (uint64_t k = next_ - 30; k < next_; ++k) acked_.push_back(k);
        exhausted_in_a_row = 0;
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
        ++exhausted_in_a_row;
      }
    }
    return codes;
  }

  // Every acknowledged key reads back right (and a full scan sees them all).
  void ExpectAckedReadable(const std::string& when) {
    for (size_t i = 0; i < acked_.size(); i += 7) {
      ASSERT_EQ(Get(U64Key(acked_[i])), DiskValue(acked_[i])) << when;
    }
    v1::ScanRequest req;
    req.set_keys_only(true);
    // The context must outlive the stream: the reader keeps using it until Finish().
    const auto ctx = Ctx(60s);
    auto reader = kv_->Scan(ctx.get(), req);
    v1::ScanResponse msg;
    uint64_t n = 0;
    while (reader->Read(&msg)) n += msg.entries_size();
    ASSERT_TRUE(reader->Finish().ok()) << when;
    EXPECT_GE(n, acked_.size()) << when;
  }

  std::unique_ptr<LoopMount> mount_;
  int port_ = 0, metrics_port_ = 0;
  uint64_t next_ = 0;
  std::vector<uint64_t> acked_;
};

TEST_F(DiskFullTest, WritesFailCleanlyReadsWorkAndWritesResume) {
  StartOnMount();
  const auto codes = FillUp();
  ASSERT_GT(codes.count("OK"), 0u);
  ASSERT_GT(acked_.size(), 1000u);
  ASSERT_LT(codes.at("OK"), 4000) << "the disk never filled up";
  ExpectAckedReadable("while the disk is full");

  // Space returns: writes resume without a restart.
  std::filesystem::remove(mount_->path() + "/filler");
  // The next write retries what failed (the WAL roll, the checkpoint's reservation) itself.
  const grpc::Status s = Put(U64Key(1u << 30), "after");
  ASSERT_TRUE(s.ok()) << "writes did not resume after space returned: " << s.error_message();
  StopGroved();
  StartOnMount();
  ExpectAckedReadable("after a clean restart");
  EXPECT_EQ(Get(U64Key(1u << 30)), "after");
  nlohmann::json j(codes);
  EmitReport({{"test", "disk_full"},
              {"case", "fill, read, free, resume"},
              {"acked_batches", codes.at("OK")},
              {"codes", j},
              {"acked_lost", 0}});
}

// Restarting groved while the disk is still full must recover (recovery needs no new space) and
// serve reads; writes resume once space returns.
TEST_F(DiskFullTest, RestartWhileFullRecovers) {
  StartOnMount();
  const auto codes = FillUp();
  ASSERT_GT(acked_.size(), 1000u);
  groved_->Signal(SIGKILL);
  groved_->Wait(60s);
  groved_.reset();

  GrovedConfig c;
  c.data_dir = mount_->path() + "/data";
  c.yaml = kDiskYaml;
  c.grpc_port = port_;
  c.metrics_port = metrics_port_;
  c.wait_ready = false;
  groved_ = GrovedProcess::Start(dir_.path(), c);
  ASSERT_NE(groved_, nullptr);
  const bool ready = groved_->WaitReadyz(200, 60s);
  const std::string log = groved_->Log();
  EmitReport({{"test", "disk_full"},
              {"case", "kill -9 and restart while full"},
              {"ready", ready},
              {"log_tail", log.substr(log.size() > 600 ? log.size() - 600 : 0)}});
  ASSERT_TRUE(ready) << "groved did not recover on a full disk; log:\n" << log;
  channel_ = Plaintext(groved_->address());
  kv_ = v1::KV::NewStub(channel_);
  ExpectAckedReadable("after a restart on a full disk");
  std::filesystem::remove(mount_->path() + "/filler");
  const grpc::Status s = Put(U64Key(1u << 30), "after");
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// The same story in process, with ENOSPC injected wherever a full ext4 would report it: space
// reservations (fallocate of WAL segments, the data file and the double-write file) and writes to
// new files (manifests).
TEST(DiskFullInjectedTest, FullDiskIsNotFailStopAndRecovers) {
  TempDir dir;
  auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
  ASSERT_TRUE(inner.ok());
  auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1);
  Options o = SmallOptions(dir.path());
  o.cache_bytes = 2 << 20;
  o.wal.sync = SyncMode::kAlways;
  o.wal.segment_bytes = 1 << 20;
  o.wal.max_unsynced_bytes = 256 << 10;
  o.max_batch_bytes = 64 << 10;
  o.io_backend = fb;
  std::vector<uint64_t> acked;
  std::map<std::string, int> codes;
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok());
    uint64_t i = 0;
    for (; i < 2000; ++i) {
      ASSERT_OK((*db)->Put(Key(i), DiskValue(i)));
      acked.push_back(i);
    }
    auto full = [&] {
      fb->AddRule({.kind = OpKind::kAllocate, .path_contains = "", .error = ENOSPC});
      fb->AddRule({.kind = OpKind::kWrite, .path_contains = "MANIFEST", .error = ENOSPC});
    };
    full();
    int exhausted = 0;
    for (; i < 20000 && exhausted < 50; ++i) {
      const Status s = (*db)->Put(Key(i), DiskValue(i));
      ++codes[std::string(StatusCodeName(s.code()))];
      if (s.ok()) {
        acked.push_back(i);
        continue;
      }
      ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
      ++exhausted;
    }
    ASSERT_EQ(exhausted, 50) << "the injected full disk never stopped writes";
    std::string v;
    for (size_t j = 0; j < acked.size(); j += 13) {
      auto found = (*db)->Get(Key(acked[j]), &v);
      ASSERT_TRUE(found.ok() && *found && v == DiskValue(acked[j])) << "a read on a full disk";
    }
    // Closing on a full disk cannot write its final checkpoint; the log still has everything.
    const Status closed = (*db)->Close();
    codes["close: " + std::string(StatusCodeName(closed.code()))]++;
  }
  // Reopen while still full.
  auto db = Db::Open(o);
  const std::string reopen = db.ok() ? "OK" : db.status().ToString();
  codes["reopen while full: " + std::string(db.ok() ? "OK" : StatusCodeName(db.status().code()))]++;
  nlohmann::json j(codes);
  EmitReport({{"test", "disk_full_injected"}, {"codes", j}, {"reopen_while_full", reopen}});
  if (!db.ok()) {
    ADD_FAILURE() << "reopening on a full disk failed: " << reopen;
    fb->ClearRules();
    db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
  }
  std::string v;
  for (uint64_t k : acked) {
    auto found = (*db)->Get(Key(k), &v);
    ASSERT_TRUE(found.ok() && *found && v == DiskValue(k)) << "acknowledged key " << k << " lost";
  }
  fb->ClearRules();
  ASSERT_OK((*db)->Put(Key(1u << 30), "after"));
  ASSERT_OK((*db)->Close());
}

}  // namespace
}  // namespace grove::testing
