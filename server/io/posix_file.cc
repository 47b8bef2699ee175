#include "io/posix_file.h"

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace grove {
namespace {

std::string Context(const char* op, const std::string& path) {
  std::string s(op);
  s += ' ';
  s += path;
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<File>> PosixFile::Open(const std::string& path,
                                                const FileOptions& options) {
  int flags = O_CLOEXEC | (options.read_only ? O_RDONLY : O_RDWR);
  if (options.direct) flags |= O_DIRECT;
  if (options.create) flags |= O_CREAT;
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno(errno, Context("open", path));
  return std::unique_ptr<File>(new PosixFile(path, fd));
}

PosixFile::~PosixFile() {
  // close() errors cannot be acted on here; durability is decided by Sync(), never by close().
  ::close(fd_);
}

Status PreadFull(int fd, const std::string& path, uint64_t offset, size_t n, char* buf,
                 size_t* done) {
  *done = 0;
  while (*done < n) {
    const ssize_t r = ::pread(fd, buf + *done, n - *done, static_cast<off_t>(offset + *done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Context("read", path));
    }
    if (r == 0) break;  // end of file
    *done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status PwriteFull(int fd, const std::string& path, uint64_t offset, size_t n, const char* buf,
                  size_t* done) {
  *done = 0;
  while (*done < n) {
    const ssize_t r = ::pwrite(fd, buf + *done, n - *done, static_cast<off_t>(offset + *done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Context("write", path));
    }
    if (r == 0) return Status::Internal(Context("write", path) + ": short write (no progress)");
    *done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

void ExecuteOpSync(IoOp* op) {
  size_t done = 0;
  if (op->file == nullptr) {
    op->status = Status::InvalidArgument("io op without a file");
    op->bytes = 0;
    return;
  }
  if (op->kind == IoOp::Kind::kRead) {
    op->status = PreadFull(op->file->fd(), op->file->path(), op->offset, op->len, op->buf, &done);
  } else {
    op->status = PwriteFull(op->file->fd(), op->file->path(), op->offset, op->len, op->buf, &done);
  }
  op->bytes = static_cast<uint32_t>(done);
}

Status PosixFile::Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) {
  return PreadFull(fd_, path_, offset, n, buf, bytes_read);
}

Status PosixFile::Write(uint64_t offset, Slice data) {
  size_t done = 0;
  return PwriteFull(fd_, path_, offset, data.size(), data.data(), &done);
}

Status PosixFile::Sync() {
  int r;
  do {
    r = ::fdatasync(fd_);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return Status::FromErrno(errno, Context("sync", path_));
  return Status::Ok();
}

Status PosixFile::Truncate(uint64_t size) {
  int r;
  do {
    r = ::ftruncate(fd_, static_cast<off_t>(size));
  } while (r < 0 && errno == EINTR);
  if (r < 0) return Status::FromErrno(errno, Context("truncate", path_));
  return Status::Ok();
}

Status PosixFile::Allocate(uint64_t offset, uint64_t len) {
  if (len == 0) return Status::Ok();
  int r;
  do {
    r = ::fallocate(fd_, 0, static_cast<off_t>(offset), static_cast<off_t>(len));
  } while (r < 0 && errno == EINTR);
  if (r == 0) return Status::Ok();
  if (errno != EOPNOTSUPP) return Status::FromErrno(errno, Context("allocate", path_));
  // Filesystems without fallocate (e.g. some network filesystems): glibc emulates by writing.
  // posix_fallocate returns the error number instead of setting errno.
  const int err = ::posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(len));
  if (err != 0) return Status::FromErrno(err, Context("allocate", path_));
  return Status::Ok();
}

StatusOr<uint64_t> PosixFile::Size() {
  struct stat st;
  if (::fstat(fd_, &st) < 0) return Status::FromErrno(errno, Context("stat", path_));
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace grove
