#pragma once

// PosixFile: the File implementation shared by the psync and uring backends (both do synchronous
// file calls with plain system calls; they differ only in how IoQueue ops reach the device).
//
// Every error is Status::FromErrno(errno, "<op> <path>"), so ENOSPC surfaces as
// kResourceExhausted and ENOENT as kNotFound.
//
// Thread safety: all methods may be called concurrently (pread/pwrite carry their own offsets).

#include <cstdint>
#include <memory>
#include <string>

#include "grove/io_backend.h"

namespace grove {

class PosixFile final : public File {
 public:
  // Opens `path` with O_CLOEXEC, plus O_DIRECT when options.direct and O_CREAT (mode 0644) when
  // options.create.
  static StatusOr<std::unique_ptr<File>> Open(const std::string& path, const FileOptions& options);

  ~PosixFile() override;
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  const std::string& path() const override { return path_; }
  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) override;
  Status Write(uint64_t offset, Slice data) override;
  Status Sync() override;
  Status Truncate(uint64_t size) override;
  Status Allocate(uint64_t offset, uint64_t len) override;
  StatusOr<uint64_t> Size() override;
  int fd() const override { return fd_; }

 private:
  PosixFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::string path_;
  const int fd_;
};

// pread until `n` bytes or end of file; *done counts the bytes read even when an error follows.
Status PreadFull(int fd, const std::string& path, uint64_t offset, size_t n, char* buf,
                 size_t* done);

// pwrite until all `n` bytes are written, continuing after short writes; *done counts the bytes
// written even when an error follows. A write that makes no progress is an error.
Status PwriteFull(int fd, const std::string& path, uint64_t offset, size_t n, const char* buf,
                  size_t* done);

// Runs `op` synchronously with PreadFull/PwriteFull on op->file->fd() and records the outcome in
// op->status and op->bytes. Does not touch op->done: queues mark completion on their owner's
// thread.
void ExecuteOpSync(IoOp* op);

}  // namespace grove
