#include "engine/lock_file.h"

#include <cerrno>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

namespace grove {

StatusOr<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::FailedPrecondition(fmt::format(
          "data directory {} is in use by another Grove process (or another open Db)", dir));
    }
    return Status::FromErrno(err, "flock " + path);
  }
  return std::unique_ptr<LockFile>(new LockFile(fd));
}

LockFile::~LockFile() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace grove
