// IoQueue semantics (push/submit/wait/poll), on every backend. Rings are kTestQueueDepth (8)
// entries, so the larger batches here also exercise chunked submission.

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "grove/io_backend.h"

#include "io/io_test_util.h"
#include "testutil/temp_dir.h"

namespace grove {
namespace {

using testing::MakeBackend;

class QueueTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto backend = MakeBackend(GetParam());
    if (!backend.ok())
      GTEST_SKIP() << "io_uring cannot be set up here: " << backend.status().ToString();
    backend_ = *backend;
  }

  std::unique_ptr<File> OpenData(bool direct = true) {
    FileOptions o;
    o.create = true;
    o.direct = direct;
    auto file = backend_->OpenFile(dir_.Sub("data"), o);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  testing::TempDir dir_;
  std::shared_ptr<IoBackend> backend_;
};

TEST_P(QueueTest, BatchLargerThanTheRing) {
  auto file = OpenData();
  ASSERT_NE(file, nullptr);
  constexpr size_t kPages = 200;  // 25x the ring
  AlignedBuffer out(kPages * kIoAlignment);
  testing::FillPattern(7, out.data(), out.size());

  std::vector<IoOp> writes(kPages);
  auto queue = backend_->AcquireQueue();
  for (size_t i = 0; i < kPages; ++i) {
    writes[i] = IoOp::Write(file.get(), i * kIoAlignment, out.data() + i * kIoAlignment,
                            kIoAlignment, /*tag=*/i);
    queue->Push(&writes[i]);
  }
  queue->Submit();
  queue->WaitAll();
  EXPECT_EQ(queue->InFlight(), 0u);
  for (size_t i = 0; i < kPages; ++i) {
    ASSERT_TRUE(writes[i].done) << i;
    ASSERT_TRUE(writes[i].status.ok()) << i << ": " << writes[i].status.ToString();
    ASSERT_EQ(writes[i].bytes, kIoAlignment);
    ASSERT_EQ(writes[i].tag, i);
  }

  // Read them back in reverse order, each into its own slot.
  AlignedBuffer in(kPages * kIoAlignment);
  std::vector<IoOp> reads(kPages);
  for (size_t i = 0; i < kPages; ++i) {
    const size_t page = kPages - 1 - i;
    reads[i] =
        IoOp::Read(file.get(), page * kIoAlignment, in.data() + page * kIoAlignment, kIoAlignment);
    queue->Push(&reads[i]);
  }
  queue->Submit();
  queue->WaitAll();
  for (const IoOp& op : reads) {
    ASSERT_TRUE(op.done && op.status.ok()) << op.status.ToString();
    ASSERT_EQ(op.bytes, kIoAlignment);
  }
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
}

TEST_P(QueueTest, WaitForOneOp) {
  auto file = OpenData();
  ASSERT_NE(file, nullptr);
  constexpr size_t kPages = 50;
  AlignedBuffer out(kPages * kIoAlignment);
  testing::FillPattern(8, out.data(), out.size());
  ASSERT_TRUE(file->Write(0, Slice(out.data(), out.size())).ok());

  AlignedBuffer in(kPages * kIoAlignment);
  std::vector<IoOp> ops(kPages);
  auto queue = backend_->AcquireQueue();
  for (size_t i = 0; i < kPages; ++i) {
    ops[i] = IoOp::Read(file.get(), i * kIoAlignment, in.data() + i * kIoAlignment, kIoAlignment);
    queue->Push(&ops[i]);
  }
  queue->Submit();
  queue->Wait(&ops[37]);
  ASSERT_TRUE(ops[37].done);
  ASSERT_TRUE(ops[37].status.ok());
  EXPECT_EQ(
      std::memcmp(in.data() + 37 * kIoAlignment, out.data() + 37 * kIoAlignment, kIoAlignment), 0);
  queue->Wait(&ops[37]);  // already done: returns at once
  queue->WaitAll();
  EXPECT_EQ(queue->InFlight(), 0u);
  for (const IoOp& op : ops) EXPECT_TRUE(op.done && op.status.ok());
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
}

TEST_P(QueueTest, PollAndInFlight) {
  auto file = OpenData();
  ASSERT_NE(file, nullptr);
  constexpr size_t kOps = 20;
  AlignedBuffer buf(kOps * kIoAlignment);
  std::vector<IoOp> ops(kOps);
  auto queue = backend_->AcquireQueue();
  EXPECT_EQ(queue->Poll(), 0u);
  for (size_t i = 0; i < kOps; ++i) {
    ops[i] = IoOp::Write(file.get(), i * kIoAlignment, buf.data() + i * kIoAlignment, kIoAlignment);
    queue->Push(&ops[i]);
  }
  EXPECT_EQ(queue->InFlight(), 0u);  // pushed is not submitted
  queue->Submit();
  // Completion is only ever marked inside Wait/WaitAll/Poll, on every backend.
  EXPECT_EQ(queue->InFlight(), kOps);
  for (const IoOp& op : ops) EXPECT_FALSE(op.done);

  size_t completed = 0;
  while (queue->InFlight() > 0) completed += queue->Poll();
  EXPECT_EQ(completed, kOps);
  for (const IoOp& op : ops) EXPECT_TRUE(op.done && op.status.ok() && op.bytes == kIoAlignment);
  EXPECT_EQ(queue->Poll(), 0u);
}

TEST_P(QueueTest, ShortReadAtEof) {
  // Buffered file whose size is not a multiple of anything.
  auto file = OpenData(/*direct=*/false);
  ASSERT_NE(file, nullptr);
  const std::string data = testing::Pattern(9, 5000);
  ASSERT_TRUE(file->Write(0, data).ok());

  std::string a(8192, 'x'), b(100, 'x');
  IoOp read_all = IoOp::Read(file.get(), 0, a.data(), a.size());
  IoOp past_end = IoOp::Read(file.get(), 6000, b.data(), b.size());
  IoOp* ops[] = {&read_all, &past_end};
  backend_->RunBatch(ops, 2);
  ASSERT_TRUE(read_all.done && read_all.status.ok()) << read_all.status.ToString();
  EXPECT_EQ(read_all.bytes, 5000u);
  EXPECT_EQ(a.substr(0, 5000), data);
  ASSERT_TRUE(past_end.done && past_end.status.ok());
  EXPECT_EQ(past_end.bytes, 0u);

  // Direct file: a multi-page read at the last page returns the one page there is.
  file.reset();
  ASSERT_TRUE(backend_->DeleteFile(dir_.Sub("data")).ok());
  auto direct = OpenData(/*direct=*/true);
  ASSERT_NE(direct, nullptr);
  AlignedBuffer pages(4 * kIoAlignment);
  ASSERT_TRUE(direct->Write(0, Slice(pages.data(), 2 * kIoAlignment)).ok());
  IoOp tail = IoOp::Read(direct.get(), kIoAlignment, pages.data(), 3 * kIoAlignment);
  IoOp* one[] = {&tail};
  backend_->RunBatch(one, 1);
  ASSERT_TRUE(tail.status.ok()) << tail.status.ToString();
  EXPECT_EQ(tail.bytes, kIoAlignment);
}

TEST_P(QueueTest, ErrorsCompleteTheirOpsOnly) {
  auto file = OpenData(/*direct=*/false);
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->Write(0, testing::Pattern(10, 4096)).ok());
  FileOptions ro;
  ro.read_only = true;
  auto read_only = backend_->OpenFile(dir_.Sub("data"), ro);
  ASSERT_TRUE(read_only.ok());

  std::string buf(4096, 'x'), wbuf(4096, 'w');
  IoOp good = IoOp::Read(file.get(), 0, buf.data(), buf.size());
  IoOp bad_write = IoOp::Write(read_only->get(), 0, wbuf.data(), wbuf.size());
  IoOp no_file = IoOp::Read(nullptr, 0, buf.data(), buf.size());
  IoOp empty = IoOp::Read(file.get(), 0, buf.data(), 0);
  IoOp* ops[] = {&good, &bad_write, &no_file, &empty};
  backend_->RunBatch(ops, 4);
  for (IoOp* op : ops) EXPECT_TRUE(op->done);
  EXPECT_TRUE(good.status.ok());
  EXPECT_EQ(good.bytes, 4096u);
  EXPECT_FALSE(bad_write.status.ok());
  EXPECT_NE(bad_write.status.message().find(dir_.Sub("data")), std::string::npos)
      << bad_write.status.ToString();
  EXPECT_EQ(no_file.status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(empty.status.ok());
  EXPECT_EQ(empty.bytes, 0u);
  EXPECT_EQ(buf, testing::Pattern(10, 4096));  // the failed write changed nothing
}

TEST_P(QueueTest, WaitSubmitsAPushedOp) {
  auto file = OpenData(/*direct=*/false);
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->Write(0, "abcdef").ok());
  char buf[6];
  IoOp op = IoOp::Read(file.get(), 0, buf, sizeof(buf));
  auto queue = backend_->AcquireQueue();
  queue->Push(&op);
  queue->Wait(&op);
  ASSERT_TRUE(op.done && op.status.ok());
  EXPECT_EQ(std::string(buf, op.bytes), "abcdef");

  // Waiting for an op this queue never saw does not block.
  IoOp stranger = IoOp::Read(file.get(), 0, buf, sizeof(buf));
  queue->Wait(&stranger);
  EXPECT_FALSE(stranger.done);
}

TEST_P(QueueTest, DestroyingAQueueAbortsUnsubmittedOps) {
  auto file = OpenData(/*direct=*/false);
  ASSERT_NE(file, nullptr);
  std::string buf(100, 'x');
  IoOp submitted = IoOp::Write(file.get(), 0, buf.data(), buf.size());
  IoOp unsubmitted = IoOp::Write(file.get(), 100, buf.data(), buf.size());
  {
    auto queue = backend_->AcquireQueue();
    queue->Push(&submitted);
    queue->Submit();
    queue->Push(&unsubmitted);
  }  // waits for `submitted`, aborts `unsubmitted`
  EXPECT_TRUE(submitted.done && submitted.status.ok());
  EXPECT_TRUE(unsubmitted.done);
  EXPECT_EQ(unsubmitted.status.code(), StatusCode::kAborted);
  EXPECT_EQ(*file->Size(), 100u);
}

TEST_P(QueueTest, QueuesAreReusedSequentially) {
  auto file = OpenData();
  ASSERT_NE(file, nullptr);
  AlignedBuffer buf(kIoAlignment);
  for (int round = 0; round < 50; ++round) {
    testing::FillPattern(round, buf.data(), buf.size());
    IoOp op = IoOp::Write(file.get(), (round % 5) * kIoAlignment, buf.data(), kIoAlignment);
    IoOp* ops[] = {&op};
    backend_->RunBatch(ops, 1);
    ASSERT_TRUE(op.status.ok()) << round;
  }
  EXPECT_EQ(*file->Size(), 5 * kIoAlignment);
}

TEST_P(QueueTest, ConcurrentQueuesFromSeveralThreads) {
  auto file = OpenData();
  ASSERT_NE(file, nullptr);
  constexpr int kThreads = 4;
  constexpr size_t kPagesPerThread = 16;
  constexpr int kRounds = 20;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      AlignedBuffer out(kPagesPerThread * kIoAlignment), in(kPagesPerThread * kIoAlignment);
      const uint64_t base = t * kPagesPerThread * kIoAlignment;
      for (int round = 0; round < kRounds && failures[t].empty(); ++round) {
        testing::FillPattern(t * 1000 + round, out.data(), out.size());
        auto queue = backend_->AcquireQueue();
        std::vector<IoOp> ops(kPagesPerThread);
        for (size_t i = 0; i < kPagesPerThread; ++i) {
          ops[i] = IoOp::Write(file.get(), base + i * kIoAlignment, out.data() + i * kIoAlignment,
                               kIoAlignment);
          queue->Push(&ops[i]);
        }
        queue->Submit();
        queue->WaitAll();
        for (size_t i = 0; i < kPagesPerThread; ++i) {
          ops[i] = IoOp::Read(file.get(), base + i * kIoAlignment, in.data() + i * kIoAlignment,
                              kIoAlignment);
          queue->Push(&ops[i]);
        }
        queue->Submit();
        queue->WaitAll();
        for (const IoOp& op : ops) {
          if (!op.status.ok() || op.bytes != kIoAlignment) failures[t] = op.status.ToString();
        }
        if (std::memcmp(in.data(), out.data(), out.size()) != 0) {
          failures[t] = "round " + std::to_string(round) + ": data mismatch";
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(io, QueueTest, ::testing::ValuesIn(testing::BackendNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace grove
