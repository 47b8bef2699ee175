#pragma once

// The LOCK file: an exclusive flock() on <data_dir>/LOCK for as long as a Db is open, so that two
// processes (or two Db objects in one process) never share a directory. The kernel drops the lock
// when the process dies, so a crash never leaves a stale lock behind.

#include <memory>
#include <string>

#include "grove/status.h"

namespace grove {

class LockFile {
 public:
  // Fails with kFailedPrecondition naming the directory when it is already locked.
  static StatusOr<std::unique_ptr<LockFile>> Acquire(const std::string& dir);
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace grove
