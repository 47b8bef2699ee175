// DirtyRoom (engine/dirty_room.h) against a pool whose counts the test sets: the cap and the hard
// cap, grants within the room, waiting for a release, a checkpoint run when no write holds room,
// deadlines, failing checkpoints, and the invariant under many threads.

#include "engine/dirty_room.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/status_macros.h"

namespace grove {
namespace {

using std::chrono::milliseconds;

// A pool of 1000 pages; `unevictable` is what it holds dirty or writing back.
struct FakePool {
  std::atomic<uint64_t> capacity{1000};
  std::atomic<uint64_t> unevictable{0};
  DirtyRoom::Pool pool() {
    return {.capacity_pages = [this] { return capacity.load(); },
            .unevictable_pages = [this] { return unevictable.load(); }};
  }
};

DirtyRoom::Clock::time_point In(milliseconds d) { return DirtyRoom::Clock::now() + d; }

TEST(DirtyRoomTest, CapsFollowTheShareAndThePoolsCapacity) {
  FakePool p;
  DirtyRoom room(p.pool(), 0.5, [] { return Status::Ok(); });
  EXPECT_EQ(room.Cap(), 500u);
  EXPECT_EQ(room.HardCap(), 900u) << "nine tenths of the cache";
  p.capacity = 2000;
  EXPECT_EQ(room.Cap(), 1000u) << "read at every decision: a pool that grows gives more room";
  DirtyRoom wide(p.pool(), 0.95, [] { return Status::Ok(); });
  EXPECT_EQ(wide.HardCap(), wide.Cap()) << "never below the cap";
}

TEST(DirtyRoomTest, GrantsWithinTheRoomCountingWhatThePoolHolds) {
  FakePool p;
  DirtyRoom room(p.pool(), 0.5, [] { return Status::Ok(); });
  p.unevictable = 300;
  EXPECT_TRUE(room.TryReserve(200, /*extend=*/false));
  EXPECT_EQ(room.reserved(), 200u);
  EXPECT_FALSE(room.TryReserve(1, /*extend=*/false)) << "300 held + 200 reserved = the cap";
  EXPECT_TRUE(room.TryReserve(400, /*extend=*/true)) << "an extension may go to the hard cap";
  EXPECT_FALSE(room.TryReserve(1, /*extend=*/true));
  room.Release(600);
  EXPECT_EQ(room.reserved(), 0u);
}

TEST(DirtyRoomTest, ARequestLargerThanTheRoomIsRefusedAtOnce) {
  FakePool p;
  int checkpoints = 0;
  DirtyRoom room(p.pool(), 0.5, [&] {
    ++checkpoints;
    return Status::Ok();
  });
  Status s = room.Reserve(501, DirtyRoom::Clock::time_point::max());
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_NE(s.ToString().find("raise cache_bytes"), std::string::npos) << s.ToString();
  EXPECT_EQ(checkpoints, 0);
}

TEST(DirtyRoomTest, AWriterWaitsForAnotherToGiveItsRoomBack) {
  FakePool p;
  int checkpoints = 0;
  DirtyRoom room(p.pool(), 0.5, [&] {
    ++checkpoints;
    return Status::Ok();
  });
  ASSERT_TRUE(room.TryReserve(400, false));
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(50));
    room.Release(400);
  });
  ASSERT_OK(room.Reserve(300, DirtyRoom::Clock::time_point::max()));
  releaser.join();
  EXPECT_EQ(room.reserved(), 300u);
  EXPECT_EQ(checkpoints, 0) << "room held by writes in flight comes back without a checkpoint";
}

TEST(DirtyRoomTest, PressedWhenAWriterWaitsOrNineTenthsAreHeld) {
  FakePool p;
  DirtyRoom room(p.pool(), 0.5, [] { return Status::Ok(); });
  EXPECT_FALSE(room.Pressed());
  p.unevictable = 449;
  EXPECT_FALSE(room.Pressed());
  p.unevictable = 450;  // nine tenths of the cap of 500
  EXPECT_TRUE(room.Pressed());
  p.unevictable = 0;
  ASSERT_TRUE(room.TryReserve(450, false));
  EXPECT_TRUE(room.Pressed()) << "reservations count as held";
  room.Release(450);

  // A writer waiting for room presses, however little is held.
  ASSERT_TRUE(room.TryReserve(300, false));
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    EXPECT_OK(room.Reserve(300, DirtyRoom::Clock::time_point::max()));
    granted = true;
  });
  while (!room.Pressed()) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_FALSE(granted.load());
  room.Release(300);
  waiter.join();
  EXPECT_TRUE(granted.load());
  room.Release(300);
  EXPECT_FALSE(room.Pressed()) << "the waiter is no longer counted once it has its room";
}

TEST(DirtyRoomTest, WithNoWriteHoldingRoomACheckpointMakesIt) {
  FakePool p;
  p.unevictable = 450;
  int checkpoints = 0;
  DirtyRoom room(p.pool(), 0.5, [&] {
    ++checkpoints;
    p.unevictable = 0;  // the checkpoint wrote the dirty pages: clean, evictable
    return Status::Ok();
  });
  ASSERT_OK(room.Reserve(100, DirtyRoom::Clock::time_point::max()));
  EXPECT_EQ(checkpoints, 1);
  EXPECT_EQ(room.reserved(), 100u);
}

TEST(DirtyRoomTest, TheWaitEndsAtTheDeadline) {
  FakePool p;
  DirtyRoom room(p.pool(), 0.5, [] { return Status::Ok(); });
  ASSERT_TRUE(room.TryReserve(450, false));  // never released during the wait
  const auto start = DirtyRoom::Clock::now();
  Status s = room.Reserve(100, In(milliseconds(100)));
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_NE(s.ToString().find("deadline"), std::string::npos) << s.ToString();
  EXPECT_GE(DirtyRoom::Clock::now() - start, milliseconds(100));
  EXPECT_EQ(room.reserved(), 450u) << "a refused reservation takes nothing";
}

TEST(DirtyRoomTest, AFailingCheckpointStopsTheWaitWithItsReason) {
  FakePool p;
  p.unevictable = 450;
  DirtyRoom room(p.pool(), 0.5, [] { return Status::Internal("disk gone"); });
  Status s = room.Reserve(100, DirtyRoom::Clock::time_point::max());
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_NE(s.ToString().find("disk gone"), std::string::npos) << s.ToString();
  DirtyRoom full(p.pool(), 0.5, [] { return Status::ResourceExhausted("disk full"); });
  s = full.Reserve(100, DirtyRoom::Clock::time_point::max());
  EXPECT_EQ(s.ToString().find("writes are stalled"), std::string::npos)
      << "a checkpoint's own RESOURCE_EXHAUSTED is passed on as it is: " << s.ToString();
}

TEST(DirtyRoomTest, WritersShortOfRoomWaitForARunningCheckpointInsteadOfRunningTheirOwn) {
  FakePool p;
  p.unevictable = 450;
  std::atomic<int> checkpoints{0};
  DirtyRoom room(p.pool(), 0.5, [&] {
    checkpoints.fetch_add(1);
    p.unevictable = 0;
    return Status::Ok();
  });
  std::atomic<bool> started{false};
  std::thread background([&] {
    DirtyRoom::CheckpointScope running(&room);
    started = true;
    // Until all four wait (bounded: a loaded machine may start them late).
    for (int i = 0; i < 2000 && room.GetStats().waits < 4; ++i) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    p.unevictable = 0;  // its pages are clean when it ends
  });
  while (!started.load()) std::this_thread::yield();
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back(
        [&] { ASSERT_OK(room.Reserve(100, DirtyRoom::Clock::time_point::max())); });
  }
  for (std::thread& w : writers) w.join();
  background.join();
  EXPECT_EQ(checkpoints.load(), 0) << "the running checkpoint made the room";
  EXPECT_EQ(room.reserved(), 400u);
  const WriteRoomStats stats = room.GetStats();
  EXPECT_EQ(stats.waits, 4u);
  EXPECT_EQ(stats.writer_checkpoints, 0u);
  EXPECT_EQ(stats.wait_seconds.count, 4u);
}

TEST(DirtyRoomTest, OneWaitingWriterRunsTheCheckpointAndTheOthersWaitForIt) {
  FakePool p;
  p.unevictable = 460;  // no writer fits before a checkpoint
  std::atomic<int> checkpoints{0};
  DirtyRoom room(p.pool(), 0.5, [&] {
    checkpoints.fetch_add(1);
    std::this_thread::sleep_for(milliseconds(50));  // the others arrive meanwhile
    p.unevictable = 0;
    return Status::Ok();
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&] { ASSERT_OK(room.Reserve(50, DirtyRoom::Clock::time_point::max())); });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(checkpoints.load(), 1) << "not one checkpoint per waiting writer";
  EXPECT_EQ(room.reserved(), 400u);
  EXPECT_EQ(room.GetStats().writer_checkpoints, 1u);
}

TEST(DirtyRoomTest, ManyWritersNeverHoldMoreThanTheRoom) {
  FakePool p;
  std::atomic<uint64_t> held{0}, most{0};
  DirtyRoom room(p.pool(), 0.25, [] { return Status::Ok(); });
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint64_t pages = 1 + (t * 7 + i) % 60;
        ASSERT_OK(room.Reserve(pages, DirtyRoom::Clock::time_point::max()));
        const uint64_t now = held.fetch_add(pages) + pages;
        uint64_t m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        held.fetch_sub(pages);
        room.Release(pages);
      }
    });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_LE(most.load(), room.Cap());
  EXPECT_EQ(room.reserved(), 0u);
}

}  // namespace
}  // namespace grove
