// EngineHandle: leases see the engine until Close() begins, and Close() destroys the engine only
// after every lease taken before it is released.

#include "service/engine_handle.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace grove::service {
namespace {

// A Db that only records Close() and its destruction.
class FakeDb final : public Db {
 public:
  FakeDb(std::atomic<bool>* closed, std::atomic<bool>* destroyed)
      : closed_(closed), destroyed_(destroyed) {}
  ~FakeDb() override { destroyed_->store(true); }
  Status Close() override {
    closed_->store(true);
    return Status::Ok();
  }
  StatusOr<bool> Get(Slice, std::string*, const ReadOptions&) override { return false; }
  Status BatchGet(const std::vector<Slice>&, std::vector<std::optional<std::string>>*,
                  const ReadOptions&) override {
    return Status::Ok();
  }
  Status Put(Slice, Slice) override { return Status::Ok(); }
  Status Delete(Slice) override { return Status::Ok(); }
  Status Write(const WriteBatch&) override { return Status::Ok(); }
  Status Write(const WriteBatch&, const WriteOptions&, WriteResult*) override {
    return Status::Ok();
  }
  StatusOr<bool> GetWithMeta(Slice, std::string*, ValueMeta*) override { return false; }
  Status DeleteRange(Slice, Slice, uint64_t, DeleteRangeResult*) override { return Status::Ok(); }
  Status Backup(const std::string&, const BackupOptions&, BackupInfo*) override {
    return Status::Ok();
  }
  StatusOr<std::unique_ptr<Iterator>> NewIterator(const ScanOptions&) override {
    return Status::Unimplemented("fake");
  }
  Status BulkLoad(const BulkLoadSource&) override { return Status::Ok(); }
  Status Checkpoint() override { return Status::Ok(); }
  Status SyncWal() override { return Status::Ok(); }
  StatusOr<bool> GetMark(Slice, std::string*) override { return false; }
  DbStats GetStats() override { return DbStats(); }
  Status Verify(VerifyReport*) override { return Status::Ok(); }
  Status VerifyOnline(const VerifyOnlineOptions&, VerifyReport*) override { return Status::Ok(); }

 private:
  std::atomic<bool>* const closed_;
  std::atomic<bool>* const destroyed_;
};

TEST(EngineHandleTest, LeasesSeeTheEngineWhileItIsOpen) {
  std::atomic<bool> closed{false}, destroyed{false};
  EngineHandle handle;
  EXPECT_EQ(EngineHandle::Lease(&handle).db(), nullptr) << "nothing is open yet";
  auto db = std::make_unique<FakeDb>(&closed, &destroyed);
  Db* raw = db.get();
  handle.Set(std::move(db));
  EXPECT_EQ(EngineHandle::Lease(&handle).db(), raw);
  ASSERT_TRUE(handle.Close().ok());
  EXPECT_TRUE(closed.load());
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(EngineHandle::Lease(&handle).db(), nullptr);
  EXPECT_FALSE(handle.Stats().has_value());
}

TEST(EngineHandleTest, CloseWaitsForLeasesTakenBeforeIt) {
  std::atomic<bool> closed{false}, destroyed{false}, close_returned{false};
  EngineHandle handle;
  handle.Set(std::make_unique<FakeDb>(&closed, &destroyed));
  auto held = std::make_unique<EngineHandle::Lease>(&handle);
  ASSERT_NE(held->db(), nullptr);
  std::thread closer([&] {
    EXPECT_TRUE(handle.Close().ok());
    close_returned.store(true);
  });
  // Close() has begun once new leases find no engine; it must then wait for `held`.
  while (EngineHandle::Lease(&handle).db() != nullptr) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(closed.load()) << "the engine closed under a lease";
  EXPECT_FALSE(destroyed.load());
  EXPECT_FALSE(close_returned.load());
  held.reset();
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_TRUE(destroyed.load());
}

}  // namespace
}  // namespace grove::service
