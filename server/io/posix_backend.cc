#include "io/posix_backend.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/posix_file.h"

namespace grove {

StatusOr<std::unique_ptr<File>> PosixBackend::OpenFile(const std::string& path,
                                                       const FileOptions& options) {
  return PosixFile::Open(path, options);
}

Status PosixBackend::DeleteFile(const std::string& path) {
  if (::unlink(path.c_str()) < 0) return Status::FromErrno(errno, "delete " + path);
  return Status::Ok();
}

Status PosixBackend::RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) < 0) {
    return Status::FromErrno(errno, "rename " + from + " -> " + to);
  }
  return Status::Ok();
}

Status PosixBackend::CreateDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0) return Status::Ok();
  const int err = errno;
  if (err != EEXIST) return Status::FromErrno(err, "mkdir " + path);
  // EEXIST is only fine when the existing thing is a directory.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
  return Status::FromErrno(ENOTDIR, "mkdir " + path);
}

Status PosixBackend::SyncDir(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno(errno, "syncdir " + path);
  Status s;
  if (::fsync(fd) < 0) s = Status::FromErrno(errno, "syncdir " + path);
  ::close(fd);
  return s;
}

StatusOr<std::vector<std::string>> PosixBackend::ListDir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return Status::FromErrno(errno, "listdir " + path);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      names.emplace_back(entry->d_name);
    }
    errno = 0;
  }
  const int err = errno;  // readdir signals errors only through errno
  ::closedir(dir);
  if (err != 0) return Status::FromErrno(err, "listdir " + path);
  std::sort(names.begin(), names.end());
  return names;
}

bool PosixBackend::FileExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace grove
