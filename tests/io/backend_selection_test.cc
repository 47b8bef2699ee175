// NewIoBackend: which backend each kind yields, what it logs, and the automatic fallback when
// io_uring is blocked (tested for real, under a seccomp filter, in a forked child).

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "grove/io_backend.h"

#include "io/io_test_util.h"
#include "testutil/temp_dir.h"

namespace grove {
namespace {

using testing::CapturingLogger;

bool UringWorksHere(std::string* why) {
  auto probe = testing::MakeBackend("uring");
  if (!probe.ok()) *why = probe.status().ToString();
  return probe.ok();
}

TEST(BackendSelectionTest, AutoPicksUringAndLogsIt) {
  std::string why;
  if (!UringWorksHere(&why)) GTEST_SKIP() << "io_uring cannot be set up here: " << why;
  CapturingLogger logger;
  IoBackendOptions options;  // kAuto, queue depth 128
  auto backend = NewIoBackend(options, &logger);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  EXPECT_EQ((*backend)->Name(), "uring");
  const auto lines = logger.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].first, LogLevel::kInfo);
  EXPECT_EQ(lines[0].second, "io backend: uring (queue depth 128)");
}

TEST(BackendSelectionTest, ExplicitKinds) {
  CapturingLogger logger;
  IoBackendOptions options;
  options.kind = IoBackendKind::kPsync;
  options.psync_threads = 2;
  auto psync = NewIoBackend(options, &logger);
  ASSERT_TRUE(psync.ok());
  EXPECT_EQ((*psync)->Name(), "psync");
  ASSERT_EQ(logger.lines().size(), 1u);
  EXPECT_EQ(logger.lines()[0].second, "io backend: psync (configured, 2 worker threads)");

  std::string why;
  if (!UringWorksHere(&why)) GTEST_SKIP() << "io_uring cannot be set up here: " << why;
  options.kind = IoBackendKind::kUring;
  options.queue_depth = 100;                    // the kernel rounds ring sizes up to a power of two
  auto uring = NewIoBackend(options, nullptr);  // a null logger is allowed
  ASSERT_TRUE(uring.ok());
  EXPECT_EQ((*uring)->Name(), "uring");
}

TEST(BackendSelectionTest, InvalidOptions) {
  IoBackendOptions options;
  options.queue_depth = 0;
  EXPECT_EQ(NewIoBackend(options, nullptr).status().code(), StatusCode::kInvalidArgument);
  options.queue_depth = 1u << 20;
  EXPECT_EQ(NewIoBackend(options, nullptr).status().code(), StatusCode::kInvalidArgument);
  options.queue_depth = 8;
  options.psync_threads = 100000;
  EXPECT_EQ(NewIoBackend(options, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(BackendSelectionTest, PsyncWithoutWorkersRunsInline) {
  IoBackendOptions options;
  options.kind = IoBackendKind::kPsync;
  options.psync_threads = 0;
  auto backend = NewIoBackend(options, nullptr);
  ASSERT_TRUE(backend.ok());
  testing::TempDir dir;
  FileOptions create;
  create.create = true;
  auto file = (*backend)->OpenFile(dir.Sub("f"), create);
  ASSERT_TRUE(file.ok());
  std::string bufs[3] = {"aaa", "bbb", "ccc"};
  IoOp ops[3];
  IoOp* ptrs[3];
  for (int i = 0; i < 3; ++i) {
    ops[i] = IoOp::Write(file->get(), 3 * i, bufs[i].data(), 3);
    ptrs[i] = &ops[i];
  }
  (*backend)->RunBatch(ptrs, 3);
  for (const IoOp& op : ops) EXPECT_TRUE(op.done && op.status.ok());
  EXPECT_EQ(testing::ReadWholeFile(dir.Sub("f")), "aaabbbccc");
}

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

// Makes io_uring_setup fail with EPERM in this process, as Docker's default seccomp profile does.
bool BlockIoUringSetup() {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])),
                            filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Runs in the forked child: exits 0 when the fallback behaves, 1 with a reason on stderr if not.
void CheckFallbackUnderSeccomp(const std::string& dir) {
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::_Exit(1);
  };
  // A uring backend made before the filter: its pooled ring keeps working, but a second
  // concurrent queue needs a new ring, whose set-up now fails; that queue's ops carry the error.
  IoBackendOptions explicit_uring;
  explicit_uring.kind = IoBackendKind::kUring;
  auto early = NewIoBackend(explicit_uring, nullptr);
  if (!early.ok()) fail("kUring before the filter: " + early.status().ToString());

  if (!BlockIoUringSetup()) fail("cannot install the seccomp filter");

  {
    FileOptions create;
    create.create = true;
    auto file = (*early)->OpenFile(dir + "/early", create);
    if (!file.ok()) fail(file.status().ToString());
    auto pooled = (*early)->AcquireQueue();
    auto fresh = (*early)->AcquireQueue();
    std::string data = "x";
    IoOp ok_op = IoOp::Write(file->get(), 0, data.data(), 1);
    IoOp failed_op = IoOp::Write(file->get(), 1, data.data(), 1);
    pooled->Push(&ok_op);
    pooled->Submit();
    pooled->WaitAll();
    fresh->Push(&failed_op);
    fresh->Submit();
    fresh->WaitAll();
    if (!ok_op.done || !ok_op.status.ok()) fail("pooled ring: " + ok_op.status.ToString());
    if (!failed_op.done || failed_op.status.code() != StatusCode::kPermissionDenied ||
        failed_op.status.message().find("io_uring_queue_init") == std::string::npos) {
      fail("queue without a ring: " + failed_op.status.ToString());
    }
  }

  auto refused = NewIoBackend(explicit_uring, nullptr);
  if (refused.ok()) fail("kUring succeeded although io_uring_setup is blocked");
  if (refused.status().code() != StatusCode::kPermissionDenied) {
    fail("kUring: unexpected status " + refused.status().ToString());
  }

  CapturingLogger logger;
  auto backend = NewIoBackend(IoBackendOptions{}, &logger);
  if (!backend.ok()) fail("kAuto failed: " + backend.status().ToString());
  if ((*backend)->Name() != "psync") fail("kAuto picked " + std::string((*backend)->Name()));
  const auto lines = logger.lines();
  const std::string expected =
      "io backend: psync (io_uring unavailable: io_uring_queue_init: Operation not permitted)";
  if (lines.size() != 1 || lines[0].first != LogLevel::kWarn || lines[0].second != expected) {
    fail("unexpected log: " + (lines.empty() ? std::string("<none>") : lines[0].second));
  }

  // And the fallback does IO.
  FileOptions create;
  create.create = true;
  auto file = (*backend)->OpenFile(dir + "/f", create);
  if (!file.ok()) fail(file.status().ToString());
  std::string a = "fallback", b(8, ' ');
  IoOp w = IoOp::Write(file->get(), 0, a.data(), a.size());
  IoOp* wp[] = {&w};
  (*backend)->RunBatch(wp, 1);
  IoOp r = IoOp::Read(file->get(), 0, b.data(), b.size());
  IoOp* rp[] = {&r};
  (*backend)->RunBatch(rp, 1);
  if (!w.status.ok() || !r.status.ok() || b != a) fail("IO through the fallback failed");
  std::_Exit(0);
}

TEST(BackendSelectionTest, AutoFallsBackToPsyncWhenIoUringIsBlocked) {
  if (kAuditArch == 0) GTEST_SKIP() << "no seccomp arch constant for this architecture";
  std::string why;
  if (!UringWorksHere(&why)) GTEST_SKIP() << "io_uring is already unavailable here: " << why;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir dir;
  EXPECT_EXIT(CheckFallbackUnderSeccomp(dir.path()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace grove
