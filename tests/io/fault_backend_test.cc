// FaultInjectionBackend: rules, the crash switch and the observer, over both real backends.

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "io/fault_test_util.h"

namespace grove {
namespace {

using Kind = FaultInjectionBackend::OpKind;
using Rule = FaultInjectionBackend::Rule;
using testing::Pattern;
using testing::ReadWholeFile;

class FaultInjectionTest : public testing::FaultFixture {};

TEST_P(FaultInjectionTest, PassesThroughWithoutRules) {
  EXPECT_EQ(fault_->Name(), "fault(" + GetParam() + ")");
  auto file = Open("f");
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->Write(0, "hello").ok());
  ASSERT_TRUE(file->Sync().ok());
  char buf[5];
  size_t n = 0;
  ASSERT_TRUE(file->Read(0, 5, buf, &n).ok());
  EXPECT_EQ(std::string(buf, n), "hello");

  std::string out = "queued";
  IoOp w = RunOne(IoOp::Write(file.get(), 5, out.data(), out.size()));
  ASSERT_TRUE(w.status.ok()) << w.status.ToString();
  EXPECT_EQ(w.bytes, 6u);
  std::string in(11, ' ');
  IoOp r = RunOne(IoOp::Read(file.get(), 0, in.data(), in.size()));
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(in, "helloqueued");
  EXPECT_EQ(*file->Size(), 11u);

  const auto c = fault_->counters();
  EXPECT_EQ(c.reads, 2u);
  EXPECT_EQ(c.writes, 2u);
  EXPECT_EQ(c.syncs, 1u);
  EXPECT_EQ(c.injected_errors, 0u);
  EXPECT_EQ(fault_->mutating_ops(), 4u);  // create, write, sync, queued write
  auto names = fault_->ListDir(dir_.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"f"});
  EXPECT_TRUE(fault_->FileExists(dir_.Sub("f")));
}

TEST_P(FaultInjectionTest, ReadRuleFailsMatchingPathsWithEio) {
  auto data = Open("data.grove");
  auto wal = Open("wal-000001.log");
  ASSERT_TRUE(data->Write(0, "dddd").ok());
  ASSERT_TRUE(wal->Write(0, "wwww").ok());
  fault_->AddRule(Rule{Kind::kRead, "data", EIO});

  char buf[4];
  size_t n = 0;
  Status s = data->Read(0, 4, buf, &n);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("injected"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("data.grove"), std::string::npos) << s.ToString();
  EXPECT_TRUE(wal->Read(0, 4, buf, &n).ok());

  IoOp r = RunOne(IoOp::Read(data.get(), 0, buf, 4));
  EXPECT_EQ(r.status.code(), StatusCode::kInternal);
  EXPECT_EQ(r.bytes, 0u);
  EXPECT_EQ(fault_->counters().injected_errors, 2u);

  fault_->ClearRules();
  ASSERT_TRUE(data->Read(0, 4, buf, &n).ok());
  EXPECT_EQ(std::string(buf, n), "dddd");
}

TEST_P(FaultInjectionTest, EnospcWriteIsResourceExhaustedAndReadsKeepWorking) {
  auto wal = Open("wal");
  ASSERT_TRUE(wal->Write(0, "old").ok());
  fault_->AddRule(Rule{Kind::kWrite, "wal", ENOSPC});

  Status s = wal->Write(0, "new");
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  std::string buf = "NEW";
  IoOp w = RunOne(IoOp::Write(wal.get(), 0, buf.data(), buf.size()));
  EXPECT_TRUE(w.status.IsResourceExhausted()) << w.status.ToString();
  EXPECT_EQ(w.bytes, 0u);

  // Nothing reached the disk, and reads still work.
  EXPECT_EQ(ReadWholeFile(dir_.Sub("wal")), "old");
  char rbuf[3];
  size_t n = 0;
  ASSERT_TRUE(wal->Read(0, 3, rbuf, &n).ok());
  EXPECT_EQ(std::string(rbuf, n), "old");
}

TEST_P(FaultInjectionTest, ShortWriteWritesHalfThenFails) {
  // Direct file: half of a page, sector aligned.
  auto data = Open("data", /*direct=*/true);
  ASSERT_NE(data, nullptr);
  AlignedBuffer old_pages(2 * kIoAlignment), new_page(kIoAlignment);
  testing::FillPattern(1, old_pages.data(), old_pages.size());
  testing::FillPattern(2, new_page.data(), new_page.size());
  ASSERT_TRUE(data->Write(0, Slice(old_pages.data(), old_pages.size())).ok());

  fault_->AddRule(Rule{Kind::kWrite, "data", EIO, 0, 2, /*short_write=*/true});
  Status s = data->Write(0, Slice(new_page.data(), kIoAlignment));
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  IoOp w = RunOne(IoOp::Write(data.get(), kIoAlignment, new_page.data(), kIoAlignment));
  EXPECT_EQ(w.status.code(), StatusCode::kInternal);
  EXPECT_EQ(w.bytes, kIoAlignment / 2);

  // Each page: first half new, second half old, seen through the direct descriptor.
  AlignedBuffer in(2 * kIoAlignment);
  size_t n = 0;
  ASSERT_TRUE(data->Read(0, in.size(), in.data(), &n).ok());
  ASSERT_EQ(n, in.size());
  for (size_t page = 0; page < 2; ++page) {
    const char* got = in.data() + page * kIoAlignment;
    const char* old = old_pages.data() + page * kIoAlignment;
    EXPECT_EQ(std::memcmp(got, new_page.data(), kIoAlignment / 2), 0) << page;
    EXPECT_EQ(std::memcmp(got + kIoAlignment / 2, old + kIoAlignment / 2, kIoAlignment / 2), 0)
        << page;
  }

  // Buffered file: exactly half.
  auto log = Open("log");
  fault_->AddRule(Rule{Kind::kWrite, "log", ENOSPC, 0, 1, /*short_write=*/true});
  EXPECT_TRUE(log->Write(0, std::string(1000, 'x')).IsResourceExhausted());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("log")), std::string(500, 'x'));
  EXPECT_EQ(fault_->counters().injected_errors, 3u);
}

TEST_P(FaultInjectionTest, SyncFailure) {
  auto file = Open("f");
  ASSERT_TRUE(file->Write(0, "x").ok());
  fault_->AddRule(Rule{Kind::kSync, "f", EIO, 0, 1});
  EXPECT_EQ(file->Sync().code(), StatusCode::kInternal);
  EXPECT_TRUE(file->Sync().ok());  // count 1: only the first one failed
  EXPECT_EQ(fault_->counters().syncs, 2u);
}

TEST_P(FaultInjectionTest, SkipAndCount) {
  // Path substrings longer than a letter: the temp directory's random name could contain one.
  auto x = Open("xfile");
  auto y = Open("yfile");
  fault_->AddRule(Rule{Kind::kWrite, "xfile", EIO, /*skip=*/2, /*count=*/3});
  fault_->AddRule(Rule{Kind::kWrite, "yfile", EIO, /*skip=*/1});  // then forever
  std::string outcome_x, outcome_y;
  for (int i = 0; i < 8; ++i) {
    outcome_x += x->Write(i, "a").ok() ? 'o' : 'F';
    outcome_y += y->Write(i, "b").ok() ? 'o' : 'F';
  }
  EXPECT_EQ(outcome_x, "ooFFFooo");
  EXPECT_EQ(outcome_y, "oFFFFFFF");
  EXPECT_EQ(fault_->counters().injected_errors, 3u + 7u);
}

TEST_P(FaultInjectionTest, EveryMutatingKindCanFail) {
  auto file = Open("f");
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());

  fault_->AddRule(Rule{Kind::kAllocate, "f", ENOSPC});
  EXPECT_TRUE(file->Allocate(0, 1 << 20).IsResourceExhausted());
  EXPECT_EQ(*file->Size(), 0u);

  fault_->AddRule(Rule{Kind::kTruncate, "f", EIO});
  EXPECT_FALSE(file->Truncate(10).ok());
  EXPECT_EQ(*file->Size(), 0u);

  fault_->AddRule(Rule{Kind::kCreate, "new", ENOSPC});
  FileOptions create;
  create.create = true;
  EXPECT_TRUE(fault_->OpenFile(dir_.Sub("new"), create).status().IsResourceExhausted());
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("new")));
  EXPECT_TRUE(fault_->OpenFile(dir_.Sub("f"), create).ok());  // exists: not a create

  fault_->AddRule(Rule{Kind::kRename, "CURRENT", EIO});  // matches the new name too
  EXPECT_FALSE(fault_->RenameFile(dir_.Sub("f"), dir_.Sub("CURRENT")).ok());
  EXPECT_TRUE(inner_->FileExists(dir_.Sub("f")));

  fault_->AddRule(Rule{Kind::kDelete, "f", EIO});
  EXPECT_FALSE(fault_->DeleteFile(dir_.Sub("f")).ok());
  EXPECT_TRUE(inner_->FileExists(dir_.Sub("f")));

  fault_->AddRule(Rule{Kind::kSyncDir, "", EIO});
  EXPECT_FALSE(fault_->SyncDir(dir_.path()).ok());

  EXPECT_EQ(fault_->counters().injected_errors, 6u);
}

TEST_P(FaultInjectionTest, CrashAfterStopsExactlyAfterN) {
  auto file = Open("f");  // 1 mutating op (create)
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(fault_->mutating_ops(), 1u);
  fault_->CrashAfter(3);
  EXPECT_TRUE(file->Write(0, "one").ok());
  EXPECT_TRUE(file->Write(3, "two").ok());
  EXPECT_TRUE(file->Sync().ok());
  EXPECT_FALSE(fault_->crashed());

  Status s = file->Write(6, "three");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "simulated crash");
  EXPECT_TRUE(fault_->crashed());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("f")), "onetwo");  // the crashing op never reached the disk

  // Everything fails now, reads included, and nothing more is counted.
  char buf[3];
  size_t n = 0;
  EXPECT_EQ(file->Read(0, 3, buf, &n).message(), "simulated crash");
  EXPECT_EQ(file->Size().status().message(), "simulated crash");
  EXPECT_EQ(file->Sync().message(), "simulated crash");
  EXPECT_EQ(fault_->OpenFile(dir_.Sub("f"), FileOptions{}).status().message(), "simulated crash");
  EXPECT_FALSE(fault_->ListDir(dir_.path()).ok());
  EXPECT_FALSE(fault_->CreateDir(dir_.Sub("d")).ok());
  EXPECT_FALSE(fault_->FileExists(dir_.Sub("f")));
  std::string wbuf = "queued";
  IoOp w = RunOne(IoOp::Write(file.get(), 0, wbuf.data(), wbuf.size()));
  EXPECT_EQ(w.status.message(), "simulated crash");
  IoOp r = RunOne(IoOp::Read(file.get(), 0, buf, 3));
  EXPECT_EQ(r.status.message(), "simulated crash");
  EXPECT_EQ(fault_->mutating_ops(), 5u);  // create + 3 allowed + the crashing write
  EXPECT_EQ(ReadWholeFile(dir_.Sub("f")), "onetwo");
}

TEST_P(FaultInjectionTest, CrashAfterZeroFromTheObserver) {
  // Crash right before the rename that would publish a new manifest.
  fault_->SetObserver([this](const Backend::OpInfo& op) {
    if (op.kind == Kind::kRename && op.target.find("CURRENT") != std::string::npos) {
      fault_->CrashAfter(0);
    }
  });
  auto tmp = Open("CURRENT.tmp");
  ASSERT_TRUE(tmp->Write(0, "manifest-7").ok());
  ASSERT_TRUE(tmp->Sync().ok());
  EXPECT_EQ(fault_->RenameFile(dir_.Sub("CURRENT.tmp"), dir_.Sub("CURRENT")).message(),
            "simulated crash");
  EXPECT_TRUE(fault_->crashed());
  EXPECT_TRUE(inner_->FileExists(dir_.Sub("CURRENT.tmp")));
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("CURRENT")));
}

TEST_P(FaultInjectionTest, ObserverSeesMutatingOpsInOrder) {
  std::vector<Backend::OpInfo> trace;
  fault_->SetObserver([&trace](const Backend::OpInfo& op) { trace.push_back(op); });

  auto a = Open("a");                     // 0 create
  ASSERT_TRUE(a->Write(10, "xyz").ok());  // 1 write
  std::string buf = "qq";
  ASSERT_TRUE(RunOne(IoOp::Write(a.get(), 20, buf.data(), 2)).status.ok());  // 2 write (queue)
  char rbuf[2];
  size_t n = 0;
  ASSERT_TRUE(a->Read(0, 2, rbuf, &n).ok());                           // reads are not traced
  ASSERT_TRUE(a->Allocate(0, 8192).ok());                              // 3 allocate
  ASSERT_TRUE(a->Truncate(100).ok());                                  // 4 truncate
  ASSERT_TRUE(a->Sync().ok());                                         // 5 sync
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());                      // 6 syncdir
  ASSERT_TRUE(fault_->RenameFile(dir_.Sub("a"), dir_.Sub("b")).ok());  // 7 rename
  ASSERT_TRUE(fault_->DeleteFile(dir_.Sub("b")).ok());                 // 8 delete
  ASSERT_TRUE(fault_->CreateDir(dir_.Sub("d")).ok());                  // not a mutating op

  const std::vector<Kind> kinds = {Kind::kCreate,   Kind::kWrite,    Kind::kWrite,
                                   Kind::kAllocate, Kind::kTruncate, Kind::kSync,
                                   Kind::kSyncDir,  Kind::kRename,   Kind::kDelete};
  ASSERT_EQ(trace.size(), kinds.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(trace[i].kind, kinds[i]) << i << " " << Backend::OpKindName(trace[i].kind);
    EXPECT_EQ(trace[i].index, i);
  }
  EXPECT_EQ(trace[1].path, dir_.Sub("a"));
  EXPECT_EQ(trace[1].offset, 10u);
  EXPECT_EQ(trace[1].len, 3u);
  EXPECT_EQ(trace[2].offset, 20u);
  EXPECT_EQ(trace[2].len, 2u);
  EXPECT_EQ(trace[3].len, 8192u);
  EXPECT_EQ(trace[4].offset, 100u);
  EXPECT_EQ(trace[6].path, dir_.path());
  EXPECT_EQ(trace[7].path, dir_.Sub("a"));
  EXPECT_EQ(trace[7].target, dir_.Sub("b"));
  EXPECT_EQ(trace[8].path, dir_.Sub("b"));
  EXPECT_EQ(fault_->mutating_ops(), kinds.size());
}

TEST_P(FaultInjectionTest, QueueRejectsFilesOfOtherBackends) {
  FileOptions create;
  create.create = true;
  auto foreign = inner_->OpenFile(dir_.Sub("foreign"), create);
  ASSERT_TRUE(foreign.ok());
  std::string buf = "x";
  IoOp op = RunOne(IoOp::Write(foreign->get(), 0, buf.data(), 1));
  EXPECT_EQ(op.status.code(), StatusCode::kInvalidArgument);
}

TEST_P(FaultInjectionTest, ConcurrentUseCountsEveryOpOnce) {
  std::vector<uint64_t> indices;
  Mutex mu;
  fault_->SetObserver([&](const Backend::OpInfo& op) {
    MutexLock lock(&mu);
    indices.push_back(op.index);
  });
  constexpr int kThreads = 4, kWrites = 50;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto file = Open("t" + std::to_string(t));
      if (file == nullptr) {
        ++failures[t];
        return;
      }
      auto queue = fault_->AcquireQueue();
      std::string data = Pattern(t, 64);
      for (int i = 0; i < kWrites; ++i) {
        if (i % 2 == 0) {
          if (!file->Write(i * 64, data).ok()) ++failures[t];
        } else {
          IoOp op = IoOp::Write(file.get(), i * 64, data.data(), data.size());
          queue->Push(&op);
          queue->Submit();
          queue->Wait(&op);
          if (!op.status.ok()) ++failures[t];
        }
      }
      if (!file->Sync().ok()) ++failures[t];
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0);
  const uint64_t expected = kThreads * (1 + kWrites + 1);
  EXPECT_EQ(fault_->mutating_ops(), expected);
  ASSERT_EQ(indices.size(), expected);
  for (uint64_t i = 0; i < expected; ++i) EXPECT_EQ(indices[i], i);  // observed in order
}

INSTANTIATE_TEST_SUITE_P(io, FaultInjectionTest, ::testing::ValuesIn(testing::BackendNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace grove
