// File and directory operations, on every backend.

#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "grove/io_backend.h"

#include "io/io_test_util.h"
#include "testutil/temp_dir.h"

namespace grove {
namespace {

using testing::MakeBackend;
using testing::Pattern;

class FileTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto backend = MakeBackend(GetParam());
    if (!backend.ok())
      GTEST_SKIP() << "io_uring cannot be set up here: " << backend.status().ToString();
    backend_ = *backend;
  }

  std::unique_ptr<File> Open(const std::string& name, FileOptions options) {
    auto file = backend_->OpenFile(dir_.Sub(name), options);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  static FileOptions Create(bool direct = false) {
    FileOptions o;
    o.create = true;
    o.direct = direct;
    return o;
  }

  testing::TempDir dir_;
  std::shared_ptr<IoBackend> backend_;
};

TEST_P(FileTest, WriteReadAndSize) {
  auto file = Open("f", Create());
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->path(), dir_.Sub("f"));
  EXPECT_GE(file->fd(), 0);
  ASSERT_EQ(*file->Size(), 0u);

  ASSERT_TRUE(file->Write(0, "hello").ok());
  ASSERT_TRUE(file->Write(100, "world").ok());
  EXPECT_EQ(*file->Size(), 105u);

  char buf[105];
  size_t n = 0;
  ASSERT_TRUE(file->Read(0, sizeof(buf), buf, &n).ok());
  ASSERT_EQ(n, 105u);
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_EQ(std::string(buf + 5, 95), std::string(95, '\0'));  // the gap reads as zeros
  EXPECT_EQ(std::string(buf + 100, 5), "world");
  ASSERT_TRUE(file->Sync().ok());

  // Reopening sees the same bytes.
  file.reset();
  auto again = Open("f", FileOptions{});
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(again->Read(100, 5, buf, &n).ok());
  EXPECT_EQ(std::string(buf, n), "world");
}

TEST_P(FileTest, ShortReadAtEof) {
  auto file = Open("f", Create());
  ASSERT_NE(file, nullptr);
  const std::string data = Pattern(1, 5000);
  ASSERT_TRUE(file->Write(0, data).ok());

  std::string buf(8192, 'x');
  size_t n = 1;
  ASSERT_TRUE(file->Read(0, buf.size(), buf.data(), &n).ok());
  EXPECT_EQ(n, 5000u);
  EXPECT_EQ(buf.substr(0, n), data);

  ASSERT_TRUE(file->Read(4000, 4096, buf.data(), &n).ok());
  EXPECT_EQ(n, 1000u);
  ASSERT_TRUE(file->Read(6000, 100, buf.data(), &n).ok());
  EXPECT_EQ(n, 0u);
}

TEST_P(FileTest, TruncateAllocateSync) {
  auto file = Open("f", Create());
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->Write(0, Pattern(2, 8192)).ok());
  ASSERT_TRUE(file->Truncate(10).ok());
  EXPECT_EQ(*file->Size(), 10u);

  ASSERT_TRUE(file->Allocate(0, 1 << 20).ok());
  EXPECT_EQ(*file->Size(), uint64_t{1} << 20);
  ASSERT_TRUE(file->Allocate(4096, 0).ok());  // empty range: nothing to do
  ASSERT_TRUE(file->Sync().ok());

  std::string buf(4096, 'x');
  size_t n = 0;
  ASSERT_TRUE(file->Read(0, buf.size(), buf.data(), &n).ok());
  ASSERT_EQ(n, buf.size());
  EXPECT_EQ(buf.substr(0, 10), Pattern(2, 10));  // kept by the truncate
  EXPECT_EQ(buf.substr(10), std::string(4086, '\0'));

  ASSERT_TRUE(file->Truncate(0).ok());
  EXPECT_EQ(*file->Size(), 0u);
}

TEST_P(FileTest, DirectAlignedPageIo) {
  auto file = Open("data", Create(/*direct=*/true));
  ASSERT_NE(file, nullptr);
  constexpr size_t kPages = 4;
  AlignedBuffer out(kPages * kIoAlignment);
  testing::FillPattern(3, out.data(), out.size());
  ASSERT_TRUE(file->Write(0, Slice(out.data(), out.size())).ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(*file->Size(), kPages * kIoAlignment);

  AlignedBuffer in(2 * kIoAlignment);
  size_t n = 0;
  ASSERT_TRUE(file->Read(kIoAlignment, in.size(), in.data(), &n).ok());
  ASSERT_EQ(n, in.size());
  EXPECT_EQ(std::memcmp(in.data(), out.data() + kIoAlignment, in.size()), 0);

  // Reading a full page at the last page and beyond: short at end of file.
  AlignedBuffer tail(2 * kIoAlignment);
  ASSERT_TRUE(file->Read((kPages - 1) * kIoAlignment, tail.size(), tail.data(), &n).ok());
  EXPECT_EQ(n, kIoAlignment);
}

TEST_P(FileTest, DirectIoRejectsMisalignedBuffer) {
  auto file = Open("data", Create(/*direct=*/true));
  ASSERT_NE(file, nullptr);
  AlignedBuffer buf(2 * kIoAlignment);
  Status s = file->Write(0, Slice(buf.data() + 1, kIoAlignment));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir_.Sub("data")), std::string::npos) << s.ToString();
}

TEST_P(FileTest, ErrorsAreMapped) {
  // Opening a path that was deleted: NotFound, naming the file.
  auto file = Open("gone", Create());
  ASSERT_NE(file, nullptr);
  file.reset();
  ASSERT_TRUE(backend_->DeleteFile(dir_.Sub("gone")).ok());
  auto missing = backend_->OpenFile(dir_.Sub("gone"), FileOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("open " + dir_.Sub("gone")), std::string::npos);
  EXPECT_TRUE(backend_->DeleteFile(dir_.Sub("gone")).IsNotFound());

  // Writing to a file opened read-only fails (EBADF) and says which file.
  auto rw = Open("ro", Create());
  ASSERT_NE(rw, nullptr);
  ASSERT_TRUE(rw->Write(0, "abc").ok());
  FileOptions ro_options;
  ro_options.read_only = true;
  auto ro = Open("ro", ro_options);
  ASSERT_NE(ro, nullptr);
  Status s = ro->Write(0, "xyz");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("write " + dir_.Sub("ro")), std::string::npos) << s.ToString();
  EXPECT_FALSE(ro->Truncate(0).ok());
  char buf[3];
  size_t n = 0;
  ASSERT_TRUE(ro->Read(0, 3, buf, &n).ok());
  EXPECT_EQ(std::string(buf, n), "abc");  // the failed write changed nothing

  // A directory that does not exist.
  EXPECT_TRUE(backend_->ListDir(dir_.Sub("nodir")).status().IsNotFound());
  EXPECT_TRUE(backend_->SyncDir(dir_.Sub("nodir")).IsNotFound());
}

TEST_P(FileTest, DirectoryOperations) {
  const std::string sub = dir_.Sub("sub");
  ASSERT_TRUE(backend_->CreateDir(sub).ok());
  ASSERT_TRUE(backend_->CreateDir(sub).ok());  // exists: still OK
  EXPECT_TRUE(backend_->FileExists(sub));

  for (const char* name : {"b", "a", "c"}) {
    auto f = backend_->OpenFile(sub + "/" + name, Create());
    ASSERT_TRUE(f.ok());
  }
  ASSERT_TRUE(backend_->SyncDir(sub).ok());
  auto names = backend_->ListDir(sub);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "c"}));

  ASSERT_TRUE(backend_->RenameFile(sub + "/a", sub + "/z").ok());
  EXPECT_FALSE(backend_->FileExists(sub + "/a"));
  EXPECT_TRUE(backend_->FileExists(sub + "/z"));
  EXPECT_TRUE(backend_->RenameFile(sub + "/a", sub + "/y").IsNotFound());
  ASSERT_TRUE(backend_->DeleteFile(sub + "/b").ok());
  names = backend_->ListDir(sub);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"c", "z"}));

  // CreateDir over a regular file is an error, not "exists".
  EXPECT_FALSE(backend_->CreateDir(sub + "/c").ok());
}

INSTANTIATE_TEST_SUITE_P(io, FileTest, ::testing::ValuesIn(testing::BackendNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace grove
